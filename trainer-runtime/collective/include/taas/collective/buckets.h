// Gradients fused into buckets: many small tensors travel as a few large all-reduces (a message
// per tensor would pay the ring's latency per tensor), and a tensor larger than a bucket is split
// across buckets. Buckets are issued one after another without waiting, so one travels while the
// next is being copied in, and the caller consumes each reduced bucket (applies the optimizer to
// its pieces) while the later ones are still on the wire.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "taas/collective/collective.h"

namespace taas::collective {

// A run of one tensor's elements inside a bucket.
struct BucketPiece {
  std::size_t tensor = 0;          // index into the tensors planned
  std::int64_t tensor_offset = 0;  // first element within the tensor
  std::int64_t bucket_offset = 0;  // first element within the bucket
  std::int64_t size = 0;           // elements
};

struct Bucket {
  std::vector<BucketPiece> pieces;
  std::int64_t size = 0;  // elements
};

// Packs tensors of `tensor_sizes` elements, in order, into buckets of at most `bucket_elements`
// (at least 1) elements; only the last bucket may be smaller than the limit. Pure.
std::vector<Bucket> PlanBuckets(std::span<const std::int64_t> tensor_sizes,
                                std::int64_t bucket_elements);

// All-reduces a fixed list of tensors through buckets; keeps the bucket buffers between calls.
class BucketedAllReduce {
 public:
  BucketedAllReduce(std::vector<std::int64_t> tensor_sizes, std::int64_t bucket_bytes);

  // Reduces `tensors` (their sizes as planned) with `op`. For each bucket in order, once it is
  // reduced, calls `consume(piece, reduced)` for each of its pieces with the piece's reduced
  // elements; `tensors` themselves are read, never written. On error, `consume` is not called for
  // the failed bucket or any later one.
  absl::Status Run(Collective& collective, std::span<const std::span<const float>> tensors,
                   ReduceOp op,
                   const std::function<void(const BucketPiece&, std::span<const float>)>& consume);

  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  std::vector<std::int64_t> sizes_;
  std::vector<Bucket> buckets_;
  std::vector<std::vector<float>> buffers_;  // one per bucket
};

}  // namespace taas::collective
