// Single-process training of a Fashion-MNIST model: the pipeline, the optimizer applied in place
// (as a parameter server would), optional moving averages for evaluation, and test accuracy.
// Used by the benchmark and by the quick training test.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "taas/data/batch.h"
#include "taas/data/idx.h"
#include "taas/fashion_mnist/models.h"

namespace taas::fashion_mnist {

struct LocalTrainingOptions {
  std::int64_t batch_size = 100;
  std::int64_t steps = 1000;
  std::int64_t shuffle_buffer = 10000;
  std::uint64_t seed = 1;
  // oneDNN threads for this thread's calls (nn::SetComputeThreads); 0 keeps the current setting.
  int threads = 0;
  // The model's DefaultOptimizer when unset.
  std::optional<optim::OptimizerConfig> optimizer;
  // Use the model's moving averages (if it has any) for the test evaluation.
  bool use_moving_averages = true;
  // Called every `log_every` steps with the step and the mean stats since the last call.
  std::int64_t log_every = 0;
  std::function<void(std::int64_t, const BatchStats&)> on_log;
};

struct LocalTrainingResult {
  std::int64_t steps = 0;
  std::int64_t examples = 0;
  double seconds = 0.0;  // training only, evaluation excluded
  double examples_per_second = 0.0;
  float first_loss = 0.0f;           // mean over the first min(50, steps) steps
  float last_loss = 0.0f;            // mean over the last min(50, steps) steps
  double train_accuracy_last = 0.0;  // over the same last steps
  double test_accuracy = 0.0;        // -1 when no test set was given
  float test_loss = 0.0f;
};

absl::StatusOr<LocalTrainingResult> TrainLocally(Model& model,
                                                 std::shared_ptr<const data::ImageDataset> train,
                                                 std::shared_ptr<const data::ImageDataset> test,
                                                 const LocalTrainingOptions& options);
// The same from the batches `train` gives (a repeating stream, e.g. TFRecord files through
// data::StreamPipeline, which shuffles by its own options: shuffle_buffer is not read);
// `train_examples` is an epoch's size, which with options.batch_size (the stream's) sets the
// optimizer's decay. A stream's error ends the training and is returned as it is.
absl::StatusOr<LocalTrainingResult> TrainLocally(Model& model, data::BatchStream& train,
                                                 std::int64_t train_examples,
                                                 std::shared_ptr<const data::ImageDataset> test,
                                                 const LocalTrainingOptions& options);

// "accuracy" and "loss" (the mean) of `model` over the whole of `dataset`, one pass in batches
// of `batch_size` put on `device`, the one the model's variables are on (data::EvaluateInBatches:
// small batches keep an evaluation's memory to a training step's).
absl::StatusOr<std::map<std::string, double>> EvaluateDataset(
    Model& model, std::shared_ptr<const data::ImageDataset> dataset, std::int64_t batch_size = 100,
    Device device = Device::Cpu());
// The same over every batch of a non-repeating `stream` (a test set on disk:
// data::EvaluateStream).
absl::StatusOr<std::map<std::string, double>> EvaluateStream(Model& model,
                                                             data::BatchStream& stream);

}  // namespace taas::fashion_mnist
