// Testing helpers for model authors: check a model's gradients by finite differences through its
// own train(), run it for N steps in one process, round-trip its variables through a checkpoint.
// Each returns an absl::Status or a result struct, so any test framework can use them:
//
//   auto check = taas::testing::CheckGradients([] { return std::make_unique<MyModel>(); });
//   REQUIRE(check.ok());
//   CHECK_MESSAGE(check->Within(1e-2).ok(), check->Within(1e-2).ToString());
//
// They build the model as RunMain does (the factory, build_model) as the chief of a one-worker
// all-reduce job, with no parameter servers and no sockets, and never read the environment.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "taas/runtime/local.h"

namespace taas::testing {

// ---- Gradients by finite differences ------------------------------------------------------------
//
// train() is the model's loss and its gradients at once, so the check calls it: once for the
// analytic gradients, then twice per checked element with that element moved by +-epsilon, reading
// StepResult::loss: numeric = (loss(x + eps) - loss(x - eps)) / (2 eps). Every call sees the same
// global_step and local_step, so the model must compute the same loss for the same variable values
// at the same steps: pick the batch from session.global_step() (as the runtime's linear-regression
// test model does) or use a fixed batch in the test. A model that draws each batch from a
// pipeline is not deterministic across calls: rewind its input in `before_train`, or build it with
// a fixed batch. The check calls train() twice at the starting values first and fails with
// FailedPrecondition when the two losses differ, so a non-deterministic model is reported as such
// instead of as wrong gradients. Losses are float32: use an epsilon near 1e-3 and a tolerance
// near 1e-2 for float models.
struct GradientCheckOptions {
  double epsilon = 1e-3;
  // Elements checked per variable: all when the variable has at most this many, else this many
  // chosen by a generator seeded with `seed` (the same run after run).
  std::int64_t max_elements_per_variable = 64;
  std::uint64_t seed = 1;
  // The session's steps for every train() call.
  std::int64_t global_step = 0;
  std::int64_t local_step = 0;
  // Called before every train() call (e.g. to rewind the model's input); may be empty.
  std::function<void(DistModel&)> before_train = {};
  // The model's arguments after `--`.
  std::vector<std::string> model_args = {};
  // Relative errors divide by max(|analytic|, |numeric|, relative_floor), so gradients near zero
  // are compared absolutely.
  double relative_floor = 1e-3;
};

struct VariableGradientError {
  std::string name;
  std::int64_t elements_checked = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;
  // The element with the largest relative error, and both gradients there.
  std::int64_t worst_index = 0;
  double analytic = 0;
  double numeric = 0;
};

struct GradientCheck {
  float loss = 0;                                // at the starting values
  std::vector<VariableGradientError> variables;  // in registration order

  // The largest relative error over every variable.
  double max_rel_error() const;
  // OK when every checked element's relative error is at most `tolerance`; else
  // FailedPrecondition naming the worst variable, element and both gradients.
  absl::Status Within(double tolerance) const;
};

absl::StatusOr<GradientCheck> CheckGradients(const ModelFactory& factory,
                                             const GradientCheckOptions& options = {});

// ---- N steps in one process --------------------------------------------------------------------
//
// Runs the real all-reduce trainer (taas/runtime/local.h) with one worker and one replica: the
// same start state (initialisers, get_init_fn), train(), the optimizer applied in this process,
// checkpoints and after_train as in a job, deterministically when train() is (no threads race
// and no sockets are involved).
struct RunStepsOptions {
  // Checkpoints and summaries go here; empty: a temporary dir, removed afterwards. A dir that
  // already holds a checkpoint resumes from it, as a job would; one whose run already reached
  // `steps` (TRAINING_DONE) is FailedPrecondition.
  std::string model_dir = {};
  // Global steps between checkpoints (0: only the final one).
  std::int64_t save_checkpoints_steps = 0;
  // More runtime settings, as RunMain takes them ("--replicas_per_worker=2").
  std::vector<std::string> flags = {};
  std::vector<std::string> model_args = {};
  // The trainer's log; null: captured and quoted in the error when the run fails.
  std::FILE* log = nullptr;
};

struct RunStepsResult {
  std::vector<float> losses;  // train()'s loss at each step of the first model replica
  std::map<std::string, std::vector<float>> variables;  // the final values, by name
  std::map<std::string, std::vector<float>> state;      // the final state (ModelBuilder::AddState)
  std::int64_t global_step = 0;                         // where training ended
};

// Runs until the global step reaches `steps` (or train() sets stop). A run that fails is
// Internal with the trainer's exit code and its error line.
absl::StatusOr<RunStepsResult> RunSteps(const ModelFactory& factory, std::int64_t steps,
                                        const RunStepsOptions& options = {});

// ---- Checkpoint round trip ---------------------------------------------------------------------
//
// Builds the model, gives every variable and state element (ModelBuilder::AddState) a distinct
// value (seeded; variables from [-1, 1), state from [0.5, 1.5), positive as a running variance
// must be), saves them as a checkpoint in a temporary dir, builds a second instance and
// restores the checkpoint into it as the evaluator and a restarted job do, then compares every
// variable and state bit for bit: catches names that change between instances, variables or
// state registered in another order or size, and values that do not survive. With
// `compare_evaluate`, evaluate() must also return the same metrics on both (state the model keeps
// outside what it registered would differ).
struct RoundTripOptions {
  std::uint64_t seed = 1;
  bool compare_evaluate = false;
  std::vector<std::string> model_args = {};
};

absl::Status CheckpointRoundTrip(const ModelFactory& factory, const RoundTripOptions& options = {});

}  // namespace taas::testing
