// A model in this process with no cluster, for tests and tools (taas::testing builds on it):
// LocalModel builds a model as the runtime does and lets the caller drive its hooks;
// RunLocalTraining runs the real all-reduce trainer for one worker and one model replica, so
// there are no parameter servers and no sockets, and the optimizer is applied in this process.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "taas/runtime/dist_model.h"

namespace taas {

using ModelFactory = std::function<std::unique_ptr<DistModel>()>;

// One model built in this process as the chief of a one-worker all-reduce job: the factory, then
// build_model, then the checks RunMain makes (unique names, an optimizer CreateOptimizer accepts).
// Not thread-safe. The model sees `model_args` as its arguments after `--`.
class LocalModel {
 public:
  // The model's Status, an exception it threw (as a Status naming the hook) or what it registered
  // wrongly is InvalidArgument, as RunMain reports it.
  static absl::StatusOr<std::unique_ptr<LocalModel>> Build(
      ModelFactory factory, std::vector<std::string> model_args = {});
  ~LocalModel();
  LocalModel(const LocalModel&) = delete;
  LocalModel& operator=(const LocalModel&) = delete;

  DistModel& model();
  const std::vector<Variable*>& variables() const;
  const optim::OptimizerConfig& optimizer() const;
  Session& session();

  // What session() reports from now on: the global step, the local step (train() calls before
  // this one) and the learning rate at that global step.
  void SetSteps(std::int64_t global_step, std::int64_t local_step);
  // One train() call as the runtime makes it: an exception it throws, or StepResult::error, is
  // the Status. Gradients are left in the variables.
  absl::StatusOr<StepResult> Train();
  // evaluate() with the variables as they are.
  absl::StatusOr<std::map<std::string, double>> Evaluate();
  // Writes the variables (no optimizer slots) and the state (ModelBuilder::AddState) as a
  // checkpoint at `global_step` into `model_dir`, as the chief does; returns its prefix.
  absl::StatusOr<std::string> SaveCheckpoint(const std::string& model_dir,
                                             std::int64_t global_step);
  // Loads the newest checkpoint of `model_dir` that verifies into the variables and the state, as
  // the evaluator does: InvalidArgument naming a variable the checkpoint lacks or a variable or
  // state it holds at another size, NotFound when there is none. State it lacks (a checkpoint
  // written before the model registered it) keeps its values, with a warning.
  absl::Status RestoreCheckpoint(const std::string& model_dir);

 private:
  struct Impl;
  explicit LocalModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Runs the all-reduce trainer (as RunMain does for a TF_CONFIG without `ps`) in this process: one
// worker, one replica on the CPU unless `flags` ask for more (--replicas_per_worker) or for the
// GPUs (--device=cuda: one replica per visible GPU, as in a job), the chief's start
// state, checkpoints, summaries, TRAINING_DONE and after_train as in a job. `flags` are RunMain's
// settings ("--max_steps=5", "--model_dir=DIR", then "--" and the model's arguments); the process
// environment is not read. Log lines go to `log` (null: stdout). Returns the exit code RunMain
// would.
int RunLocalTraining(const std::vector<std::string>& flags, ModelFactory factory, std::FILE* log);
// The same with one model replica on each of `devices` (non-empty), chosen by the caller instead
// of --device: for tests on a device no job can name (the test device's "sim:0", "sim:1":
// taas::sim_device). A device whose engine this binary lacks fails to prepare (kExitBadConfig).
int RunLocalTraining(const std::vector<std::string>& flags, ModelFactory factory, std::FILE* log,
                     const std::vector<Device>& devices);

}  // namespace taas
