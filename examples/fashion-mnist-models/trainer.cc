#include "taas/fashion_mnist/trainer.h"

#include <limits>
#include <utility>

#include "taas/data/idx_files.h"
#include "taas/data/pipeline.h"
#include "taas/fashion_mnist/local_trainer.h"
#include "taas/fashion_mnist/tfrecords.h"
#include "taas/nn/compute.h"
#include "taas/optim/moving_average.h"
#include "taas/runtime/model_args.h"

namespace taas::fashion_mnist {

absl::Status FashionMnistTrainer::ParseArgs(const std::vector<std::string>& args) {
  std::int64_t seed = static_cast<std::int64_t>(seed_);
  std::string optimizer;
  double learning_rate = 0.0;
  flags::FlagSet flags;
  flags.Int("batch_size", 1, std::int64_t{1} << 20, &batch_size_);
  flags.Int("eval_batch_size", 0, std::int64_t{1} << 20, &eval_batch_size_);
  flags.String("data_dir", &data_dir_);
  flags.Int("threads", 0, 1024, &threads_);
  flags.Int("seed", 0, std::numeric_limits<std::int64_t>::max(), &seed);
  flags.Choice("optimizer", {"sgd", "momentum", "adam"}, &optimizer);
  flags.Double("learning_rate", 1e-9, 1e6, &learning_rate);
  flags.Switch("moving_averages", &moving_averages_);
  flags.List("train_files", &train_files_);
  flags.List("test_files", &test_files_);
  flags.Int("decode_threads", 1, 64, &decode_threads_);
  TAAS_RETURN_IF_ERROR(ParseModelArgs(flags, args));
  seed_ = static_cast<std::uint64_t>(seed);
  if (!optimizer.empty()) optimizer_name_ = optimizer;
  if (learning_rate > 0.0) learning_rate_ = static_cast<float>(learning_rate);
  return absl::OkStatus();
}

absl::Status FashionMnistTrainer::build_model(ModelBuilder& builder) {
  const TrainerInfo& info = builder.info();
  TAAS_RETURN_IF_ERROR(ParseArgs(info.args));
  // --batch_size is the worker's: its model replicas (all-reduce training) take a slice each.
  if (batch_size_ % info.replicas_per_worker != 0) {
    return absl::InvalidArgumentError("model argument --batch_size=" + std::to_string(batch_size_) +
                                      ": must divide among the worker's " +
                                      std::to_string(info.replicas_per_worker) +
                                      " replicas (TAAS_REPLICAS_PER_WORKER)");
  }
  const std::int64_t replica_batch = batch_size_ / info.replicas_per_worker;
  if (threads_ > 0) nn::SetComputeThreads(threads_);
  TAAS_ASSIGN_OR_RETURN(model_, CreateModel(model_name_, seed_));

  // The optimizer decays per epoch of the whole job's data, as the tutorials do.
  const std::int64_t train_examples = 60000;
  // A global step is one worker's batch with parameter servers, every worker's under all-reduce.
  const std::int64_t examples_per_step =
      info.strategy == Strategy::kCollective ? batch_size_ * info.num_workers : batch_size_;
  const std::int64_t steps_per_epoch = (train_examples + examples_per_step - 1) / examples_per_step;
  optim::OptimizerConfig optimizer = model_->DefaultOptimizer(steps_per_epoch);
  if (optimizer_name_) optimizer.name = *optimizer_name_;
  if (learning_rate_) optimizer.learning_rate.initial = *learning_rate_;
  builder.SetOptimizer(optimizer);
  builder.SetBatchSize(replica_batch);

  const std::vector<Variable*> variables = model_->variables();
  builder.AddVariables(variables);
  if (moving_averages_ && model_->MovingAverageDecay() > 0.0f && optimizer.name == "sgd") {
    // The shadows' gradients are computed on the host, from the variables' values.
    if (!info.device.is_cpu()) {
      return absl::FailedPreconditionError(
          "--moving_averages computes on the host only, but this replica runs on " +
          DeviceName(info.device) + ": drop the flag or set TAAS_DEVICE=cpu");
    }
    average_decay_ = model_->MovingAverageDecay();
    for (Variable* variable : variables) {
      shadows_.push_back(
          {variable->name + "/ExponentialMovingAverage", variable->value, variable->gradient});
      averaged_.push_back(variable);
      builder.AddVariable(&shadows_.back());
    }
  }

  if (info.predicting) return absl::OkStatus();  // predict_inputs reads what it is given
  // The evaluator scores the test set only; with --test_files it opens them per evaluation.
  if (info.role == Role::kEvaluator) return test_files_.empty() ? LoadTestSet() : absl::OkStatus();
  TAAS_RETURN_IF_ERROR(OpenTrainingInput(info, replica_batch, builder.logger()));
  builder.logger().Info("fashion-mnist model built",
                        {{"model", model_name_},
                         {"variables", static_cast<std::int64_t>(variables.size())},
                         {"moving_averages", !shadows_.empty()}});
  return absl::OkStatus();
}

absl::Status FashionMnistTrainer::OpenTrainingInput(const TrainerInfo& info,
                                                    std::int64_t replica_batch,
                                                    const Logger& logger) {
  // The same shard, shuffle buffer, seed and prefetch from memory and from disk, so that the two
  // train alike (bench/fashion-mnist/tfrecord.sh compares them).
  const auto input = [&]<typename InputOptions>(InputOptions options) {
    options.batch_size = replica_batch;
    options.example_shape = model_->example_shape();
    options.shuffle_buffer = 10000;
    options.seed = seed_ * 1000 + static_cast<std::uint64_t>(info.replica_id_in_sync());
    options.repeat = true;
    options.shard_index = info.replica_id_in_sync();
    options.num_shards = std::max(1, info.num_replicas_in_sync());
    options.prefetch = 4;
    options.device = info.device;  // the replica's GPU, if any: batches go there ahead of use
    return options;
  };
  if (!train_files_.empty()) {
    data::StreamOptions options = input(data::StreamOptions{});
    options.decode_threads = decode_threads_;
    TAAS_ASSIGN_OR_RETURN(auto stream, OpenTfRecordStream(train_files_, options));
    const data::ShardPlan& plan = stream->plan();
    logger.Info("training from TFRecord files",
                {{"shard_files", static_cast<std::int64_t>(plan.parts.size())},
                 {"by_file", plan.by_part()},
                 {"decode_threads", decode_threads_}});
    input_ = std::move(stream);
    return absl::OkStatus();
  }
  TAAS_ASSIGN_OR_RETURN(auto train, data::LoadMnistSplit(data_dir_, "train"));
  TAAS_RETURN_IF_ERROR(data::CheckLabels(train, kClasses));
  const data::PipelineOptions options = input(data::PipelineOptions{});
  TAAS_ASSIGN_OR_RETURN(auto pipeline,
                        data::Pipeline::Create(
                            std::make_shared<const data::ImageDataset>(std::move(train)), options));
  logger.Info("training from the IDX files in memory",
              {{"data_dir", data_dir_}, {"shard_examples", pipeline->shard_size()}});
  input_ = std::move(pipeline);
  return absl::OkStatus();
}

StepResult FashionMnistTrainer::train(Session& session) {
  StepResult result;
  // Repeating: it never ends, but a record on disk may be corrupt (named by file and offset).
  absl::StatusOr<std::optional<data::Batch>> next = input_->NextBatch();
  if (!next.ok() || !next->has_value()) {
    result.error = next.ok() ? absl::InternalError("the training input ended (it should repeat)")
                             : next.status();
    return result;
  }
  batch_ = std::move(**next);
  auto stats = model_->Step(*batch_);
  if (!stats.ok()) {
    result.error = stats.status();
    return result;
  }
  if (!shadows_.empty()) {
    const float decay =
        optim::ExponentialMovingAverage::DecayAt(average_decay_, session.global_step());
    const float lr = session.learning_rate();
    const float scale = lr > 0.0f ? (1.0f - decay) / lr : 0.0f;
    for (std::size_t i = 0; i < averaged_.size(); ++i) {
      const float* w = averaged_[i]->value.data();
      const float* s = shadows_[i].value.data();
      float* g = shadows_[i].gradient.data();
      for (std::int64_t k = 0; k < shadows_[i].value.size(); ++k) g[k] = scale * (s[k] - w[k]);
    }
  }
  // The loss and the accuracy stay where the model computed them (the replica's device): the
  // runtime reads them when it logs or summarises, so a step never waits for the device.
  result.examples = batch_->images.shape()[0];
  result.device_loss = (*stats)->Slice(nn::kLossMean, {1});
  result.device_scalars.emplace("train_accuracy", (*stats)->Slice(nn::kLossAccuracy, {1}));
  return result;
}

void FashionMnistTrainer::SwapAverages() {
  for (std::size_t i = 0; i < averaged_.size(); ++i) {
    std::swap(averaged_[i]->value, shadows_[i].value);
  }
}

absl::Status FashionMnistTrainer::LoadTestSet() {
  if (test_ != nullptr) return absl::OkStatus();
  TAAS_ASSIGN_OR_RETURN(auto test, data::LoadMnistSplit(data_dir_, "test"));
  TAAS_RETURN_IF_ERROR(data::CheckLabels(test, kClasses));
  test_ = std::make_shared<const data::ImageDataset>(std::move(test));
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, double>> FashionMnistTrainer::evaluate(Session& session) {
  // The evaluator loads the test set in build_model; the chief (TAAS_EVAL_ON_CHIEF, after_train)
  // on its first evaluation. An error is the job's: the runtime names it in the job's result.
  const std::int64_t batch_size = eval_batch_size_ > 0 ? eval_batch_size_ : batch_size_;
  std::unique_ptr<data::StreamPipeline> test_stream;
  if (!test_files_.empty()) {
    // One pass over the files in their order, opened afresh for each evaluation.
    data::StreamOptions options;
    options.batch_size = batch_size;
    options.example_shape = model_->example_shape();
    options.decode_threads = decode_threads_;
    options.device = session.info().device;
    TAAS_ASSIGN_OR_RETURN(test_stream, OpenTfRecordStream(test_files_, options));
  } else {
    TAAS_RETURN_IF_ERROR(LoadTestSet());
  }
  SwapAverages();
  auto metrics = test_stream != nullptr
                     ? EvaluateStream(*model_, *test_stream)
                     : EvaluateDataset(*model_, test_, batch_size, session.info().device);
  SwapAverages();
  return metrics;
}

absl::StatusOr<std::unique_ptr<data::BatchStream>> FashionMnistTrainer::predict_inputs(
    Session&, const PredictRequest& request) {
  data::PipelineOptions options;
  options.batch_size = request.batch_size;
  options.example_shape = model_->example_shape();
  options.device = request.device;
  return data::OpenIdxImageFiles(request.inputs, options);
}

absl::StatusOr<PredictOutputs> FashionMnistTrainer::predict(Session&, const data::Batch& batch) {
  SwapAverages();
  auto logits = model_->Logits(batch);
  PredictOutputs outputs;
  if (logits.ok()) outputs = {**logits, true};  // a copy on their device
  SwapAverages();
  if (!logits.ok()) return logits.status();
  return outputs;
}

void ReportFinalTestAccuracy(Session& session, const Logger& logger,
                             const absl::StatusOr<std::map<std::string, double>>& metrics) {
  if (!metrics.ok()) {
    logger.Error("no final test accuracy", {{"error", std::string(metrics.status().message())}});
    return;
  }
  logger.Info("final test accuracy",
              {{"accuracy", metrics->at("accuracy")}, {"loss", metrics->at("loss")}});
  session.ReportFinalMetrics(*metrics);
}

void FashionMnistTrainer::after_train(Session& session, bool is_chief) {
  if (!is_chief || model_ == nullptr) return;
  const auto metrics = evaluate(session);
  ReportFinalTestAccuracy(
      session,
      session.logger().With({{"model", model_name_}, {"moving_averages", !shadows_.empty()}}),
      metrics);
}

}  // namespace taas::fashion_mnist
