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
  std::int64_t begin = 0;
  for (const Bucket& bucket : buckets_) {
    bucket_begin_.push_back(begin);
    last_tensor_.push_back(bucket.pieces.back().tensor);
    begin += bucket.size;
  }
}

absl::Status BucketedAllReduce::Begin(Collective& collective, std::span<float> buffer,
                                      ReduceOp op) {
  std::int64_t total = 0;
  for (std::int64_t size : sizes_) total += size;
  if (static_cast<std::int64_t>(buffer.size()) < total) {
    return absl::InvalidArgumentError("bucketed all-reduce planned for " + std::to_string(total) +
                                      " elements, given a buffer of " +
                                      std::to_string(buffer.size()));
  }
  collective_ = &collective;
  buffer_ = buffer;
  op_ = op;
  handles_.clear();
  issued_early_ = 0;
  // A tensor without elements is in no bucket: final from the start.
  ready_.assign(sizes_.size(), false);
  for (std::size_t t = 0; t < sizes_.size(); ++t) ready_[t] = sizes_[t] == 0;
  ready_prefix_ = 0;
  while (ready_prefix_ < ready_.size() && ready_[ready_prefix_]) ++ready_prefix_;
  return absl::OkStatus();
}

void BucketedAllReduce::TensorReady(std::size_t tensor) {
  if (collective_ == nullptr || tensor >= ready_.size() || ready_[tensor]) return;
  ready_[tensor] = true;
  while (ready_prefix_ < ready_.size() && ready_[ready_prefix_]) ++ready_prefix_;
  const std::size_t before = handles_.size();
  IssueReadyPrefix();
  issued_early_ += static_cast<int>(handles_.size() - before);
}

void BucketedAllReduce::IssueReadyPrefix() {
  for (std::size_t b = handles_.size(); b < buckets_.size() && last_tensor_[b] < ready_prefix_;
       ++b) {
    const auto begin = static_cast<std::size_t>(bucket_begin_[b]);
    const auto size = static_cast<std::size_t>(buckets_[b].size);
    handles_.push_back(collective_->AllReduce(buffer_.subspan(begin, size), op_));
  }
}

absl::Status BucketedAllReduce::Finish(
    const std::function<absl::Status(const BucketPiece&)>& consume) {
  if (collective_ == nullptr) return absl::FailedPreconditionError("Finish without Begin");
  ready_prefix_ = ready_.size();
  IssueReadyPrefix();
  absl::Status first_error;
  for (std::size_t b = 0; b < handles_.size(); ++b) {
    // Every operation is awaited, even after an error: the buffer must outlive them.
    absl::Status status = collective_->AwaitOnDevice(handles_[b]);
    if (first_error.ok()) first_error = status;
    if (!first_error.ok()) continue;
    for (const BucketPiece& piece : buckets_[b].pieces) {
      first_error = consume(piece);
      if (!first_error.ok()) break;
    }
  }
  collective_ = nullptr;
  return first_error;
}

}  // namespace taas::collective
