#include "taas/torch_models/trainer.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "taas/data/evaluate.h"
#include "taas/data/idx_files.h"
#include "taas/runtime/model_args.h"
#include "taas/runtime/warm_start.h"

namespace taas::torch_models {
namespace {

constexpr std::int64_t kClasses = 10;
constexpr std::int64_t kEvalBatch = 1000;

// A batch's images as a torch tensor on `device` without a copy: [batch, 1, 28, 28] (the
// pipeline's NHWC with one channel is the same memory as NCHW).
::torch::Tensor Images(data::Batch& batch, ::torch::Device device) {
  const std::int64_t n = batch.images.shape()[0];
  return ::torch::from_blob(batch.images.data(), {n, 1, 28, 28},
                            ::torch::TensorOptions().dtype(::torch::kFloat32).device(device));
}

::torch::Tensor Labels(const std::vector<std::int32_t>& labels, ::torch::Device device) {
  return ::torch::tensor(std::vector<std::int64_t>(labels.begin(), labels.end()), ::torch::kInt64)
      .to(device);
}

}  // namespace

absl::StatusOr<optim::LearningRateSchedule> LearningRate(double rate, bool cosine_decay,
                                                         std::int64_t max_steps) {
  const auto initial = static_cast<float>(rate);
  if (!cosine_decay) return optim::LearningRateSchedule::Constant(initial);
  if (max_steps <= 0) {
    return absl::InvalidArgumentError(
        "model argument --cosine_decay decays over the job's max steps, and the job has none: "
        "set TF_MAX_STEPS (or --max_steps), or drop --cosine_decay");
  }
  return optim::LearningRateSchedule::CosineDecay(initial, max_steps);
}

absl::Status TorchTrainer::ParseArgs(const std::vector<std::string>& args) {
  flags::FlagSet flags;
  flags.Choice("model", {"resnet", "lstm", "cnn"}, &model_name_);
  flags.Int("batch_size", 1, std::int64_t{1} << 20, &batch_size_);
  flags.String("optimizer", &optimizer_name_);
  flags.Double("learning_rate", 1e-9, 1e6, &learning_rate_);
  flags.Switch("cosine_decay", &cosine_decay_);
  flags.String("data_dir", &data_dir_);
  flags.Int("seed", 0, std::numeric_limits<std::int64_t>::max(), &seed_);
  flags.Int("threads", 0, 1024, &threads_);
  flags.String("warm_start_from", &warm_start_from_);
  return ParseModelArgs(flags, args);
}

absl::Status TorchTrainer::build_model(ModelBuilder& builder) {
  const TrainerInfo& info = builder.info();
  TAAS_RETURN_IF_ERROR(ParseArgs(info.args));
  if (batch_size_ % info.replicas_per_worker != 0) {
    return absl::InvalidArgumentError("model argument --batch_size=" + std::to_string(batch_size_) +
                                      ": must divide among the worker's " +
                                      std::to_string(info.replicas_per_worker) +
                                      " replicas (TAAS_REPLICAS_PER_WORKER)");
  }
  const std::int64_t replica_batch = batch_size_ / info.replicas_per_worker;
  const int threads = threads_ > 0 ? static_cast<int>(threads_) : HostComputeThreads();
  if (threads > 0) ::torch::set_num_threads(threads);
  TAAS_ASSIGN_OR_RETURN(device_, torch_engine::TorchDevice(info.device));
  TAAS_ASSIGN_OR_RETURN(classifier_,
                        Classifier::Create(model_name_, static_cast<std::uint64_t>(seed_)));
  if (!warm_start_from_.empty()) TAAS_RETURN_IF_ERROR(classifier_->FreezeTrunk());
  classifier_->module().to(device_);
  TAAS_ASSIGN_OR_RETURN(bound_, torch_engine::BoundModule::Bind(builder, classifier_->module()));

  optim::OptimizerConfig optimizer;
  optimizer.name = optimizer_name_;
  // An evaluator trains nothing: it needs no max steps to decay over.
  const bool decays = cosine_decay_ && info.role != Role::kEvaluator;
  TAAS_ASSIGN_OR_RETURN(optimizer.learning_rate,
                        LearningRate(learning_rate_, decays, info.max_steps));
  builder.SetOptimizer(optimizer);
  builder.SetBatchSize(replica_batch);

  if (info.predicting) return absl::OkStatus();  // predict_inputs reads what it is given
  if (info.role == Role::kEvaluator) return LoadTestSet();
  TAAS_ASSIGN_OR_RETURN(auto train, data::LoadMnistSplit(data_dir_, "train"));
  TAAS_RETURN_IF_ERROR(data::CheckLabels(train, kClasses));
  data::PipelineOptions options;
  options.batch_size = replica_batch;
  options.shuffle_buffer = 10000;
  options.seed = static_cast<std::uint64_t>(seed_) * 1000 +
                 static_cast<std::uint64_t>(info.replica_id_in_sync());
  options.repeat = true;
  options.shard_index = info.replica_id_in_sync();
  options.num_shards = std::max(1, info.num_replicas_in_sync());
  options.prefetch = 4;
  options.example_shape = {28, 28, 1};
  options.device = info.device;
  TAAS_ASSIGN_OR_RETURN(pipeline_,
                        data::Pipeline::Create(
                            std::make_shared<const data::ImageDataset>(std::move(train)), options));
  builder.logger().Info("torch model built",
                        {{"model", model_name_},
                         {"parameters", static_cast<std::int64_t>(bound_->variables().size())},
                         {"state", static_cast<std::int64_t>(bound_->states().size())},
                         {"frozen_trunk", !warm_start_from_.empty()}});
  return absl::OkStatus();
}

InitFn TorchTrainer::get_init_fn() {
  if (warm_start_from_.empty()) return {};
  // The trunk (frozen parameters and its BatchNorm statistics) from the other job; the head
  // starts from its initialiser.
  return WarmStart(
      {.ckpt_to_initialize_from = warm_start_from_, .vars_to_warm_start = {"stem", "stage[0-9]"}});
}

StepResult TorchTrainer::train(Session&) {
  batch_ = pipeline_->Next();  // repeating: never ends
  classifier_->SetTraining(true);
  ::torch::Tensor logits = classifier_->forward(Images(*batch_, device_));
  ::torch::Tensor loss =
      ::torch::nn::functional::cross_entropy(logits, Labels(batch_->labels, device_));
  loss.backward();
  return bound_->Result(loss, static_cast<std::int64_t>(batch_->labels.size()));
}

absl::Status TorchTrainer::LoadTestSet() {
  if (test_ != nullptr) return absl::OkStatus();
  TAAS_ASSIGN_OR_RETURN(auto test, data::LoadMnistSplit(data_dir_, "test"));
  TAAS_RETURN_IF_ERROR(data::CheckLabels(test, kClasses));
  test_ = std::make_shared<const data::ImageDataset>(std::move(test));
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, double>> TorchTrainer::evaluate(Session& session) {
  // The evaluator loads the test set in build_model; the chief on its first evaluation. An error
  // is the job's: the runtime names it in the job's result.
  TAAS_RETURN_IF_ERROR(LoadTestSet());
  data::EvaluateOptions options;
  options.batch_size = kEvalBatch;
  options.example_shape = {28, 28, 1};
  options.device = session.info().device;
  ::torch::NoGradGuard no_grad;
  classifier_->SetTraining(false);
  auto metrics = data::EvaluateInBatches(
      test_, options, [&](const data::Batch& batch) -> absl::StatusOr<data::BatchMetrics> {
        // The pipeline's batch is read only here: from_blob needs a mutable pointer.
        ::torch::Tensor logits =
            classifier_->forward(Images(const_cast<data::Batch&>(batch), device_));
        ::torch::Tensor labels = Labels(batch.labels, device_);
        return data::BatchMetrics{
            {"accuracy", logits.argmax(1).eq(labels).to(::torch::kFloat64).mean().item<double>()},
            {"loss", ::torch::nn::functional::cross_entropy(logits, labels).item<double>()}};
      });
  classifier_->SetTraining(true);
  return metrics;
}

absl::StatusOr<std::unique_ptr<data::BatchStream>> TorchTrainer::predict_inputs(
    Session&, const PredictRequest& request) {
  data::PipelineOptions options;
  options.batch_size = request.batch_size;
  options.example_shape = {28, 28, 1};
  options.device = request.device;
  return data::OpenIdxImageFiles(request.inputs, options);
}

absl::StatusOr<PredictOutputs> TorchTrainer::predict(Session&, const data::Batch& batch) {
  ::torch::NoGradGuard no_grad;
  classifier_->SetTraining(false);  // BatchNorm's running statistics, as evaluate() scores
  // The batch is read only here: from_blob needs a mutable pointer.
  ::torch::Tensor logits = classifier_->forward(Images(const_cast<data::Batch&>(batch), device_));
  TAAS_ASSIGN_OR_RETURN(Tensor outputs, bound_->Outputs(logits));
  return PredictOutputs{std::move(outputs), true};  // the view: no copy
}

void TorchTrainer::after_train(Session& session, bool is_chief) {
  if (!is_chief || !classifier_) return;
  const auto metrics = evaluate(session);
  if (!metrics.ok()) {
    // TAAS_EVAL_ON_CHIEF's evaluation would have ended the job with this error; after_train's
    // score is the example's extra, so it is logged and the job keeps what it has.
    session.logger().Error("no final test accuracy",
                           {{"error", std::string(metrics.status().message())}});
    return;
  }
  session.logger().Info("final test accuracy", {{"model", model_name_},
                                                {"accuracy", metrics->at("accuracy")},
                                                {"loss", metrics->at("loss")}});
  session.ReportFinalMetrics(*metrics);
}

}  // namespace taas::torch_models
