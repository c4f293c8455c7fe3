#include "model.h"

#include <torch/torch.h>

#include <algorithm>
#include <utility>

#include "taas/data/idx_files.h"
#include "taas/runtime/model_args.h"
#include "taas/tensor/device.h"

namespace custom_model {
namespace {

constexpr std::int64_t kClasses = 10;

// A split of the data set ("train" or "test"), its labels checked against the classes.
absl::StatusOr<std::shared_ptr<const taas::data::ImageDataset>> LoadSplit(
    const std::string& dir, const std::string& split) {
  TAAS_ASSIGN_OR_RETURN(auto dataset, taas::data::LoadMnistSplit(dir, split));
  TAAS_RETURN_IF_ERROR(taas::data::CheckLabels(dataset, kClasses));
  return std::make_shared<const taas::data::ImageDataset>(std::move(dataset));
}

// A batch's images as a tensor on `device` without a copy: the pipeline's [n, 28, 28, 1] is the
// same memory as [n, 1, 28, 28].
torch::Tensor Images(taas::data::Batch& batch, torch::Device device) {
  return torch::from_blob(batch.images.data(), {batch.images.shape()[0], 1, 28, 28},
                          torch::TensorOptions().dtype(torch::kFloat32).device(device));
}

torch::Tensor Labels(const std::vector<std::int32_t>& labels, torch::Device device) {
  return torch::tensor(std::vector<std::int64_t>(labels.begin(), labels.end())).to(device);
}

}  // namespace

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options options;
  std::int64_t seed = static_cast<std::int64_t>(options.seed);
  taas::flags::FlagSet flags;
  flags.Int("batch_size", 1, 1 << 16, &options.batch_size);
  flags.Int("channels", 1, 1 << 10, &options.channels);
  flags.Double("learning_rate", 1e-9, 10, &options.learning_rate);
  flags.String("data_dir", &options.data_dir);
  flags.Int("seed", 0, std::int64_t{1} << 62, &seed);
  TAAS_RETURN_IF_ERROR(taas::ParseModelArgs(flags, args));
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError(
        "model arguments: --data_dir: expected a folder, got nothing");
  }
  options.seed = static_cast<std::uint64_t>(seed);
  return options;
}

NetworkImpl::NetworkImpl(std::int64_t channels) {
  using torch::nn::Conv2dOptions;
  conv1_ = register_module("conv1", torch::nn::Conv2d(Conv2dOptions(1, channels, 3).padding(1)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(channels));
  conv2_ = register_module("conv2",
                           torch::nn::Conv2d(Conv2dOptions(channels, 2 * channels, 3).padding(1)));
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(2 * channels));
  logits_ = register_module("logits", torch::nn::Linear(2 * channels * 7 * 7, kClasses));
}

torch::Tensor NetworkImpl::forward(const torch::Tensor& images) {
  torch::Tensor x = torch::max_pool2d(torch::relu(bn1_(conv1_(images))), 2);  // 14 x 14
  x = torch::max_pool2d(torch::relu(bn2_(conv2_(x))), 2);                     // 7 x 7
  return logits_(x.flatten(1));
}

absl::Status Model::build_model(taas::ModelBuilder& builder) {
  const taas::TrainerInfo& info = builder.info();
  TAAS_ASSIGN_OR_RETURN(options_, ParseArgs(info.args));
  // LibTorch computes with the threads the runtime gives each model replica.
  if (const int threads = taas::HostComputeThreads(); threads > 0) torch::set_num_threads(threads);
  TAAS_ASSIGN_OR_RETURN(device_, taas::torch_engine::TorchDevice(info.device));
  // The same initial weights on every replica and every run with the same --seed (the chief's
  // are the job's).
  torch::manual_seed(options_.seed);
  network_ = Network(options_.channels);
  network_->to(device_);
  TAAS_ASSIGN_OR_RETURN(bound_, taas::torch_engine::BoundModule::Bind(builder, *network_));
  // The runtime's update rule (on the parameter servers, or on each replica under all-reduce),
  // never a torch::optim optimizer.
  taas::optim::OptimizerConfig optimizer;
  optimizer.name = "adam";
  optimizer.learning_rate.initial = options_.learning_rate;
  builder.SetOptimizer(optimizer);
  builder.SetBatchSize(options_.batch_size);

  if (info.predicting) return absl::OkStatus();  // predict_inputs opens what it is given
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
  pipeline.example_shape = {28, 28, 1};
  pipeline.device = info.device;
  TAAS_ASSIGN_OR_RETURN(train_, taas::data::Pipeline::Create(std::move(train), pipeline));
  return absl::OkStatus();
}

taas::StepResult Model::train(taas::Session&) {
  batch_ = train_->Next();  // repeating: never ends
  network_->train();
  torch::Tensor loss = torch::nn::functional::cross_entropy(
      network_->forward(Images(*batch_, device_)), Labels(batch_->labels, device_));
  // The gradients land in the runtime's buffers; the loss stays on the device until logged.
  loss.backward();
  return bound_->Result(loss, static_cast<std::int64_t>(batch_->labels.size()));
}

absl::StatusOr<std::map<std::string, double>> Model::evaluate(taas::Session& session) {
  // An error here (no test set, a bad batch) is the job's: the runtime ends the chief with it and
  // names it in the job's result, rather than reporting success without metrics.
  if (test_ == nullptr) {  // on the chief (TAAS_EVAL_ON_CHIEF): the test set on first use
    TAAS_ASSIGN_OR_RETURN(test_, LoadSplit(options_.data_dir, "test"));
  }
  // BatchNorm with its running statistics, and no graph for backward.
  torch::NoGradGuard no_grad;
  network_->eval();
  taas::data::EvaluateOptions evaluation;
  evaluation.batch_size = 1000;
  evaluation.example_shape = {28, 28, 1};
  evaluation.device = session.info().device;
  auto metrics = taas::data::EvaluateInBatches(
      test_, evaluation,
      [this](const taas::data::Batch& batch) -> absl::StatusOr<taas::data::BatchMetrics> {
        // The batch's images are only read.
        const torch::Tensor logits =
            network_->forward(Images(const_cast<taas::data::Batch&>(batch), device_));
        const torch::Tensor labels = Labels(batch.labels, device_);
        return taas::data::BatchMetrics{
            {"accuracy", logits.argmax(1).eq(labels).to(torch::kFloat64).mean().item<double>()},
            {"loss", torch::nn::functional::cross_entropy(logits, labels).item<double>()}};
      });
  network_->train();
  return metrics;
}

absl::StatusOr<std::unique_ptr<taas::data::BatchStream>> Model::predict_inputs(
    taas::Session&, const taas::PredictRequest& request) {
  taas::data::PipelineOptions options;
  options.batch_size = request.batch_size;
  options.example_shape = {28, 28, 1};
  options.device = request.device;
  return taas::data::OpenIdxImageFiles(request.inputs, options);
}

absl::StatusOr<taas::PredictOutputs> Model::predict(taas::Session&,
                                                    const taas::data::Batch& batch) {
  torch::NoGradGuard no_grad;
  network_->eval();  // BatchNorm's running statistics, as evaluate() scores
  // The batch's images are only read.
  const torch::Tensor logits =
      network_->forward(Images(const_cast<taas::data::Batch&>(batch), device_));
  TAAS_ASSIGN_OR_RETURN(taas::Tensor outputs, bound_->Outputs(logits));
  return taas::PredictOutputs{std::move(outputs), true};  // the view: no copy
}

}  // namespace custom_model
