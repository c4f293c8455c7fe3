#include "taas/runtime/local.h"

#include "chief.h"
#include "exit_code.h"
#include "internal.h"

namespace taas {

struct LocalModel::Impl {
  config::RuntimeConfig config;
  runtime::Context ctx;
  std::unique_ptr<runtime::BuiltModel> built;
  std::unique_ptr<optim::Optimizer> optimizer;
  Session::State session_state;
  Session session{&session_state};
};

LocalModel::LocalModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalModel::~LocalModel() = default;

absl::StatusOr<std::unique_ptr<LocalModel>> LocalModel::Build(ModelFactory factory,
                                                              std::vector<std::string> model_args) {
  auto impl = std::make_unique<Impl>();
  // The settings a one-worker all-reduce job without TF_CONFIG gets; no environment is read.
  std::vector<std::string> flags = {"--strategy=collective", "--"};
  flags.insert(flags.end(), model_args.begin(), model_args.end());
  TAAS_ASSIGN_OR_RETURN(impl->config, config::ParseConfig(flags, {}));
  impl->ctx.config = &impl->config;
  impl->ctx.factory = std::move(factory);
  impl->ctx.logger = Logger(stderr, LogLevel::kWarning);
  TAAS_ASSIGN_OR_RETURN(impl->built, runtime::BuildModel(impl->ctx, impl->config.info));
  // BuildModel validated the optimizer settings: creating it cannot fail here.
  impl->optimizer = std::move(optim::CreateOptimizer(impl->built->state.optimizer)).value();
  impl->session_state.info = &impl->config.info;
  impl->session_state.logger = &impl->ctx.logger;
  impl->session_state.variables = &impl->built->state.variables;
  impl->session_state.states = &impl->built->state.states;
  impl->session_state.replica = impl->built->replica.get();
  impl->session_state.learning_rate = impl->optimizer->LearningRate(0);
  return std::unique_ptr<LocalModel>(new LocalModel(std::move(impl)));
}

DistModel& LocalModel::model() { return *impl_->built->model; }
const std::vector<Variable*>& LocalModel::variables() const {
  return impl_->built->state.variables;
}
const optim::OptimizerConfig& LocalModel::optimizer() const {
  return impl_->built->state.optimizer;
}
Session& LocalModel::session() { return impl_->session; }

void LocalModel::SetSteps(std::int64_t global_step, std::int64_t local_step) {
  impl_->session_state.global_step = global_step;
  impl_->session_state.local_step = local_step;
  impl_->session_state.learning_rate = impl_->optimizer->LearningRate(global_step);
  impl_->built->global_step = global_step;
}

absl::StatusOr<StepResult> LocalModel::Train() {
  StepResult result;
  TAAS_RETURN_IF_ERROR(runtime::TrainOnce(*impl_->built, impl_->session, result));
  return result;
}

absl::StatusOr<std::map<std::string, double>> LocalModel::Evaluate() {
  return runtime::EvaluateModel(*impl_->built->model, impl_->session);
}

absl::StatusOr<std::string> LocalModel::SaveCheckpoint(const std::string& model_dir,
                                                       std::int64_t global_step) {
  runtime::TrainingState state;
  state.global_step = global_step;
  for (const Variable* v : variables()) {
    auto values = v->value.values();
    state.values.emplace_back(values.begin(), values.end());
  }
  state.slots.resize(variables().size());
  TAAS_RETURN_IF_ERROR(impl_->built->replica->StateToHost());
  return checkpoint::Save(
      model_dir, global_step,
      runtime::CheckpointEntries(variables(), impl_->built->state.states, std::move(state)),
      impl_->config.keep_checkpoints);
}

absl::Status LocalModel::RestoreCheckpoint(const std::string& model_dir) {
  std::vector<std::string> skipped;
  TAAS_ASSIGN_OR_RETURN(auto latest, checkpoint::LoadLatest(model_dir, &skipped));
  if (!latest) return absl::NotFoundError("no checkpoint in " + model_dir);
  TAAS_RETURN_IF_ERROR(runtime::RestoreVariables(*latest, variables()));
  TAAS_RETURN_IF_ERROR(
      runtime::RestoreState(*latest, impl_->built->state.states, impl_->ctx.logger));
  impl_->built->replica->StateChangedOnHost();
  return impl_->built->replica->StateToDevice();
}

int RunLocalTraining(const std::vector<std::string>& flags, ModelFactory factory, std::FILE* log) {
  return RunLocalTraining(flags, std::move(factory), log, {});
}

int RunLocalTraining(const std::vector<std::string>& flags, ModelFactory factory, std::FILE* log,
                     const std::vector<Device>& devices) {
  using runtime::FailureSource;
  runtime::Context ctx;
  ctx.logger = Logger(log != nullptr ? log : stdout).With({{"role", "local"}});
  try {
    std::vector<std::string> args = {"--strategy=collective"};
    args.insert(args.end(), flags.begin(), flags.end());
    auto config = config::ParseConfig(args, {});
    if (!config.ok()) {
      return runtime::Exit(ctx.logger, 0, FailureSource::kConfig, "invalid configuration",
                           config.status());
    }
    if (config->info.strategy != Strategy::kCollective || config->info.num_workers != 1) {
      return runtime::Exit(
          ctx.logger, 0, FailureSource::kConfig, "invalid configuration",
          absl::InvalidArgumentError("a local run is one all-reduce worker: --strategy=" +
                                     config::StrategyName(config->info.strategy) + " refused"));
    }
    // The CPU unless --device=cuda asks for the visible GPUs (one replica each): a local run gives
    // the same results wherever it runs unless told otherwise.
    if (config->device_setting.empty()) config->device_setting = "cpu";
    const std::string described =
        devices.empty()
            ? runtime::ChooseAndPrepareDevices(*config, ctx.logger)
            : runtime::PrepareDevices(*config, {devices, "chosen by the caller"}, ctx.logger);
    if (config->devices.empty()) return kExitBadConfig;
    ctx.logger.Info("local run", {{"devices", described},
                                  {"replicas_per_worker", config->info.replicas_per_worker}});
    metrics::Gauges gauges;
    ctx.config = &*config;
    ctx.gauges = &gauges;
    ctx.factory = std::move(factory);
    return runtime::RunCollectiveTrainer(ctx);
  } catch (...) {
    return runtime::Exit(ctx.logger, ctx.global_step, FailureSource::kModel, "uncaught exception",
                         runtime::StatusFromCurrentException("the trainer"));
  }
}

}  // namespace taas
