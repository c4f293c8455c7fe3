// Scoring a data set once, in batches: what Keras's model.evaluate(x, y, batch_size=N) does, for
// a DistModel's evaluate(). A non-repeating, unshuffled pass over every example in batches of N
// (the last one smaller), each batch scored by the model, and each metric averaged over the
// examples: a batch's mean loss counts as many times as the batch has examples, so the result is
// the mean over the whole set whatever N is.
//
//   data::EvaluateOptions options;
//   options.batch_size = 100;
//   options.example_shape = {784};
//   return data::EvaluateInBatches(test_, options, [&](const data::Batch& batch)
//       -> absl::StatusOr<data::BatchMetrics> {
//     TAAS_ASSIGN_OR_RETURN(BatchStats stats, network_->Evaluate(batch));
//     return data::BatchMetrics{{"accuracy", stats.correct / double(stats.examples)},
//                               {"loss", stats.loss}};
//   });
//
// Small batches keep the memory an evaluation needs to that of a training step (one batch of
// 10,000 Fashion-MNIST images raised a chief's peak RSS from 105 to 160 MB).
//
// A test set on disk is scored the same way from a non-repeating, unshuffled stream
// (stream_pipeline.h) with EvaluateStream.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "taas/base/status.h"
#include "taas/data/batch.h"
#include "taas/data/pipeline.h"
#include "taas/data/split.h"

namespace taas::data {

struct EvaluateOptions {
  std::int64_t batch_size = 100;  // examples per batch; the last batch holds what is left
  Shape example_shape = {};       // as PipelineOptions::example_shape
  Device device = Device::Cpu();  // where the batches' images go (the model's device)
  int prefetch = 2;               // batches prepared ahead on a thread
};

// What the model scored on one batch: each metric's mean over the batch's examples
// ({"accuracy": 0.92, "loss": 0.25}).
using BatchMetrics = std::map<std::string, double>;
using ScoreBatch = std::function<absl::StatusOr<BatchMetrics>(const Batch& batch)>;

// Every example of `dataset` (or `view`) once, in order, in batches of options.batch_size, each
// given to `score`; returns each metric's mean over all examples. Errors: the pipeline's
// InvalidArgument for bad options; InvalidArgument for a data set without examples, or when a
// batch returns other metric names than the first ("evaluation: batch 3 (examples 200-299)
// returned accuracy, the first batch accuracy, loss"); `score`'s error with the batch named
// ("evaluation: batch 3 (examples 200-299): <its message>", same code); Internal when copying
// a batch to options.device threw. Nothing is thrown.
absl::StatusOr<std::map<std::string, double>> EvaluateInBatches(
    std::shared_ptr<const ImageDataset> dataset, const EvaluateOptions& options,
    const ScoreBatch& score);
absl::StatusOr<std::map<std::string, double>> EvaluateInBatches(DatasetView view,
                                                                const EvaluateOptions& options,
                                                                const ScoreBatch& score);

// Every batch `stream` gives until it ends, each given to `score`, each metric averaged over all
// the examples, as EvaluateInBatches does: the stream should not repeat (a repeating one never
// ends). Errors: the stream's own (a corrupt record, named by its file and offset) with the
// batch named ("evaluation: batch 3 (from example 200): <its message>", same code);
// InvalidArgument for a stream that gives no example; `score`'s errors as above.
absl::StatusOr<std::map<std::string, double>> EvaluateStream(BatchStream& stream,
                                                             const ScoreBatch& score);

}  // namespace taas::data
