// The trainer runtime's public API: subclass DistModel, call RunMain from main.
//
//   class MyModel : public taas::DistModel {
//     absl::Status build_model(taas::ModelBuilder& builder) override;  // variables, optimizer
//     taas::StepResult train(taas::Session& session) override;         // one iteration
//   };
//   int main(int argc, char** argv) { return taas::RunMain<MyModel>(argc, argv); }
//
// The same binary runs as parameter server, worker, chief or evaluator depending on TF_CONFIG
// (Kubeflow's format). The runtime does what distributed TensorFlow scripts wrote by hand:
// variable placement across parameter servers (replica_device_setter), synchronous replicas
// (SyncReplicasOptimizer), init/restore/checkpoint/summaries on the chief (Supervisor).
//
// Training loop on a worker (the chief is a worker too):
//   pull every registered Variable's value from the parameter servers
//   -> train(session) computes the loss and writes each Variable's `gradient`
//   -> push the gradients; the PS holding each shard applies the optimizer.
// Without parameter servers (a TF_CONFIG with no `ps`: all-reduce training, TensorFlow's
// MultiWorkerMirroredStrategy), every worker holds every variable: train(session) -> the gradients
// are averaged over all model replicas of the job -> each replica applies the optimizer to its own
// copy. The same model class serves both.
// train() never talks to the parameter servers itself: the runtime pulls before and pushes after
// every call. Training stops when the global step reaches max steps, or when train() sets
// StepResult::stop.
//
// Settings (flags override environment; see docs/trainer-runtime.md for the full list):
//   --max_steps / TF_MAX_STEPS, --model_dir / TF_LOGDIR,
//   --save_checkpoints_secs / TF_SAVE_CHECKPOINTS_SECS, --save_summaries_steps /
//   TF_SAVE_SUMMARIES_STEPS, --sync / TF_SYNC, --replicas_to_aggregate / TF_REPLICAS_TO_AGGREGATE,
//   --metrics_port / TAAS_METRICS_PORT. Arguments after `--` are left to the model (args()).
//
// Exit codes: 0 success; 1..127 permanent (bad configuration, bad model or data: a restart cannot
// help); kExitTransient (>= 128) for failures a restart can fix (peer lost, timeout), so Kubeflow's
// ExitCode restart policy restarts exactly those. A hook's error Status, StepResult::error or an
// exception it throws is the model's failure (kExitModelError): nothing escapes RunMain, and a
// failed exit writes one error line naming the cause, the step and the code.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/contract/exit_codes.h"
#include "taas/optim/optimizer.h"
#include "taas/runtime/engine.h"
#include "taas/tensor/variable.h"

namespace taas {

namespace data {
struct Batch;
class BatchStream;
}  // namespace data

// The exit codes (taas/contract/exit_codes.h, which the operator's and the launcher's restart
// rules read too).
using contract::kExitBadConfig;
using contract::kExitFenced;
using contract::kExitModelError;
using contract::kExitOk;
using contract::kExitTransient;

enum class Role { kPs, kWorker, kChief, kEvaluator };

// How the training replicas share their work (TensorFlow's distribution strategies).
enum class Strategy {
  // ParameterServerStrategy: variables live on the PS; workers pull values and push gradients.
  kParameterServer,
  // MultiWorkerMirroredStrategy: every worker holds every variable, gradients are averaged with a
  // ring all-reduce, and every worker applies the same update. A TF_CONFIG without `ps` means this.
  kCollective,
};

// What a replica knows about itself and the job; fixed for the life of the process.
struct TrainerInfo {
  Role role = Role::kWorker;
  int task_index = 0;             // Index within the replica type (TF_CONFIG task.index).
  int worker_rank = 0;            // Index among training replicas, chief first: shards the data.
  bool is_chief = false;          // The Chief/Master replica, else worker 0.
  bool sync = false;              // Synchronous replicas (averaged updates) or asynchronous.
  int replicas_to_aggregate = 1;  // Gradients averaged per sync step.
  int num_workers = 1;            // Training replicas: chief (if any) + workers.
  int num_ps = 0;
  Strategy strategy = Strategy::kParameterServer;
  // Model replicas inside this worker (collective training; MirroredStrategy's replicas, one per
  // GPU), each an instance of the model with its own slice of the work, and which one this is.
  int replicas_per_worker = 1;
  int replica_in_worker = 0;
  // Where this model replica computes (TAAS_DEVICE, else a visible GPU, else the CPU; see
  // docs/trainer-runtime.md "GPUs"): the runtime moves the variables build_model registers there,
  // and the model puts its batches there (data::PipelineOptions::device).
  Device device = Device::Cpu();
  std::int64_t max_steps = 0;
  std::string model_dir;          // Checkpoints and chief summaries; the evaluator's under eval/.
  std::vector<std::string> args;  // The model's own arguments (after `--`).
  // The process scores inputs with a checkpoint (`taas predict`, TAAS_PREDICT_OUTPUT) and never
  // trains: build_model need not open the training data. role is kEvaluator then.
  bool predicting = false;

