#include "taas/fashion_mnist/local_trainer.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <span>

#include "taas/data/evaluate.h"
#include "taas/optim/moving_average.h"

namespace taas::fashion_mnist {
namespace {

// A batch's accuracy and mean loss, as evaluate() reports them.
data::ScoreBatch ScoreWith(Model& model) {
  return [&model](const data::Batch& batch) -> absl::StatusOr<data::BatchMetrics> {
    TAAS_ASSIGN_OR_RETURN(const BatchStats stats, model.Evaluate(batch));
    const double examples = static_cast<double>(std::max<std::int64_t>(1, stats.examples));
    return data::BatchMetrics{{"accuracy", static_cast<double>(stats.correct) / examples},
                              {"loss", static_cast<double>(stats.loss)}};
  };
}

}  // namespace

absl::StatusOr<std::map<std::string, double>> EvaluateDataset(
    Model& model, std::shared_ptr<const data::ImageDataset> dataset, std::int64_t batch_size,
    Device device) {
  data::EvaluateOptions options;
  options.batch_size = batch_size;
  options.example_shape = model.example_shape();
  options.device = device;  // where the model's variables are
  return data::EvaluateInBatches(std::move(dataset), options, ScoreWith(model));
}

absl::StatusOr<std::map<std::string, double>> EvaluateStream(Model& model,
                                                             data::BatchStream& stream) {
  return data::EvaluateStream(stream, ScoreWith(model));
}

absl::StatusOr<LocalTrainingResult> TrainLocally(Model& model,
                                                 std::shared_ptr<const data::ImageDataset> train,
                                                 std::shared_ptr<const data::ImageDataset> test,
                                                 const LocalTrainingOptions& options) {
  data::PipelineOptions pipeline_options;
  pipeline_options.batch_size = options.batch_size;
  pipeline_options.shuffle_buffer = options.shuffle_buffer;
  pipeline_options.seed = options.seed;
  pipeline_options.repeat = true;
  pipeline_options.prefetch = 4;
  pipeline_options.example_shape = model.example_shape();
  TAAS_ASSIGN_OR_RETURN(auto pipeline, data::Pipeline::Create(train, pipeline_options));
  return TrainLocally(model, *pipeline, train->count, std::move(test), options);
}

absl::StatusOr<LocalTrainingResult> TrainLocally(Model& model, data::BatchStream& train,
                                                 std::int64_t train_examples,
                                                 std::shared_ptr<const data::ImageDataset> test,
                                                 const LocalTrainingOptions& options) {
  if (options.threads > 0) nn::SetComputeThreads(options.threads);
  const std::int64_t steps_per_epoch =
      (train_examples + options.batch_size - 1) / options.batch_size;
  TAAS_ASSIGN_OR_RETURN(
      auto optimizer,
      optim::CreateOptimizer(options.optimizer.value_or(model.DefaultOptimizer(steps_per_epoch))));

  const std::vector<Variable*> variables = model.variables();
  std::vector<Tensor*> gradients;  // what clipping by global norm scales together
  for (Variable* variable : variables) gradients.push_back(&variable->gradient);
  std::vector<std::vector<Tensor>> slots(variables.size());
  std::vector<std::vector<std::span<float>>> slot_spans(variables.size());
  for (std::size_t v = 0; v < variables.size(); ++v) {
    for (int s = 0; s < optimizer->slot_count(); ++s) {
      slots[v].emplace_back(variables[v]->value.shape());
    }
    for (auto& slot : slots[v]) slot_spans[v].push_back(slot.values());
  }
  std::optional<optim::ExponentialMovingAverage> ema;
  if (options.use_moving_averages && model.MovingAverageDecay() > 0.0f) {
    ema.emplace(model.MovingAverageDecay());
    ema->Track(variables);
  }

  LocalTrainingResult result;
  const std::int64_t window = std::min<std::int64_t>(50, options.steps);
  double first_loss = 0.0, last_loss = 0.0;
  std::int64_t last_correct = 0, last_examples = 0;
  std::deque<BatchStats> recent;
  BatchStats logged;
  std::int64_t logged_steps = 0;
  double logged_loss = 0.0;

  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t step = 0; step < options.steps; ++step) {
    TAAS_ASSIGN_OR_RETURN(std::optional<data::Batch> batch, train.NextBatch());
    if (!batch) return absl::InternalError("the training input ended early (it should repeat)");
    TAAS_ASSIGN_OR_RETURN(const BatchStats stats, model.TrainStep(*batch));
    TAAS_RETURN_IF_ERROR(optimizer->ClipByGlobalNorm(gradients));
    for (std::size_t v = 0; v < variables.size(); ++v) {
      optimizer->Apply(variables[v]->name, variables[v]->value.values(),
                       variables[v]->gradient.values(), slot_spans[v], step);
    }
    if (ema) ema->Apply(step + 1);
    result.examples += stats.examples;
    if (step < window) first_loss += stats.loss;
    recent.push_back(stats);
    if (static_cast<std::int64_t>(recent.size()) > window) recent.pop_front();
    if (options.log_every > 0 && options.on_log) {
      logged_loss += stats.loss;
      logged.correct += stats.correct;
      logged.examples += stats.examples;
      if (++logged_steps == options.log_every) {
        logged.loss = static_cast<float>(logged_loss / static_cast<double>(logged_steps));
        options.on_log(step + 1, logged);
        logged = BatchStats{};
        logged_loss = 0.0;
        logged_steps = 0;
      }
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.steps = options.steps;
  result.examples_per_second = result.seconds > 0 ? result.examples / result.seconds : 0.0;
  for (const auto& stats : recent) {
    last_loss += stats.loss;
    last_correct += stats.correct;
    last_examples += stats.examples;
  }
  if (window > 0) {
    result.first_loss = static_cast<float>(first_loss / static_cast<double>(window));
    result.last_loss = static_cast<float>(last_loss / static_cast<double>(recent.size()));
  }
  result.train_accuracy_last =
      last_examples > 0 ? static_cast<double>(last_correct) / static_cast<double>(last_examples)
                        : 0.0;
  result.test_accuracy = -1.0;
  if (test != nullptr) {
    if (ema) ema->SwapIntoVariables();
    auto evaluated = EvaluateDataset(model, test);
    if (ema) ema->SwapIntoVariables();
    if (!evaluated.ok()) return evaluated.status();
    result.test_accuracy = evaluated->at("accuracy");
    result.test_loss = static_cast<float>(evaluated->at("loss"));
  }
  return result;
}

}  // namespace taas::fashion_mnist
