// Private to the runtime: what the chief does whatever the strategy. It starts training from the
// newest valid checkpoint, else from the init fn's warm start, else from the initialisers; after
// each step it writes TensorBoard summaries and checkpoints on schedule. Where the state lives
// (the parameter servers, or every worker under all-reduce) is the caller's business.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "internal.h"
#include "schedule.h"
#include "taas/checkpoint/checkpoint.h"
#include "taas/job_report/job_report.h"
#include "taas/summary/event_writer.h"

namespace taas::runtime {

// The variables' values and their optimizer slots at a global step. The state that is not
// trained is not here: it is the chief's own (its host state, where LoadTrainingState writes it
// and CheckpointEntries reads it).
struct TrainingState {
  std::int64_t global_step = 0;
  std::vector<std::vector<float>> values;              // per variable
  std::vector<std::vector<std::vector<float>>> slots;  // per variable, slot_count each
  bool from_checkpoint = false;
};

// The state training starts from: the newest checkpoint that verifies (it always wins), else the
// variables' current values after the model's init fn ran (warm start; only when `first_time`),
// else their current values at `fallback_step` (a restore with no checkpoint). A checkpoint of
// another model, or an init fn that fails, is InvalidArgument (permanent). The model's state that
// is not trained is left in its host state (built.state.states, brought up to date first), from
// the checkpoint (RestoreState) or as the init fn set it, and marked changed on the host.
absl::StatusOr<TrainingState> LoadTrainingState(Context& ctx, BuiltModel& built, Session& session,
                                                Session::State& session_state, int slot_count,
                                                bool first_time, std::int64_t fallback_step);

// The checkpoint entries of variables and their slots (slot k of variable v is "<v>/slot_<k>"),
// as TrainingState holds them, with the variables' shapes, then of the state that is not
// trained, one entry each under its name and shape, from `states` (host values: the chief's own).
std::vector<checkpoint::Entry> CheckpointEntries(const std::vector<Variable*>& variables,
                                                 const std::vector<Variable*>& states,
                                                 TrainingState state);

// Copies a checkpoint's values into the model's variables (the evaluator, a local model);
// InvalidArgument naming the first variable it lacks or holds at another size.
absl::Status RestoreVariables(const checkpoint::Checkpoint& c,
                              const std::vector<Variable*>& variables);

// Copies a checkpoint's state entries into `states` (host values): every restore of a job's
// checkpoint (resume, evaluator, local model). State the checkpoint lacks (one written before
// the model registered it) keeps its values, with one warning naming every missing entry; an
// entry of another size is InvalidArgument naming it and both sizes, and then nothing is copied.
absl::Status RestoreState(const checkpoint::Checkpoint& c, const std::vector<Variable*>& states,
                          const Logger& logger);

// A step's loss on the host: its device_loss copied there (what reading a loss on a device costs),
// else `loss`.
absl::StatusOr<float> HostLoss(const StepResult& result);
// A step's extra scalars on the host: `scalars`, and each of `device_scalars` copied there.
absl::StatusOr<std::map<std::string, float>> HostScalars(const StepResult& result);

// The chief's summaries and checkpoints, on the schedule the configuration sets.
class ChiefSchedule {
 public:
  using SaveCheckpoint = std::function<absl::Status(std::int64_t global_step)>;
  // The step's loss on the host, read only when a summary is due.
  using ReadLoss = std::function<absl::StatusOr<float>()>;

  // `save` writes a checkpoint at the step it is given (and calls CheckpointIsAt). `variables`
  // are `replica`'s host variables (the histograms read them, up to date through `replica`).
  ChiefSchedule(Context& ctx, const std::vector<Variable*>& variables, ReplicaState& replica,
                const optim::Optimizer& optimizer, SaveCheckpoint save);

  // Opens the summary writer; the first window starts at `global_step`, and `checkpoint_step` is
  // the step of the checkpoint training starts from (-1 if none).
  void Start(std::int64_t global_step, std::int64_t checkpoint_step);
  // Called after every step: summaries and checkpoints when due (the first summary at the first
  // step after Start, then on schedule). A summary holds the loss at its
  // step (`loss`, as TensorFlow's summary of a loss tensor does), the step's extra scalars from
  // `result`, the learning rate, and examples/s and steps/s over the steps since the last one.
  void AfterStep(std::int64_t global_step, std::int64_t examples, const ReadLoss& loss,
                 const StepResult& result);
  // The newest checkpoint, just written or restored, is at `global_step` (-1: there is none);
  // the time between checkpoints counts from now.
  void CheckpointIsAt(std::int64_t global_step);
  // The step of the last checkpoint written or restored (-1: none).
  std::int64_t last_checkpoint_step() const { return last_checkpoint_step_; }
  // Writes `scalars` at `global_step` into the chief's summaries (nothing when they are off).
  void WriteScalars(std::int64_t global_step, const summary::Scalars& scalars);

