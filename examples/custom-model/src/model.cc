#include "model.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "taas/data/csv.h"
#include "taas/data/example.h"
#include "taas/data/idx_files.h"
#include "taas/data/tfrecord.h"
#include "taas/runtime/model_args.h"
#include "taas/tensor/initializers.h"

namespace custom_model {
namespace {

constexpr std::int64_t kPixels = 28 * 28;
constexpr std::int64_t kClasses = 10;

// The loss's statistics (SoftmaxCrossEntropy::Compute's) for a batch of `examples`, on the host.
absl::StatusOr<BatchStats> Read(const taas::Tensor& stats, std::int64_t examples) {
  taas::Tensor host({taas::nn::kLossStats});
  TAAS_RETURN_IF_ERROR(taas::CopyInto(stats, host));
  return BatchStats{host.data()[taas::nn::kLossMean],
                    static_cast<std::int64_t>(host.data()[taas::nn::kLossCorrect]), examples};
}

// A split of the data set ("train" or "test"), its labels checked against the classes.
absl::StatusOr<std::shared_ptr<const taas::data::ImageDataset>> LoadSplit(
    const std::string& dir, const std::string& split) {
  TAAS_ASSIGN_OR_RETURN(auto dataset, taas::data::LoadMnistSplit(dir, split));
  TAAS_RETURN_IF_ERROR(taas::data::CheckLabels(dataset, kClasses));
  return std::make_shared<const taas::data::ImageDataset>(std::move(dataset));
}

bool EndsWith(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// Each model replica of the job reads its own shard of the training set, shuffled and repeated,
// from memory (data::PipelineOptions) or from files (data::StreamOptions) alike.
template <typename InputOptions>
InputOptions TrainingInput(const Options& options, const taas::TrainerInfo& info) {
  InputOptions input;
  input.batch_size = options.batch_size;
  input.shuffle_buffer = 10000;
  input.seed = options.seed * 1000 + static_cast<std::uint64_t>(info.replica_id_in_sync());
  input.repeat = true;
  input.shard_index = info.replica_id_in_sync();
  input.num_shards = std::max(1, info.num_replicas_in_sync());
  input.device = info.device;  // batches go to the replica's device ahead of use
  return input;
}

// One pass over the test files in their order, in batches of 100.
absl::StatusOr<std::unique_ptr<taas::data::StreamPipeline>> OpenTestFiles(const Options& options) {
  taas::data::StreamOptions stream;
  stream.batch_size = 100;
  return OpenFiles(options.test_files, options, stream);
}

}  // namespace

absl::StatusOr<std::unique_ptr<taas::data::StreamPipeline>> OpenFiles(
    const std::vector<std::string>& files, const Options& options,
    taas::data::StreamOptions stream) {
  namespace data = taas::data;
  stream.example_shape = {kPixels};
  stream.decode_threads = options.decode_threads;
  const std::string first = files.empty() ? "" : files.front();
  if (EndsWith(first, ".tfrecord") || EndsWith(first, ".tfrecord.gz")) {
    data::ExampleSpec spec;
    spec.input_feature = options.input;
    spec.label_feature = options.label;
    spec.example_shape = {kPixels};
    spec.num_classes = kClasses;
    TAAS_ASSIGN_OR_RETURN(auto dataset, data::TfRecordDataset::Create(files));
    TAAS_ASSIGN_OR_RETURN(data::DecodeFn decode, data::MakeExampleDecoder(spec));
    return data::StreamPipeline::Create(std::move(dataset), std::move(decode), stream);
  }
  if (EndsWith(first, ".csv") || EndsWith(first, ".csv.gz")) {
    data::CsvSpec spec;
    spec.feature_columns = options.columns;
    if (spec.feature_columns.empty()) {
      for (std::int64_t p = 1; p <= kPixels; ++p) {
        spec.feature_columns.push_back("pixel" + std::to_string(p));
      }
    }
    spec.label_column = options.label;
    spec.num_classes = kClasses;
    TAAS_ASSIGN_OR_RETURN(auto dataset, data::CsvDataset::Create(files, spec));
    TAAS_ASSIGN_OR_RETURN(data::DecodeFn cells, data::MakeCsvDecoder(spec));
    const auto scale = static_cast<float>(options.csv_scale);
    data::DecodeFn decode =
        [cells, scale](std::string_view record) -> absl::StatusOr<data::DecodedExample> {
      TAAS_ASSIGN_OR_RETURN(data::DecodedExample example, cells(record));
      for (float& value : example.input) value *= scale;
      return example;
    };
    return data::StreamPipeline::Create(std::move(dataset), std::move(decode), stream);
  }
  return absl::InvalidArgumentError(
      "model arguments: --train_files/--test_files: \"" + first +
      "\" is neither TFRecord (*.tfrecord, *.tfrecord.gz) nor CSV (*.csv, *.csv.gz)");
}

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options options;
  std::int64_t seed = static_cast<std::int64_t>(options.seed);
  taas::flags::FlagSet flags;
  flags.Int("batch_size", 1, 1 << 16, &options.batch_size);
  flags.Int("hidden", 1, 1 << 14, &options.hidden);
  flags.Double("learning_rate", 1e-9, 10, &options.learning_rate);
  flags.Double("l2", 0, 1, &options.l2);
  flags.String("data_dir", &options.data_dir);
  flags.Int("seed", 0, std::int64_t{1} << 62, &seed);
  flags.List("train_files", &options.train_files);
  flags.List("test_files", &options.test_files);
  flags.String("input", &options.input);
  flags.String("label", &options.label);
  flags.List("columns", &options.columns);
  flags.Double("csv_scale", 1e-12, 1e12, &options.csv_scale);
  flags.Int("decode_threads", 1, 64, &options.decode_threads);
  TAAS_RETURN_IF_ERROR(taas::ParseModelArgs(flags, args));
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError(
        "model arguments: --data_dir: expected a folder, got nothing");
  }
  options.seed = static_cast<std::uint64_t>(seed);
  return options;
}