  // Model replicas whose gradients every step averages, and this one's place among them (TF's
  // num_replicas_in_sync): shard the data by these, and split a worker's batch of B into
  // replicas_per_worker slices of B / replicas_per_worker.
  int num_replicas_in_sync() const { return num_workers * replicas_per_worker; }
  int replica_id_in_sync() const { return worker_rank * replicas_per_worker + replica_in_worker; }
};

// Handed to DistModel::build_model. Not thread-safe; valid only during build_model.
class ModelBuilder {
 public:
  struct State;
  explicit ModelBuilder(State* state);

  // Registers a trainable variable. The runtime keeps the pointer: the Variable must stay at its
  // address until RunMain returns. Its `value` holds the initial value (set by the layer's
  // initialiser); the chief pushes it to the parameter servers when the job has no checkpoint.
  // `gradient` must have the value's element count when train() returns. Names are unique.
  // A variable whose `trainable` is false (frozen) is registered as state instead (AddState):
  // it is in Session::state(), not Session::variables().
  void AddVariable(Variable* variable);
  void AddVariables(const std::vector<Variable*>& variables);

  // Registers state that is not trained: a BatchNorm's running statistics, a frozen parameter.
  // The runtime keeps the pointer (the Variable stays at its address until RunMain returns);
  // names are unique among variables and state together. State has no gradient and no
  // optimizer slots: it is never pushed, pulled for gradients or all-reduced. `value` stays
  // where the model keeps it, on the replica's device (the runtime never replaces it); train()
  // may update it (running statistics) or never touch it (a frozen parameter).
  void AddState(Variable* state);
  void AddStates(const std::vector<Variable*>& states);

  // The update rule the parameter servers apply (default: SGD with learning rate 0.01).
  void SetOptimizer(const optim::OptimizerConfig& config);

  // Examples per train() call on this replica, for examples/sec when StepResult::examples is 0.
  void SetBatchSize(std::int64_t batch_size);

  // What a stream's data::StreamOptions::on_skipped takes: each call gives that stream's count of
  // skipped bad records, and the runtime serves the sum over the process's streams on its metrics
  // port (contract::kSkippedRecordsTotalMetric). One per stream; thread-safe; valid while the
  // runtime runs the model.
  std::function<void(std::int64_t skipped)> SkippedRecordsCounter();

  // An engine that keeps tensors of its own (LibTorch: taas/torch/module.h registers itself
  // here) and needs the runtime's calls around each step (taas/runtime/engine.h). Not owned; one
  // per model (a second replaces the first).
  void SetEngine(EngineHooks* engine);

  const TrainerInfo& info() const;
  bool is_chief() const { return info().is_chief; }
  bool sync() const { return info().sync; }
  int replicas_to_aggregate() const { return info().replicas_to_aggregate; }
  // The live global step, updated by the runtime after every pull (TF's global_step tensor).
  const std::atomic<std::int64_t>& global_step() const;
  const Logger& logger() const;