 private:
  using Clock = std::chrono::steady_clock;

  void WriteSummary(std::int64_t global_step, const ReadLoss& loss, const StepResult& result);

  Context& ctx_;
  const std::vector<Variable*>& variables_;
  ReplicaState& replica_;
  const optim::Optimizer& optimizer_;
  SaveCheckpoint save_;
  std::unique_ptr<summary::EventWriter> events_;
  // save_checkpoints_steps/secs, save_summaries_steps/secs: the one rule of schedule.h.
  StepsOrSecsSchedule checkpoints_;
  StepsOrSecsSchedule summaries_;
  std::int64_t last_checkpoint_step_ = -1;
  Clock::time_point window_start_ = Clock::now();
  std::int64_t window_step_ = 0;
  std::int64_t window_examples_ = 0;
};

// An evaluation's metrics, published: TensorBoard scalars at `global_step` in `events` (opened
// in `dir` on first use), `accuracy` into taas_eval_accuracy. Returns them as "name=value ..."
// for the log line.
std::string PublishEvaluation(Context& ctx, std::unique_ptr<summary::EventWriter>& events,
                              const std::string& dir, std::int64_t global_step,
                              const std::map<std::string, double>& metrics);

// The subdirectory of the model dir where the chief's own evaluations go: beside, never inside,
// an Evaluator replica's eval/, so the two writers' event files never mix in one TensorBoard run.
inline constexpr const char* kChiefEvalDir = "eval_chief";

// evaluate() on the chief (TAAS_EVAL_ON_CHIEF): every eval_on_chief_steps global steps and once
// training ends, with the variables as the chief holds them after the step (under PS, the values
// its last push brought back; both sides of the replica's state brought up to date first). Each is
// logged ("evaluated on the chief") and published under <model dir>/eval_chief. A failure is the
// model's (evaluate() returned an error or threw): the chief leaves a report naming it
// (WriteJobReport) and the caller exits with kExitModelError.
class ChiefEvaluation {
 public:
  ChiefEvaluation(Context& ctx, DistModel& model, Session& session, Session::State& state);

  // Training starts (or resumes) at `global_step`: the next periodic evaluation is after it.
  void Start(std::int64_t global_step);
  // After each step: evaluates when a multiple of eval_on_chief_steps was reached.
  absl::Status AfterStep(std::int64_t global_step);
  // Once training ended (after the final checkpoint, before after_train); nothing when the
  // setting is off or this step was just evaluated.
  absl::Status AtEnd(std::int64_t global_step);

 private:
  // `final`: the evaluation at the end, whose metrics are the job's final ones.
  absl::Status Evaluate(std::int64_t global_step, bool final);

  Context& ctx_;
  DistModel& model_;
  Session& session_;
  Session::State& state_;
  std::unique_ptr<summary::EventWriter> events_;
  std::int64_t next_step_ = 0;
  std::int64_t last_step_ = -1;
  std::map<std::string, double> last_metrics_;  // of the evaluation at last_step_
};

// A replica's final metrics (Session::ReportFinalMetrics) at `global_step` logged ("final
// metrics"), served (taas_final_metric{metric=...}) and left in its report (taas/job_report) at
// the configured termination message path, where `taas run` and the operator read the job's
// result (job_report::JobResult); a report that cannot be written is a warning.
void PublishJobReport(Context& ctx, std::int64_t global_step,
                      const std::map<std::string, double>& metrics);

// Leaves `report` at the configured termination message path (else Kubernetes' when it exists);
// a report that cannot be written is a warning.
void WriteJobReport(Context& ctx, const job_report::JobReport& report);

// Once the chief's after_train returned: its final metrics published (PublishJobReport) and
// written as TensorBoard scalars "final/<name>" through `schedule`.
void PublishFinalMetrics(Context& ctx, ChiefSchedule& schedule, std::int64_t global_step,
                         const std::map<std::string, double>& metrics);

// Whether the done marker says a previous run of this job reached max_steps: a replica started
// again after its job finished has nothing left to do, as TensorFlow's StopAtStepHook ends a
// restored session at once. A larger max_steps resumes as before.
bool TrainingAlreadyDone(const TrainerInfo& info, const Logger& logger);

// Leaves the done marker holding the final global step (the evaluator's signal to finish).
void MarkTrainingDone(const TrainerInfo& info, std::int64_t global_step);

}  // namespace taas::runtime