Network::Network(const Options& options) {
  namespace init = taas::initializers;
  using taas::nn::Dense;
  using taas::nn::DenseOptions;
  // Glorot-uniform kernels and zero biases (Keras's defaults), seeded so that every replica and
  // every run with the same --seed starts from the same weights.
  layers_.Add(std::make_unique<Dense>(DenseOptions{
      .name = "hidden",
      .inputs = kPixels,
      .units = options.hidden,
      .activation = taas::nn::Activation::kRelu,
      .kernel_initializer = init::GlorotUniform().WithSeed(options.seed * 2),
      .kernel_regularizer = taas::nn::regularizers::L2(static_cast<float>(options.l2))}));
  layers_.Add(std::make_unique<Dense>(DenseOptions{
      .name = "logits",
      .inputs = options.hidden,
      .units = kClasses,
      .kernel_initializer = init::GlorotUniform().WithSeed(options.seed * 2 + 1),
      .kernel_regularizer = taas::nn::regularizers::L2(static_cast<float>(options.l2))}));
}

absl::StatusOr<BatchStats> Network::TrainStep(const taas::data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const taas::Tensor* logits, layers_.Forward(batch.images, true));
  // The loss's statistics, the kernels' L2 penalty added (the layers add its gradient themselves).
  TAAS_ASSIGN_OR_RETURN(taas::Tensor * stats, loss_.Compute(*logits, batch.labels));
  TAAS_RETURN_IF_ERROR(layers_.AddRegularizationLoss(*stats));
  TAAS_RETURN_IF_ERROR(layers_.Backward(loss_.Backward()));
  return Read(*stats, batch.images.shape()[0]);
}

absl::StatusOr<BatchStats> Network::Evaluate(const taas::data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const taas::Tensor* logits, layers_.Forward(batch.images, false));
  TAAS_ASSIGN_OR_RETURN(taas::Tensor * stats, loss_.Compute(*logits, batch.labels));
  TAAS_RETURN_IF_ERROR(layers_.AddRegularizationLoss(*stats));
  return Read(*stats, batch.images.shape()[0]);
}

absl::StatusOr<const taas::Tensor*> Network::Logits(const taas::data::Batch& batch) {
  return layers_.Forward(batch.images, false);
}