 private:
  State* state_;
};

// Handed to train(), evaluate(), after_train() and init functions.
class Session {
 public:
  struct State;
  explicit Session(State* state);

  const TrainerInfo& info() const;
  bool is_chief() const { return info().is_chief; }
  // The global step at which the current variable values were pulled (or, in the evaluator, the
  // step of the checkpoint being evaluated).
  std::int64_t global_step() const;
  // train() calls completed by this replica.
  std::int64_t local_step() const;
  // The optimizer's learning rate at global_step().
  float learning_rate() const;
  // The variables build_model registered, in registration order, on the host: an init fn may set
  // them (a warm start, taas/runtime/warm_start.h), and evaluate() and after_train() see the
  // current values in them. For a replica on a device these are host copies of the model's
  // variables (which stay on the device), not updated during train(): a model computes on its
  // own variables.
  const std::vector<Variable*>& variables() const;
  // The state build_model registered (ModelBuilder::AddState), in registration order, on the host,
  // as variables() is for the trainable ones: for a replica on a device, host mirrors brought up
  // to date before the init fn, evaluate() and after_train(); an init fn may set them (a warm
  // start restoring a frozen trunk). See docs/trainer-runtime.md "State that is not trained".
  const std::vector<Variable*>& state() const;
  const Logger& logger() const;
  // Reports the job's final metrics (a test accuracy, Keras's model.evaluate results): what the
  // job's result is. Call from after_train; the chief's final evaluate() (TAAS_EVAL_ON_CHIEF)
  // reports its metrics this way by itself. A name reported twice keeps the last value. The
  // chief's count: once after_train returned, the runtime logs them ("final metrics"), writes them
  // as TensorBoard scalars "final/<name>" at the final step, serves them as
  // taas_final_metric{metric="<name>"}, and leaves them in its container's termination message,
  // where `taas run`'s last line, the TFJob's status (`kubectl get tfjobs`) and the web UI read
  // them. A name must be 1-64 of letters, digits, _ . / - and a value finite, at most 16 of them
  // (taas/job_report/job_report.h): others are skipped with a warning.
  void ReportFinalMetrics(const std::map<std::string, double>& metrics);

 private:
  State* state_;
};

// What one train() call returns.
struct StepResult {
  float loss = 0.0f;
  std::int64_t examples = 0;  // Examples in this step; 0 means the batch size set in build_model.
  bool stop = false;          // Ask the runtime to end training (this replica; the chief ends it
                              // for all).
  std::map<std::string, float> scalars;  // Extra TensorBoard scalars (chief writes them).
  // A model on a device leaves its loss there, so that a step never waits for the device: a
  // one-element tensor on the replica's device (usually a view, Tensor::Slice, of the model's
  // own buffer, such as nn::SoftmaxCrossEntropy::Compute's), valid until the next train() call.
  // When set, `loss` is not read. The runtime copies it to the host only when it logs (every
  // log_steps) or the chief writes summaries.
  std::optional<Tensor> device_loss;
  // The same for extra scalars, copied to the host only when the chief writes summaries.
  std::map<std::string, Tensor> device_scalars;
  // A failure this step cannot recover from (a batch of bad data): the runtime exits with
  // kExitModelError and this status in its one line instead of pushing the gradients.
  absl::Status error;
};

// What `taas predict` (TAAS_PREDICT_INPUT, docs/trainer-runtime.md "Predict") asks a model to
// read: the patterns as the user gave them, in batches of batch_size (the last one smaller), in
// order, not shuffled, not repeated, onto `device` (the model's).
struct PredictRequest {
  std::vector<std::string> inputs;
  std::int64_t batch_size = 100;
  Device device = Device::Cpu();
};

// What the model computed for one batch of inputs.
struct PredictOutputs {
  // [batch, k] (or [batch], read as [batch, 1]) on any device: a classifier's logits, a
  // regression's values; one row per example of the batch, the same k for every batch.
  Tensor outputs;
  // The outputs are logits of classes: each example's predicted class is the argmax of its row
  // (the first of equal ones), written beside them.
  bool classes = false;
};

// Runs on the chief after variables are initialised and before other replicas start, only when no
// checkpoint of this job exists (a checkpoint always wins). It may set Variable values (warm
// start; taas::WarmStart in taas/runtime/warm_start.h makes one from another job's checkpoint, as
// TensorFlow's WarmStartSettings); the runtime pushes them afterwards.
using InitFn = std::function<absl::Status(Session&)>;

class DistModel {
 public:
  virtual ~DistModel() = default;

