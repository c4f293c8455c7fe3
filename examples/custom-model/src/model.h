// custom-model: a small classifier on Fashion-MNIST (784-128-10, ReLU, softmax cross-entropy,
// SGD), written against the installed taas SDK. Replace the network and the data with yours: the
// runtime only needs build_model() to register the variables and train() to write their
// gradients (taas/runtime/dist_model.h).
//
// The data: Fashion-MNIST's IDX files in memory by default; your own files with --train_files and
// --test_files (job.yaml shows both), streamed from disk by taas's stream pipeline
// (taas/data/stream_pipeline.h: each replica's shard, a shuffle buffer, batches prefetched), as
// TFRecord files of tf.train.Examples or CSV files with a header row.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "taas/data/batch.h"
#include "taas/data/evaluate.h"
#include "taas/data/pipeline.h"
#include "taas/data/stream_pipeline.h"
#include "taas/nn/layers.h"
#include "taas/nn/sequential.h"
#include "taas/nn/softmax_cross_entropy.h"
#include "taas/runtime/dist_model.h"

namespace custom_model {

// The model's own arguments: what follows `--` in the manifest's `args` (or on the command line).
struct Options {
  std::int64_t batch_size = 64;  // --batch_size=N: examples per train() call
  std::int64_t hidden = 128;     // --hidden=N: units of the hidden layer
  double learning_rate = 0.1;    // --learning_rate=X
  double l2 = 0.0;  // --l2=X: the kernels' L2 penalty (Keras's kernel_regularizer=l2(X))
  std::string data_dir = taas::data::kFashionMnistDir;  // --data_dir=DIR: the IDX .gz files
  std::uint64_t seed = 1;                               // --seed=N: initial weights and shuffling
  // --train_files=GLOB[,GLOB...], --test_files=...: read these instead of data_dir's IDX files.
  // TFRecord files (*.tfrecord, *.tfrecord.gz) of tf.train.Examples, or CSV files (*.csv,
  // *.csv.gz) whose first row names the columns; each example 784 inputs and a class 0-9.
  std::vector<std::string> train_files;
  std::vector<std::string> test_files;
  std::string input = "image_raw";  // --input=NAME: the Examples' input feature: 784 bytes of
                                    // pixels (times 1/255) or a float_list of 784
  std::string label = "label";      // --label=NAME: the feature or column holding the class
  // --columns=A,B,...: the CSV's input columns, in order; default pixel1 ... pixel784 (the
  // Fashion-MNIST CSV files' names).
  std::vector<std::string> columns;
  double csv_scale = 1.0 / 255.0;  // --csv_scale=X: every CSV input times X (pixels 0-255)
  int decode_threads = 1;          // --decode_threads=N: records decoded on N threads
};

// With taas's flag parser (taas/runtime/model_args.h): InvalidArgument naming the argument and
// its allowed values for anything else.
absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args);

// A stream of the examples in `files` (TFRecord or CSV, told from the first name's ending), read
// as `options` say, in batches as `stream` says (batch size, shard, shuffle, repeat, device);
// example_shape is set here. InvalidArgument for names that are neither; the readers' errors
// (a pattern matching no file) otherwise. A bad record is an error of NextBatch naming the file,
// the record and its byte offset.
absl::StatusOr<std::unique_ptr<taas::data::StreamPipeline>> OpenFiles(
    const std::vector<std::string>& files, const Options& options,
    taas::data::StreamOptions stream);

struct BatchStats {
  float loss = 0.0f;
  std::int64_t correct = 0;
  std::int64_t examples = 0;
};

// The layers, apart from the runtime so a unit test can train them on a batch of its own.
class Network {
 public:
  explicit Network(const Options& options);
  // Kernels and biases, with unique names ("hidden/kernel", ...).
  std::vector<taas::Variable*> variables() { return layers_.variables(); }
  // Forward and backward: overwrites every variable's gradient.
  absl::StatusOr<BatchStats> TrainStep(const taas::data::Batch& batch);
  // Forward only, in inference mode.
  absl::StatusOr<BatchStats> Evaluate(const taas::data::Batch& batch);
  // The batch's [batch, 10] logits, in inference mode, on the batch's device.
  absl::StatusOr<const taas::Tensor*> Logits(const taas::data::Batch& batch);

 private:
  taas::nn::Sequential layers_;
  taas::nn::SoftmaxCrossEntropy loss_;
};

// The DistModel the runtime drives: the same binary is a parameter server, worker, chief or
// evaluator, as TF_CONFIG says.
class Model final : public taas::DistModel {
 public:
  absl::Status build_model(taas::ModelBuilder& builder) override;
  taas::StepResult train(taas::Session& session) override;
  // Accuracy and loss on the test set: on the Evaluator replica for each checkpoint, and on the
  // chief when TAAS_EVAL_ON_CHIEF asks (job.yaml: once training ends).
  // A failure (no test set in --data_dir) is returned: the job ends with it named.
  absl::StatusOr<std::map<std::string, double>> evaluate(taas::Session& session) override;
  // `taas predict JOB.yaml --model-dir DIR --input FILES --output OUT.csv`: the checkpoint's
  // logits and class for each example of FILES, TFRecord or CSV files read as --test_files are
  // (with their labels), or IDX image files (with the labels file beside each, when there is
  // one); the labels are written beside the predictions.
  absl::StatusOr<std::unique_ptr<taas::data::BatchStream>> predict_inputs(
      taas::Session& session, const taas::PredictRequest& request) override;
  absl::StatusOr<taas::PredictOutputs> predict(taas::Session& session,
                                               const taas::data::Batch& batch) override;

 private:
  Options options_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<taas::data::BatchStream> train_;  // IDX in memory or files from disk
  std::shared_ptr<const taas::data::ImageDataset> test_;
};

}  // namespace custom_model
