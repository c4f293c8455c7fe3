// Private to the runtime: the state behind ModelBuilder and Session, and the role drivers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "replica_state.h"
#include "taas/base/stall_watch.h"
#include "taas/base/termination.h"
#include "taas/config/config.h"
#include "taas/contract/model_dir.h"
#include "taas/metrics/metrics.h"
#include "taas/runtime/dist_model.h"
#include "taas/runtime/predict.h"

namespace taas {

// The bad records every input stream of the process skipped (ModelBuilder::SkippedRecordsCounter),
// summed under one lock so that the counter served never goes back.
struct SkippedRecords {
  std::mutex mu;
  std::int64_t total = 0;  // guarded by mu
};

struct ModelBuilder::State {
  const TrainerInfo* info = nullptr;
  const Logger* logger = nullptr;
  const std::atomic<std::int64_t>* global_step = nullptr;
  std::vector<Variable*> variables;
  // What AddState registered; once BuildModel returns, on the host (mirrors for a device, as for
  // variables: replica_state.h).
  std::vector<Variable*> states;
  optim::OptimizerConfig optimizer;
  std::int64_t batch_size = 0;
  EngineHooks* engine = nullptr;
  std::vector<std::string> errors;            // Reported after build_model returns.
  metrics::Gauges* gauges = nullptr;          // the Context's
  SkippedRecords* skipped_records = nullptr;  // the Context's
};

struct Session::State {
  const TrainerInfo* info = nullptr;
  const Logger* logger = nullptr;
  std::int64_t global_step = 0;
  std::int64_t local_step = 0;
  float learning_rate = 0.0f;
  const std::vector<Variable*>* variables = nullptr;  // the registered variables, on the host
  const std::vector<Variable*>* states = nullptr;     // the registered state, on the host
  // Where the replica's variables live (replica_state.h).
  runtime::ReplicaState* replica = nullptr;
  // What ReportFinalMetrics reported (the chief's evaluation at the end too).
  std::map<std::string, double> final_metrics;
};

namespace runtime {

// Everything a role driver needs; owned by RunMain.
struct Context {
  const config::RuntimeConfig* config = nullptr;
  Logger logger;
  metrics::Gauges* gauges = nullptr;
  // Long waits on a peer (TAAS_STALL_SECS); null when they are not watched.
  StallWatch* stalls = nullptr;
  // SIGTERM and SIGINT, read between steps; null where they are not handled (a test's driver).
  const TerminationSignals* termination = nullptr;
  std::function<std::unique_ptr<DistModel>()> factory;
  // The last global step this replica saw, for the line that explains a failed exit.
  std::atomic<std::int64_t> global_step{0};
  SkippedRecords skipped_records;
};

// Once SIGTERM or SIGINT came: the replica's deadline, TAAS_TERMINATION_GRACE_SECS from the
// signal. nullopt while none came.
std::optional<TerminationDeadline> TerminationRequested(const Context& ctx);
// Logs the one line of a replica that ends on that signal (`exiting: terminated by SIGTERM`, a
// warning, with `what` it did and the seconds since the signal) and returns the transient code.
int ExitTerminated(const Context& ctx, const TerminationDeadline& deadline,
                   std::int64_t global_step, const std::string& what);

int RunParameterServer(Context& ctx);
int RunTrainer(Context& ctx, const std::vector<std::string>& ps_addresses);
// All-reduce training (Strategy::kCollective) on a worker or the chief.
int RunCollectiveTrainer(Context& ctx);
// The host this process's servers bind: a numeric IPv4 host from TF_CONFIG as is (127.0.0.1 stays
// on loopback); a name (a Kubernetes service) means every interface.
std::string BindHost(const config::RuntimeConfig& cfg);
int RunEvaluator(Context& ctx);
// Predicting (config predict_output set; predict.cc): restores the checkpoint, runs the model's
// predict on its predict_inputs and writes the output file; the exit code.
int RunPredict(Context& ctx);

// Chooses the device of each model replica (config::ChooseDevices, with the CUDA devices the
// registered CUDA memory sees, if this binary has one), readies each GPU (its engine's probe:
// a device this binary has no code for fails here) and sets cfg.devices, info.device and, under
// all-reduce, info.replicas_per_worker (one per GPU). Returns the devices for the startup line
// ("cuda:0 NVIDIA H100 80GB HBM3 (sm_90, 79 GiB); cuda:1 ... (chosen by what)"); on a failure
// logs the one line (exit code kExitBadConfig) and leaves cfg.devices empty. When `reported` is
// given, also appends each model replica's {device, name} labels for the device info metric.
std::string ChooseAndPrepareDevices(config::RuntimeConfig& cfg, const Logger& logger,
                                    std::vector<metrics::Gauges::Labels>* reported = nullptr);
// The second half of that: readies the devices of `choice` (non-empty) and sets `cfg` from them.
std::string PrepareDevices(config::RuntimeConfig& cfg, const config::DeviceChoice& choice,
                           const Logger& logger,
                           std::vector<metrics::Gauges::Labels>* reported = nullptr);
// Lowers this process's CPU priority to the configured evaluator_nice (never raises it), before
// any thread starts, so every thread of the evaluator inherits it. Returns the nice value now.
int YieldCoresToTraining(const config::RuntimeConfig& config, const Logger& logger);

// Builds the model (the factory, then build_model, which sees `info`: it must outlive the model)
// and validates what it registered. An error (a Status the model returned, an exception it threw,
// or what it registered) is permanent.
struct BuiltModel {
  std::unique_ptr<DistModel> model;
  ModelBuilder::State state;
  std::atomic<std::int64_t> global_step{0};
  // The replica's variables in fused buffers on its device, and what state.variables points at
  // (the model's own variables on the host, host mirrors of them for a device: replica_state.h).
  std::unique_ptr<ReplicaState> replica;
};
absl::StatusOr<std::unique_ptr<BuiltModel>> BuildModel(Context& ctx, const TrainerInfo& info);

// taas::Predict with the context's logger and factory, for the model `info` describes (its
// predicting set): RunPredict's and taas::Predict's one path.
absl::StatusOr<PredictSummary> PredictWith(Context& ctx, const TrainerInfo& info,
                                           const PredictOptions& options);

// One train() call of `built` through `session`, into `result`, with what every driver does
// around it: the engine's hooks before and after (taas/runtime/engine.h), the step's own error,
// and the check that the model wrote into the runtime's views (ReplicaState::CheckViews); the
// replica's state that is not trained is marked changed on the device (no copy). An
// error is the model's failure; the caller owns its values and gradients as before.
absl::Status TrainOnce(BuiltModel& built, Session& session, StepResult& result);

// Seconds since `start`.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The final global step the chief's done marker (contract::kTrainingDoneFile) in `model_dir`
// holds, if there is one.
inline std::optional<std::int64_t> DoneStep(const std::string& model_dir) {
  std::ifstream in(std::filesystem::path(model_dir) / contract::kTrainingDoneFile);
  std::int64_t step;
  if (in >> step) return step;
  return std::nullopt;
}

}  // namespace runtime
}  // namespace taas
