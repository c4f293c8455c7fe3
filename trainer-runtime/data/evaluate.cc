#include "taas/data/evaluate.h"

#include <optional>
#include <utility>

namespace taas::data {
namespace {

std::string Names(const BatchMetrics& metrics) {
  std::string names;
  for (const auto& [name, value] : metrics) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "nothing" : names;
}

// "batch 3 (examples 200-299)", counting from 1 as a reader does.
std::string BatchName(std::int64_t index, std::int64_t first, std::int64_t size) {
  return "batch " + std::to_string(index + 1) + " (examples " + std::to_string(first) + "-" +
         std::to_string(first + size - 1) + ")";
}

}  // namespace

absl::StatusOr<std::map<std::string, double>> EvaluateInBatches(
    std::shared_ptr<const ImageDataset> dataset, const EvaluateOptions& options,
    const ScoreBatch& score) {
  TAAS_ASSIGN_OR_RETURN(DatasetView view, ViewOf(std::move(dataset)));
  return EvaluateInBatches(std::move(view), options, score);
}

absl::StatusOr<std::map<std::string, double>> EvaluateInBatches(DatasetView view,
                                                                const EvaluateOptions& options,
                                                                const ScoreBatch& score) {
  if (view.size() == 0) {
    return absl::InvalidArgumentError("evaluation: the data set has no examples to score");
  }
  PipelineOptions pipeline_options;
  pipeline_options.batch_size = options.batch_size;
  pipeline_options.example_shape = options.example_shape;
  pipeline_options.device = options.device;
  pipeline_options.prefetch = options.prefetch;
  // One pass in the data set's order: no shuffle, no repeat, the last batch kept.
  TAAS_ASSIGN_OR_RETURN(auto pipeline, Pipeline::Create(std::move(view), pipeline_options));
  return EvaluateStream(*pipeline, score);
}

absl::StatusOr<std::map<std::string, double>> EvaluateStream(BatchStream& stream,
                                                             const ScoreBatch& score) {
  std::map<std::string, double> sums;  // each metric's sum over the examples
  std::optional<BatchMetrics> first;
  std::int64_t examples = 0;
  for (std::int64_t index = 0;; ++index) {
    absl::StatusOr<std::optional<Batch>> batch = stream.NextBatch();
    if (!batch.ok()) {
      return absl::Status(batch.status().code(), "evaluation: batch " + std::to_string(index + 1) +
                                                     " (from example " + std::to_string(examples) +
                                                     "): " + std::string(batch.status().message()));
    }
    if (!batch->has_value()) break;
    const Batch& ready = **batch;
    const std::int64_t size = ready.images.shape()[0];
    absl::StatusOr<BatchMetrics> scored = score(ready);
    if (!scored.ok()) {
      return absl::Status(scored.status().code(),
                          "evaluation: " + BatchName(index, examples, size) + ": " +
                              std::string(scored.status().message()));
    }
    if (!first) first = *scored;
    bool same = scored->size() == first->size();
    for (auto it = scored->begin(), f = first->begin(); same && it != scored->end(); ++it, ++f) {
      same = it->first == f->first;
    }
    if (!same) {
      return absl::InvalidArgumentError("evaluation: " + BatchName(index, examples, size) +
                                        " returned " + Names(*scored) + ", the first batch " +
                                        Names(*first));
    }
    for (const auto& [name, mean] : *scored) sums[name] += mean * static_cast<double>(size);
    examples += size;
  }
  if (examples == 0) {
    return absl::InvalidArgumentError("evaluation: the stream gave no examples to score");
  }
  for (auto& [name, sum] : sums) sum /= static_cast<double>(examples);
  return sums;
}

}  // namespace taas::data
