// The Fashion-MNIST models as trainer-runtime models (taas::DistModel): what the
// fashion-mnist-mlp and fashion-mnist-cnn example binaries run as PS, worker, chief or evaluator.
//
// Each model replica reads its shard of the training set (replica_id_in_sync of
// num_replicas_in_sync: the worker's rank, and under all-reduce its replica within the worker),
// shuffled and repeated, with batches prefetched on a thread. --batch_size is a worker's batch:
// its replicas take a slice each. evaluate() scores the variables on the 10,000 test images
// ("accuracy", "loss"), loaded on first use: the evaluator's every checkpoint, the chief's
// evaluations (TAAS_EVAL_ON_CHIEF) and its final test accuracy in after_train.
//
// Moving averages (the MLP's, TF's ExponentialMovingAverage with num_updates = global step) live
// on the parameter servers as variables "<name>/ExponentialMovingAverage", so checkpoints hold
// them and the evaluator scores the averaged weights, as TF's evaluation scripts did. The PS only
// applies the optimizer, so each worker pushes for a shadow s of variable w the "gradient"
// (1 - d) * (s - w) / lr, which plain SGD turns into s -= (1 - d) * (s - w); averages are
// therefore only kept with the "sgd" optimizer.
//
// Model arguments (after `--`): --batch_size=N (100), --eval_batch_size=N (evaluate()'s batches,
// Keras's evaluate(batch_size); 0, the default: --batch_size), --data_dir=DIR, --threads=N (0: the
// runtime's choice, TAAS_COMPUTE_THREADS), --seed=N, --optimizer=sgd|momentum|adam,
// --learning_rate=F,
// --moving_averages=true|false.
//
// From disk instead of the IDX files in memory (tfrecords.h; examples/fashion-mnist-tfrecord):
// --train_files=GLOB[,GLOB...] streams the training set from TFRecord files of tf.train.Examples
// (data::StreamPipeline: each replica's shard by file when there are as many files as replicas,
// else by record; the same shuffle buffer; batches prefetched onto the replica's device),
// --test_files=GLOB[,GLOB...] scores evaluate() on such files, --decode_threads=N (1) decodes
// records on N threads.
//
// `taas predict` (predict_inputs, predict) writes each image's 10 logits, its class and, when the
// IDX labels file is beside the images, its label.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "taas/data/batch.h"
#include "taas/fashion_mnist/models.h"
#include "taas/runtime/dist_model.h"

namespace taas::fashion_mnist {

// The chief's final test score (after_train): `metrics` logged as "final test accuracy" with
// `logger`'s fields, and reported as the job's result (the console, the TFJob's status, the web
// UI). An error is logged instead and the job keeps what it has: the score is the book's extra,
// not a reason to fail a trained job (TAAS_EVAL_ON_CHIEF's evaluations would have failed it).
void ReportFinalTestAccuracy(Session& session, const Logger& logger,
                             const absl::StatusOr<std::map<std::string, double>>& metrics);

class FashionMnistTrainer : public DistModel {
 public:
  explicit FashionMnistTrainer(std::string model_name) : model_name_(std::move(model_name)) {}

  absl::Status build_model(ModelBuilder& builder) override;
  StepResult train(Session& session) override;
  absl::StatusOr<std::map<std::string, double>> evaluate(Session& session) override;
  void after_train(Session& session, bool is_chief) override;
  // `taas predict`: the request's IDX image files (Fashion-MNIST's format; each file's labels, a
  // "-labels-idx1-ubyte" file beside it, when there is one), in order; the logits of the weights
  // evaluate() scores (the moving averages, when kept).
  absl::StatusOr<std::unique_ptr<data::BatchStream>> predict_inputs(
      Session& session, const PredictRequest& request) override;
  absl::StatusOr<PredictOutputs> predict(Session& session, const data::Batch& batch) override;

 private:
  absl::Status ParseArgs(const std::vector<std::string>& args);
  // The test set, loaded on first use.
  absl::Status LoadTestSet();
  // This replica's shard of the training set, shuffled, repeated and prefetched.
  absl::Status OpenTrainingInput(const TrainerInfo& info, std::int64_t replica_batch,
                                 const Logger& logger);
  void SwapAverages();

  std::string model_name_;
  std::int64_t batch_size_ = 100;
  std::int64_t eval_batch_size_ = 0;  // 0: batch_size_
  std::string data_dir_ = data::kFashionMnistDir;
  int threads_ = 0;
  std::uint64_t seed_ = 1;
  std::optional<std::string> optimizer_name_;
  std::optional<float> learning_rate_;
  bool moving_averages_ = true;
  std::vector<std::string> train_files_;  // empty: the IDX files of data_dir_
  std::vector<std::string> test_files_;
  int decode_threads_ = 1;

  std::unique_ptr<Model> model_;
  std::unique_ptr<data::BatchStream> input_;  // the IDX Pipeline or a StreamPipeline
  std::optional<data::Batch> batch_;          // the batch of the running step
  std::shared_ptr<const data::ImageDataset> test_;
  float average_decay_ = 0.0f;
  std::deque<Variable> shadows_;  // deque: registered addresses never move
  std::vector<Variable*> averaged_;
};

}  // namespace taas::fashion_mnist
