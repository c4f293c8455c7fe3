// What a model's training step takes: a batch of inputs and their class labels, and the one
// interface every input pipeline gives batches through, so a model reads the in-memory Pipeline
// (pipeline.h) and a stream from disk (stream_pipeline.h) with the same code, whichever engine it
// runs (the built-in layers take `images`; a LibTorch model wraps its memory with from_blob).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"

namespace taas::data {

struct Batch {
  Tensor images;                     // [batch, example_shape...], on the pipeline's device
  std::vector<std::int32_t> labels;  // batch, on the host
  std::int64_t epoch = 0;            // epoch of the batch's first example
  // Float targets for a regression, batch x target_elements in row-major order, on the host;
  // empty when the examples are classes (labels). Last and defaulted, so that code building a
  // Batch from its first three members is unchanged.
  std::vector<float> targets = {};
};

// A source of batches. Called from one thread; implementations say whether they block.
class BatchStream {
 public:
  virtual ~BatchStream() = default;

  // The next batch; nullopt when a non-repeating stream is done. An error (a corrupt record, a
  // failing device) names where it happened, and the stream is done after it.
  virtual absl::StatusOr<std::optional<Batch>> NextBatch() = 0;
};

}  // namespace taas::data
