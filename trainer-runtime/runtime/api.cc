#include <memory>
#include <mutex>
#include <set>

#include "exit_code.h"
#include "internal.h"
#include "taas/contract/metric_names.h"
#include "taas/data/batch.h"
#include "taas/job_report/job_report.h"
#include "taas/runtime/model_args.h"

namespace taas {

ModelBuilder::ModelBuilder(State* state) : state_(state) {}

void ModelBuilder::AddVariable(Variable* variable) {
  if (variable == nullptr) {
    state_->errors.push_back("AddVariable got a null Variable");
    return;
  }
  // A frozen variable takes the path of all state (the torch engine's frozen parameters too):
  // one rule for what the parameter servers and the collectives never see.
  if (!variable->trainable) {
    AddState(variable);
    return;
  }
  state_->variables.push_back(variable);
}

void ModelBuilder::AddVariables(const std::vector<Variable*>& variables) {
  for (auto* v : variables) AddVariable(v);
}

void ModelBuilder::AddState(Variable* state) {
  if (state == nullptr) {
    state_->errors.push_back("AddState got a null Variable");
    return;
  }
  state_->states.push_back(state);
}

void ModelBuilder::AddStates(const std::vector<Variable*>& states) {
  for (auto* s : states) AddState(s);
}

void ModelBuilder::SetOptimizer(const optim::OptimizerConfig& config) {
  state_->optimizer = config;
}

void ModelBuilder::SetBatchSize(std::int64_t batch_size) { state_->batch_size = batch_size; }

std::function<void(std::int64_t)> ModelBuilder::SkippedRecordsCounter() {
  metrics::Gauges* gauges = state_->gauges;
  SkippedRecords* sum = state_->skipped_records;
  if (gauges != nullptr) {
    gauges->DescribeCounter(contract::kSkippedRecordsTotalMetric,
                            "Bad records this replica's input streams skipped");
    std::lock_guard<std::mutex> lock(sum->mu);
    gauges->Set(contract::kSkippedRecordsTotalMetric, static_cast<double>(sum->total));
  }
  // The stream's own count so far: each call adds what it grew by.
  auto counted = std::make_shared<std::int64_t>(0);
  return [gauges, sum, counted](std::int64_t skipped) {
    std::lock_guard<std::mutex> lock(sum->mu);
    sum->total += skipped - *counted;
    *counted = skipped;
    if (gauges != nullptr) {
      gauges->Set(contract::kSkippedRecordsTotalMetric, static_cast<double>(sum->total));
    }
  };
}

void ModelBuilder::SetEngine(EngineHooks* engine) { state_->engine = engine; }

const TrainerInfo& ModelBuilder::info() const { return *state_->info; }

const std::atomic<std::int64_t>& ModelBuilder::global_step() const { return *state_->global_step; }

const Logger& ModelBuilder::logger() const { return *state_->logger; }

Session::Session(State* state) : state_(state) {}
const TrainerInfo& Session::info() const { return *state_->info; }
std::int64_t Session::global_step() const { return state_->global_step; }
std::int64_t Session::local_step() const { return state_->local_step; }
float Session::learning_rate() const { return state_->learning_rate; }
const std::vector<Variable*>& Session::variables() const {
  static const std::vector<Variable*> kNone;
  return state_->variables ? *state_->variables : kNone;
}
const std::vector<Variable*>& Session::state() const {
  static const std::vector<Variable*> kNone;
  return state_->states ? *state_->states : kNone;
}
const Logger& Session::logger() const { return *state_->logger; }

void Session::ReportFinalMetrics(const std::map<std::string, double>& metrics) {
  for (const auto& [name, value] : metrics) {
    absl::Status usable = job_report::CheckMetric(name, value);
    if (usable.ok() && state_->final_metrics.size() >= job_report::kMaxMetrics &&
        !state_->final_metrics.contains(name)) {
      usable = absl::ResourceExhaustedError("final metric " + name + ": already " +
                                            std::to_string(job_report::kMaxMetrics) +
                                            " final metrics, the most a job reports");
    }
    if (!usable.ok()) {
      state_->logger->Warning("final metric skipped", {{"error", usable.ToString()}});
      continue;
    }
    state_->final_metrics[name] = value;
  }
}

absl::Status ParseModelArgs(const flags::FlagSet& flags, const std::vector<std::string>& args) {
  auto parsed = flags.Parse(args);
  absl::Status status = parsed.status();
  if (status.ok() && parsed->help) {
    status = absl::InvalidArgumentError(
        "--help: a model prints no usage; its arguments are "
        "the flags its documentation lists");
  }
  if (status.ok() && !parsed->positional.empty()) {
    status = absl::InvalidArgumentError(parsed->positional.front() +
                                        ": expected --name=value, got an argument without a name");
  }
  if (status.ok()) return status;
  return absl::InvalidArgumentError("model arguments: " + std::string(status.message()));
}

absl::StatusOr<std::map<std::string, double>> DistModel::evaluate(Session&) {
  return std::map<std::string, double>{};
}
void DistModel::after_train(Session&, bool) {}

absl::StatusOr<std::unique_ptr<data::BatchStream>> DistModel::predict_inputs(
    Session&, const PredictRequest&) {
  return absl::UnimplementedError(
      "this model does not predict: its DistModel overrides neither predict_inputs nor predict "
      "(docs/trainer-runtime.md, \"Predict\")");
}
absl::StatusOr<PredictOutputs> DistModel::predict(Session&, const data::Batch&) {
  return absl::UnimplementedError(
      "this model does not predict: its DistModel does not override predict "
      "(docs/trainer-runtime.md, \"Predict\")");
}

namespace runtime {

absl::StatusOr<std::unique_ptr<BuiltModel>> BuildModel(Context& ctx, const TrainerInfo& info) {
  auto built = std::make_unique<BuiltModel>();
  built->state.info = &info;
  built->state.logger = &ctx.logger;
  built->state.global_step = &built->global_step;
  built->state.gauges = ctx.gauges;
  built->state.skipped_records = &ctx.skipped_records;
  TAAS_RETURN_IF_ERROR(CallModel("the model factory", [&] {
    built->model = ctx.factory();
    return absl::OkStatus();
  }));
  if (!built->model) return absl::InvalidArgumentError("the model factory returned no model");
  ModelBuilder builder(&built->state);
  TAAS_RETURN_IF_ERROR(
      CallModel("build_model()", [&] { return built->model->build_model(builder); }));
  // One namespace for variables and state: both are checkpoint entries and warm-start keys.
  std::set<std::string> names;
  for (auto* v : built->state.variables) {
    if (v->name.empty()) built->state.errors.push_back("a registered Variable has no name");
    if (!names.insert(v->name).second) {
      built->state.errors.push_back("Variable name " + v->name + " is registered twice");
    }
  }
  for (auto* s : built->state.states) {
    if (s->name.empty()) built->state.errors.push_back("a registered state has no name");
    if (!names.insert(s->name).second) {
      built->state.errors.push_back("state " + s->name +
                                    ": the name is registered twice (variables and state share "
                                    "one namespace: rename one)");
    }
    if (s->value.device() != info.device) {
      built->state.errors.push_back("state " + s->name + " is on " + DeviceName(s->value.device()) +
                                    ", the replica computes on " + DeviceName(info.device) +
                                    ": create it on ModelBuilder::info().device");
    }
  }
  if (built->state.variables.empty() && info.role != Role::kEvaluator) {
    built->state.errors.push_back(
        "build_model registered no variables (ModelBuilder::AddVariable)");
  }
  auto optimizer = optim::CreateOptimizer(built->state.optimizer);
  if (!optimizer.ok()) built->state.errors.push_back(std::string(optimizer.status().message()));
  if (!built->state.errors.empty()) {
    std::string all;
    for (const auto& e : built->state.errors) all += (all.empty() ? "" : "; ") + e;
    return absl::InvalidArgumentError("invalid model: " + all);
  }
  TAAS_ASSIGN_OR_RETURN(built->replica, ReplicaState::Create(built->state.variables,
                                                             built->state.states, info.device));
  if (EngineHooks* engine = built->state.engine) {
    absl::Status placed =
        CallModel("the engine's VariablesPlaced()", [&] { return engine->VariablesPlaced(); });
    if (!placed.ok()) return absl::InvalidArgumentError("invalid model: " + placed.ToString());
  }
  return built;
}

absl::Status TrainOnce(BuiltModel& built, Session& session, StepResult& result) {
  EngineHooks* engine = built.state.engine;
  if (engine != nullptr) {
    TAAS_RETURN_IF_ERROR(
        CallModel("the engine before train()", [&] { return engine->BeforeStep(); }));
  }
  // train() may update the state on the device (running statistics): from here the host's is
  // stale, and nothing is copied until the host reads it (replica_state.h).
  built.replica->StateChangedOnDevice();
  TAAS_RETURN_IF_ERROR(CallModel("train()", [&] {
    try {
      result = built.model->train(session);
    } catch (const std::exception& e) {
      if (engine == nullptr) throw;
      return absl::InternalError("train() threw: " + engine->ExceptionMessage(e));
    }
    return absl::OkStatus();
  }));
  TAAS_RETURN_IF_ERROR(result.error);
  if (engine != nullptr) {
    TAAS_RETURN_IF_ERROR(
        CallModel("the engine after train()", [&] { return engine->AfterStep(); }));
  }
  return built.replica->CheckViews();
}

}  // namespace runtime
}  // namespace taas
