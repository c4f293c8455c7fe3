#include "model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "taas/tensor/initializers.h"

namespace custom_model {
namespace {

constexpr std::int64_t kPixels = 28 * 28;
constexpr std::int64_t kClasses = 10;

absl::Status BadArg(const std::string& arg, const std::string& rule) {
  return absl::InvalidArgumentError("model argument " + arg + ": " + rule);
}

// An integer written in full within [min, max].
absl::StatusOr<std::int64_t> IntArg(const std::string& arg, const std::string& value,
                                    std::int64_t min, std::int64_t max) {
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || out < min ||
      out > max) {
    return BadArg(
        arg, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return out;
}

// A split of the data set ("train" or "test"), its labels checked against the classes.
absl::StatusOr<std::shared_ptr<const taas::data::ImageDataset>> LoadSplit(
    const std::string& dir, const std::string& split) {
  TAAS_ASSIGN_OR_RETURN(auto dataset, taas::data::LoadMnistSplit(dir, split));
  TAAS_RETURN_IF_ERROR(taas::data::CheckLabels(dataset, kClasses));
  return std::make_shared<const taas::data::ImageDataset>(std::move(dataset));
}

}  // namespace

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options options;
  for (const std::string& arg : args) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos) return BadArg(arg, "must be --name=value");
    const std::string key = arg.substr(0, eq);
    const std::string value = arg.substr(eq + 1);
    if (key == "--batch_size") {
      TAAS_ASSIGN_OR_RETURN(options.batch_size, IntArg(arg, value, 1, 1 << 16));
    } else if (key == "--hidden") {
      TAAS_ASSIGN_OR_RETURN(options.hidden, IntArg(arg, value, 1, 1 << 14));
    } else if (key == "--seed") {
      TAAS_ASSIGN_OR_RETURN(const std::int64_t seed, IntArg(arg, value, 0, 1LL << 62));
      options.seed = static_cast<std::uint64_t>(seed);
    } else if (key == "--learning_rate") {
      char* end = nullptr;
      const double rate = std::strtod(value.c_str(), &end);
      if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(rate) ||
          rate <= 0 || rate > 10) {
        return BadArg(arg, "must be a number in (0, 10]");
      }
      options.learning_rate = static_cast<float>(rate);
    } else if (key == "--data_dir") {
      if (value.empty()) return BadArg(arg, "must name a folder");
      options.data_dir = value;
    } else {
      return BadArg(arg,
                    "unknown (known: --batch_size, --hidden, --learning_rate, --data_dir, "
                    "--seed)");
    }
  }
  return options;
}

Network::Network(const Options& options) {
  namespace init = taas::initializers;
  using taas::nn::Dense;
  using taas::nn::DenseOptions;
  // Glorot-uniform kernels and zero biases (Keras's defaults), seeded so that every replica and
  // every run with the same --seed starts from the same weights.
  layers_.Add(std::make_unique<Dense>(
      DenseOptions{.name = "hidden",
                   .inputs = kPixels,
                   .units = options.hidden,
                   .activation = taas::nn::Activation::kRelu,
                   .kernel_initializer = init::GlorotUniform().WithSeed(options.seed * 2)}));
  layers_.Add(std::make_unique<Dense>(
      DenseOptions{.name = "logits",
                   .inputs = options.hidden,
                   .units = kClasses,
                   .kernel_initializer = init::GlorotUniform().WithSeed(options.seed * 2 + 1)}));
}

absl::StatusOr<BatchStats> Network::TrainStep(const taas::data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const taas::Tensor* logits, layers_.Forward(batch.images, true));
  TAAS_ASSIGN_OR_RETURN(const auto result, loss_.Forward(*logits, batch.labels));
  TAAS_RETURN_IF_ERROR(layers_.Backward(loss_.Backward()));
  return BatchStats{result.loss, result.correct, batch.images.shape()[0]};
}

absl::StatusOr<BatchStats> Network::Evaluate(const taas::data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const taas::Tensor* logits, layers_.Forward(batch.images, false));
  TAAS_ASSIGN_OR_RETURN(const auto result, loss_.Forward(*logits, batch.labels));
  return BatchStats{result.loss, result.correct, batch.images.shape()[0]};
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

  if (info.role == taas::Role::kEvaluator) {
    TAAS_ASSIGN_OR_RETURN(test_, LoadSplit(options_.data_dir, "test"));
    return absl::OkStatus();
  }
  TAAS_ASSIGN_OR_RETURN(auto train, LoadSplit(options_.data_dir, "train"));
  // Each model replica of the job reads its own shard of the training set.
  taas::data::PipelineOptions pipeline;
  pipeline.batch_size = options_.batch_size;
  pipeline.shuffle_buffer = 10000;
  pipeline.seed = options_.seed * 1000 + static_cast<std::uint64_t>(info.replica_id_in_sync());
  pipeline.repeat = true;
  pipeline.shard_index = info.replica_id_in_sync();
  pipeline.num_shards = std::max(1, info.num_replicas_in_sync());
  pipeline.example_shape = {kPixels};
  TAAS_ASSIGN_OR_RETURN(train_, taas::data::Pipeline::Create(std::move(train), pipeline));
  return absl::OkStatus();
}

taas::StepResult Model::train(taas::Session&) {
  const std::optional<taas::data::Batch> batch = train_->Next();  // repeating: never ends
  taas::StepResult result;
  auto stats = network_->TrainStep(*batch);
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

std::map<std::string, double> Model::evaluate(taas::Session& session) {
  if (test_ == nullptr) {  // on the chief (TAAS_EVAL_ON_CHIEF): the test set on first use
    auto test = LoadSplit(options_.data_dir, "test");
    if (!test.ok()) {
      session.logger().Error("evaluation failed",
                             {{"error", std::string(test.status().message())}});
      return {};
    }
    test_ = *std::move(test);
  }
  taas::data::PipelineOptions pipeline;
  pipeline.batch_size = 1000;
  pipeline.example_shape = {kPixels};
  auto batches = taas::data::Pipeline::Create(test_, pipeline);
  if (!batches.ok()) {
    session.logger().Error("evaluation failed",
                           {{"error", std::string(batches.status().message())}});
    return {};
  }
  double loss = 0.0;
  std::int64_t correct = 0, examples = 0;
  while (std::optional<taas::data::Batch> batch = (*batches)->Next()) {
    auto stats = network_->Evaluate(*batch);
    if (!stats.ok()) {
      session.logger().Error("evaluation failed",
                             {{"error", std::string(stats.status().message())}});
      return {};
    }
    loss += static_cast<double>(stats->loss) * static_cast<double>(stats->examples);
    correct += stats->correct;
    examples += stats->examples;
  }
  if (examples == 0) return {};
  return {{"accuracy", static_cast<double>(correct) / static_cast<double>(examples)},
          {"loss", loss / static_cast<double>(examples)}};
}

}  // namespace custom_model