  // Creates inputs, variables, loss and optimizer; registers variables with the builder. Called
  // once on workers, chief and evaluator (never on parameter servers). An error is permanent.
  virtual absl::Status build_model(ModelBuilder& builder) = 0;

  // Optional warm start; empty by default.
  virtual InitFn get_init_fn() { return {}; }

  // One training iteration: variable values are fresh; write every Variable's gradient.
  virtual StepResult train(Session& session) = 0;

  // Scores the variables as they are; returns metrics such as {"accuracy": 0.91, "loss": 0.25},
  // written as TensorBoard scalars ("accuracy" also feeds taas_eval_accuracy). The default
  // returns nothing. Called in two places:
  //  - an Evaluator replica (the TFJob's `Evaluator` replica spec), with each new checkpoint's
  //    values; its scalars go under <model dir>/eval/;
  //  - the chief, when TAAS_EVAL_ON_CHIEF (--eval_on_chief) is `end` (once training ends, after
  //    the final checkpoint, before after_train) or N (also every N global steps, between two
  //    train() calls); its scalars go under <model dir>/eval_chief/.
  // Never on other workers or PS; with neither an Evaluator nor the setting it is never called.
  // A model that cannot score (its test set is missing or bad) returns the error, naming what and
  // the fix; an exception counts the same. Either is the model's failure (kExitModelError) on
  // the chief and on the evaluator alike, and a failed evaluation on the chief is the job's
  // result: its report names the error, so `taas run`'s last line and the TFJob's status say
  // why it failed instead of "succeeded with no metrics" (docs/trainer-runtime.md, "Evaluating
  // on the chief").
  virtual absl::StatusOr<std::map<std::string, double>> evaluate(Session& session);

  // After training, with the final parameter values pulled (best effort on non-chief workers).
  virtual void after_train(Session& session, bool is_chief);

  // Predicting (`taas predict`, taas::Predict in taas/runtime/predict.h): the runtime builds the
  // model (TrainerInfo::predicting), restores a checkpoint into its variables and state as the
  // evaluator does, then calls predict_inputs once and predict once per batch, with the values
  // evaluate() would score (a model that evaluates other weights, such as moving averages, swaps
  // them in predict as it does in evaluate). predict_inputs opens the request's files with any
  // reader of taas/data (the same the model evaluates with) and returns its batches;
  // Batch::labels (or targets), when the inputs have them, are written beside the predictions.
  // Both default to Unimplemented ("this model does not predict"); an error is the model's, with
  // the file or batch named.
  virtual absl::StatusOr<std::unique_ptr<data::BatchStream>> predict_inputs(
      Session& session, const PredictRequest& request);
  virtual absl::StatusOr<PredictOutputs> predict(Session& session, const data::Batch& batch);
};

// Runs the replica TF_CONFIG names; returns the process exit code. `factory` is called once per
// model replica (TAAS_REPLICAS_PER_WORKER under all-reduce, else once), never on a parameter
// server.
int RunMain(int argc, char** argv, std::function<std::unique_ptr<DistModel>()> factory);

template <class Model>
int RunMain(int argc, char** argv) {
  return RunMain(argc, argv, [] { return std::unique_ptr<DistModel>(new Model()); });
}

}  // namespace taas
