// Gradients fused into one buffer and all-reduced in place in buckets (PyTorch DDP's Reducer):
// many small tensors travel as a few large all-reduces (a message per tensor would pay the ring's
// latency per tensor), a tensor larger than a bucket is split across buckets, and no gradient is
// gathered into a send buffer, since the model's gradients are views of the fused buffer
// (Tensor::Slice). Each bucket is issued as soon as every tensor in it is final (TensorReady,
// while backward goes on), so early buckets travel while the model still computes; the caller
// then consumes the buckets in order (applies the optimizer to their pieces) while later ones
// are still on the wire.
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

// All-reduces, step after step, a fused buffer holding tensors of the planned sizes one after
// another from its first element. One step: Begin, TensorReady as tensors become final (any
// order, each at most once), Finish. Not thread-safe: one replica's thread drives it.
class BucketedAllReduce {
 public:
  BucketedAllReduce(std::vector<std::int64_t> tensor_sizes, std::int64_t bucket_bytes);

  // Starts a step over `buffer` (the fused buffer, in the memory `collective` takes: a device
  // group's device memory, else the host's), which must hold every planned element; nothing is
  // issued yet. InvalidArgument for a buffer too small.
  absl::Status Begin(Collective& collective, std::span<float> buffer, ReduceOp op);
  // Tensor `tensor` is final for this step: issues, in order, every bucket from the first not
  // yet issued whose tensors are all final, so every member issues the same buckets in the same
  // order whatever order its tensors became final in.
  void TensorReady(std::size_t tensor);
  // Issues the buckets not issued yet; then, bucket by bucket in order, orders the device's later
  // work after it (Collective::AwaitOnDevice) and calls `consume` for each of its pieces, whose
  // reduced elements are in the buffer at their place. Returns the first error (of an operation,
  // or of `consume`); after one, `consume` is not called again, but every operation issued is
  // still awaited, so the buffer may be reused when this returns.
  absl::Status Finish(const std::function<absl::Status(const BucketPiece&)>& consume);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Buckets issued during this step before Finish: those that overlapped the model's work.
  int issued_early() const { return issued_early_; }

 private:
  void IssueReadyPrefix();

  std::vector<std::int64_t> sizes_;
  std::vector<Bucket> buckets_;
  std::vector<std::int64_t> bucket_begin_;  // each bucket's first element in the buffer
  std::vector<std::size_t> last_tensor_;    // each bucket's last tensor
  // The step in progress.
  Collective* collective_ = nullptr;
  std::span<float> buffer_;
  ReduceOp op_ = ReduceOp::kMean;
  std::vector<bool> ready_;       // per tensor
  std::size_t ready_prefix_ = 0;  // tensors [0, ready_prefix_) are all final
  std::vector<Handle> handles_;   // one per bucket issued, in order
  int issued_early_ = 0;
};

}  // namespace taas::collective
