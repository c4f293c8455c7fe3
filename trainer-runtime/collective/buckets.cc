#include "taas/collective/buckets.h"

#include <algorithm>
#include <string>

namespace taas::collective {

std::vector<Bucket> PlanBuckets(std::span<const std::int64_t> tensor_sizes,
                                std::int64_t bucket_elements) {
  bucket_elements = std::max<std::int64_t>(bucket_elements, 1);
  std::vector<Bucket> buckets;
  for (std::size_t t = 0; t < tensor_sizes.size(); ++t) {
    std::int64_t offset = 0;
    while (offset < tensor_sizes[t]) {
      if (buckets.empty() || buckets.back().size == bucket_elements) buckets.emplace_back();
      Bucket& bucket = buckets.back();
      const std::int64_t size = std::min(tensor_sizes[t] - offset, bucket_elements - bucket.size);
      bucket.pieces.push_back({t, offset, bucket.size, size});
      bucket.size += size;
      offset += size;
    }
  }
  return buckets;
}

BucketedAllReduce::BucketedAllReduce(std::vector<std::int64_t> tensor_sizes,
                                     std::int64_t bucket_bytes)
    : sizes_(std::move(tensor_sizes)),
      buckets_(PlanBuckets(sizes_, bucket_bytes / static_cast<std::int64_t>(sizeof(float)))) {
  for (const Bucket& bucket : buckets_)
    buffers_.emplace_back(static_cast<std::size_t>(bucket.size));
}

absl::Status BucketedAllReduce::Run(
    Collective& collective, std::span<const std::span<const float>> tensors, ReduceOp op,
    const std::function<void(const BucketPiece&, std::span<const float>)>& consume) {
  if (tensors.size() != sizes_.size()) {
    return absl::InvalidArgumentError("bucketed all-reduce planned for " +
                                      std::to_string(sizes_.size()) + " tensors, given " +
                                      std::to_string(tensors.size()));
  }
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    if (static_cast<std::int64_t>(tensors[t].size()) != sizes_[t]) {
      return absl::InvalidArgumentError("bucketed all-reduce: tensor " + std::to_string(t) +
                                        " has " + std::to_string(tensors[t].size()) +
                                        " elements, planned " + std::to_string(sizes_[t]));
    }
  }
  std::vector<Handle> handles;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    float* buffer = buffers_[b].data();
    for (const BucketPiece& piece : buckets_[b].pieces) {
      const auto source = tensors[piece.tensor].subspan(
          static_cast<std::size_t>(piece.tensor_offset), static_cast<std::size_t>(piece.size));
      std::copy(source.begin(), source.end(), buffer + piece.bucket_offset);
    }
    handles.push_back(collective.AllReduce(buffers_[b], op));
  }
  absl::Status first_error;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    // Every handle is waited for, even after an error: the buffers must outlive the operations.
    absl::Status status = handles[b].Wait();
    if (first_error.ok()) first_error = status;
    if (!first_error.ok()) continue;
    const std::span<const float> reduced = buffers_[b];
    for (const BucketPiece& piece : buckets_[b].pieces) {
      consume(piece, reduced.subspan(static_cast<std::size_t>(piece.bucket_offset),
                                     static_cast<std::size_t>(piece.size)));
    }
  }
  return first_error;
}

}  // namespace taas::collective