absl::Status Model::build_model(taas::ModelBuilder& builder) {
  const taas::TrainerInfo& info = builder.info();
  TAAS_ASSIGN_OR_RETURN(options_, ParseArgs(info.args));
  network_ = std::make_unique<Network>(options_);
  builder.AddVariables(network_->variables());
  taas::optim::OptimizerConfig optimizer;
  optimizer.name = "sgd";
  optimizer.learning_rate.initial = options_.learning_rate;
  builder.SetOptimizer(optimizer);
  builder.SetBatchSize(options_.batch_size);

  if (info.predicting) return absl::OkStatus();  // predict_inputs opens what it is given
  if (info.role == taas::Role::kEvaluator) {
    // Test files are opened for each evaluation; the IDX test set is loaded once.
    if (!options_.test_files.empty()) return absl::OkStatus();
    TAAS_ASSIGN_OR_RETURN(test_, LoadSplit(options_.data_dir, "test"));
    return absl::OkStatus();
  }
  if (!options_.train_files.empty()) {
    // Your files, streamed (by file when there are at least as many files as replicas).
    TAAS_ASSIGN_OR_RETURN(train_,
                          OpenFiles(options_.train_files, options_,
                                    TrainingInput<taas::data::StreamOptions>(options_, info)));
    return absl::OkStatus();
  }
  TAAS_ASSIGN_OR_RETURN(auto train, LoadSplit(options_.data_dir, "train"));
  auto pipeline = TrainingInput<taas::data::PipelineOptions>(options_, info);
  pipeline.example_shape = {kPixels};
  TAAS_ASSIGN_OR_RETURN(train_, taas::data::Pipeline::Create(std::move(train), pipeline));
  return absl::OkStatus();
}

taas::StepResult Model::train(taas::Session&) {
  taas::StepResult result;
  // Repeating, so it never ends; a file's bad record is an error naming the file and the record.
  absl::StatusOr<std::optional<taas::data::Batch>> batch = train_->NextBatch();
  if (!batch.ok() || !batch->has_value()) {
    result.error = batch.ok() ? absl::InternalError("the training input ended") : batch.status();
    return result;
  }
  auto stats = network_->TrainStep(**batch);
  if (!stats.ok()) {
    result.error = stats.status();
    return result;
  }
  result.loss = stats->loss;
  result.examples = stats->examples;
  result.scalars["train_accuracy"] = static_cast<float>(stats->correct) /
                                     static_cast<float>(std::max<std::int64_t>(1, stats->examples));
  return result;
}

absl::StatusOr<std::map<std::string, double>> Model::evaluate(taas::Session&) {
  // An error here (no test set, a bad batch) is the job's: the runtime ends the chief with it and
  // names it in the job's result, rather than reporting success without metrics.
  const auto score =
      [this](const taas::data::Batch& batch) -> absl::StatusOr<taas::data::BatchMetrics> {
    TAAS_ASSIGN_OR_RETURN(const BatchStats stats, network_->Evaluate(batch));
    const double examples = static_cast<double>(stats.examples);
    return taas::data::BatchMetrics{{"accuracy", static_cast<double>(stats.correct) / examples},
                                    {"loss", static_cast<double>(stats.loss)}};
  };
  if (!options_.test_files.empty()) {
    TAAS_ASSIGN_OR_RETURN(auto stream, OpenTestFiles(options_));
    return taas::data::EvaluateStream(*stream, score);
  }
  if (test_ == nullptr) {  // on the chief (TAAS_EVAL_ON_CHIEF): the test set on first use
    TAAS_ASSIGN_OR_RETURN(test_, LoadSplit(options_.data_dir, "test"));
  }
  // One pass over the test set in batches of 100, so that an evaluation needs no more memory
  // than a training step; each metric is the mean over all its examples.
  taas::data::EvaluateOptions evaluation;
  evaluation.batch_size = 100;
  evaluation.example_shape = {kPixels};
  return taas::data::EvaluateInBatches(test_, evaluation, score);
}

absl::StatusOr<std::unique_ptr<taas::data::BatchStream>> Model::predict_inputs(
    taas::Session&, const taas::PredictRequest& request) {
  const std::string& first = request.inputs.front();
  if (EndsWith(first, ".tfrecord") || EndsWith(first, ".tfrecord.gz") || EndsWith(first, ".csv") ||
      EndsWith(first, ".csv.gz")) {
    taas::data::StreamOptions stream;
    stream.batch_size = request.batch_size;
    stream.device = request.device;
    return OpenFiles(request.inputs, options_, stream);
  }
  taas::data::PipelineOptions idx;
  idx.batch_size = request.batch_size;
  idx.example_shape = {kPixels};
  idx.device = request.device;
  return taas::data::OpenIdxImageFiles(request.inputs, idx);
}

absl::StatusOr<taas::PredictOutputs> Model::predict(taas::Session&,
                                                    const taas::data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const taas::Tensor* logits, network_->Logits(batch));
  return taas::PredictOutputs{*logits, true};  // a copy, on the batch's device
}

}  // namespace custom_model
