// The training replicas: workers and the chief (who also initialises, restores, checkpoints and
// writes summaries).
//
// State that is not trained (ModelBuilder::AddState) is placed on the parameter servers as shards
// of its own, which no push ever names, so a step never changes them: the chief writes its own
// state there whenever it initialises or restores them, and every other worker pulls it once when
// it starts and again when a parameter server's incarnation changed (a restarted PS, which the
// chief re-initialises). Pulls and pushes of a step cover the trainable variables only; the
// chief's checkpoints hold its own state, not the PS copy (docs/trainer-runtime.md).
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "chief.h"
#include "exit_code.h"
#include "internal.h"
#include "progress.h"
#include "taas/base/fence.h"
#include "taas/checkpoint/checkpoint.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/ps/client.h"
#include "taas/summary/event_writer.h"
#include "termination.h"

namespace taas::runtime {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Tracks one stretch of waiting (PS unreachable, variables not initialised): logs once, backs
// off, and gives up after the configured timeout. The stall watch (when there is one) sees the
// stretch as one wait on `peer`, so a long one is logged and reported as a stall.
class Patience {
 public:
  Patience(const Logger& logger, double timeout_secs, StallWatch* stalls)
      : logger_(logger), timeout_(timeout_secs), stalls_(stalls) {}

  // OK after a pause; DeadlineExceeded naming what was awaited once the wait has lasted too long
  // (the caller exits with FailureSource::kWait).
  absl::Status Wait(const std::string& why, const absl::Status& status, const std::string& peer) {
    if (!since_) {
      since_ = Clock::now();
      backoff_ = 0.05;
      logger_.Info(why, {{"detail", std::string(status.message())}, {"timeout_secs", timeout_}});
    }
    if (stalls_ != nullptr && peer != peer_) {
      watched_ = StallWatch::Wait();  // ended before peer_ changes: the watch reads it
      peer_ = peer;
      watched_ = stalls_->Begin([this] { return peer_; });
    }
    if (SecondsSince(*since_) > timeout_) {
      return absl::DeadlineExceededError("gave up after " + std::to_string(SecondsSince(*since_)) +
                                         " s (TAAS_WAIT_TIMEOUT_SECS " + std::to_string(timeout_) +
                                         "): " + why +
                                         (status.ok() ? "" : ": " + std::string(status.message())));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff_));
    backoff_ = std::min(backoff_ * 2, 1.0);
    return absl::OkStatus();
  }

  void Reset() {
    if (since_) logger_.Info("resumed", {{"waited_secs", SecondsSince(*since_)}});
    since_.reset();
    watched_ = StallWatch::Wait();
    peer_.clear();
  }

 private:
  const Logger& logger_;
  double timeout_;
  StallWatch* stalls_;
  std::optional<Clock::time_point> since_;
  double backoff_ = 0.05;
  std::string peer_;  // whom the stretch waits for; read by the watch while watched_ runs
  StallWatch::Wait watched_;
};

// The PS client's settings from the config: tokens, who calls, lanes and limits
// (taas/ps/client.h).
ps::PsClientOptions ClientOptions(const config::RuntimeConfig& cfg, StallWatch* stalls) {
  ps::PsClientOptions o;
  o.lanes = cfg.ps_lanes;
  o.tokens = {cfg.job_token, cfg.chief_token};
  o.caller = {cfg.replica_name, cfg.replica_incarnation};
  o.limits.max_message_bytes = cfg.ps_max_message_bytes;
  o.stalls = stalls;
  return o;
}

class Trainer {
 public:
  Trainer(Context& ctx, BuiltModel& built, const std::vector<std::string>& ps_addresses)
      : ctx_(ctx),
        cfg_(*ctx.config),
        info_(cfg_.info),
        built_(built),
        vars_(built.state.variables),
        states_(built.state.states),
        // BuildModel validated the optimizer settings: creating it cannot fail here.
        optimizer_(std::move(optim::CreateOptimizer(built.state.optimizer)).value()),
        client_(ps_addresses, ClientOptions(*ctx.config, ctx.stalls), ctx.logger),
        patience_(ctx.logger, cfg_.wait_timeout_secs, ctx.stalls),
        session_(&session_state_),
        schedule_(ctx, vars_, *built.replica, *optimizer_,
                  [this](std::int64_t step) { return SaveCheckpoint(step); }),
        evaluation_(ctx, *built.model, session_, session_state_) {
    session_state_.info = &info_;
    session_state_.logger = &ctx_.logger;
    session_state_.variables = &vars_;
    session_state_.states = &built.state.states;
    session_state_.replica = built.replica.get();
  }

  int Run();

 private:
  // What the loop does after a phase of a step.
  enum class Next { kGoOn, kRetry, kExit };
  struct Outcome {
    Next next = Next::kGoOn;
    int exit_code = 0;  // for kExit
  };
  static Outcome Exiting(int exit_code) { return {Next::kExit, exit_code}; }
  // Waits a little for `why` (on `peer`: the parameter servers unless named): retry the step, or
  // exit once the wait has lasted too long.
  Outcome Wait(const std::string& why, const absl::Status& status,
               const std::string& peer = std::string()) {
    // Terminating, a peer lost is the end: the PS that exits once the chief saved, say.
    if (auto deadline = TerminationRequested(ctx_)) return Exiting(Terminate(*deadline));
    if (auto code = KeepWaiting(why, status, peer)) return Exiting(*code);
    return {Next::kRetry};
  }

  // One step as it goes through the loop's phases.
  struct Step {
    ps::PullInfo pulled;
    double pull_secs = 0;
    Clock::time_point start;  // of train()
    StepResult result;
    ps::PushInfo pushed;
    StepTimes times;
  };

  // Places the variables and the state on the parameter servers.
  void PlaceVariables();
  // Waits for the parameter servers; the chief initialises or restores them and opens its
  // summaries. An exit code when that failed.
  std::optional<int> Prepare();
  // pull -> train -> push -> record.
  Outcome PullVariables(std::optional<ps::PullInfo>& refreshed, Step& step);
  Outcome PullFailed(const absl::Status& status);
  // A worker other than the chief: the chief's state from the parameter servers, when it has
  // none from their incarnations of `pulled` yet.
  Outcome PullState(const ps::PullInfo& pulled);
  Outcome Train(Step& step);
  Outcome PushGradients(Step& step);
  // Counts the step, updates the gauges, logs progress, and on the chief writes summaries and
  // checkpoints; the global step after it.
  std::int64_t Record(const Step& step);
  void SetGlobalStep(std::int64_t global_step);
  void LogProgress(std::int64_t global_step, const StepResult& result);

  std::vector<ps::ParamBuffers> Buffers() const {
    std::vector<ps::ParamBuffers> out;
    out.reserve(vars_.size());
    for (auto* v : vars_) out.push_back({v->value.values(), v->gradient.values()});
    return out;
  }
  std::vector<ps::ParamBuffers> StateBuffers() const {
    std::vector<ps::ParamBuffers> out;
    out.reserve(states_.size());
    for (auto* s : states_) out.push_back({s->value.values(), {}});
    return out;
  }

  absl::Status InitializeOrRestore(bool first_time);
  // Snapshots every PS and writes the checkpoint (atomically: checkpoint.h). With a `deadline`
  // (on termination), each snapshot gets only the time left, and a save the deadline overtook is
  // abandoned before it writes, the previous checkpoint staying the latest.
  absl::Status SaveCheckpoint(std::int64_t global_step,
                              const TerminationDeadline* deadline = nullptr);
  // After SIGTERM or SIGINT, between steps: the chief saves the job's state and tells the PS;
  // every training replica then exits with the transient code.
  int Terminate(const TerminationDeadline& deadline);
  // Whether a replica that got the signal stops at this step. The chief and asynchronous workers
  // do. A synchronous worker trains on until the PS ends (once the chief saved) or its deadline:
  // the chief's step in flight may be waiting for this worker's push, and would otherwise wait
  // for a worker that left until the kubelet kills it.
  bool StopsNow(const TerminationDeadline& deadline);
  // The chief's save on termination; what it did, for the exit line.
  std::string SaveOnTermination(const TerminationDeadline& deadline);
  // Tells every PS that the job's state at `step` is saved (CheckpointSaved): one that is
  // terminating serves until it hears this, or its own deadline.
  void AnnounceSaved(std::int64_t step, double timeout_secs);
  int Finish(bool chief_ends_training);
  // Logs the one line that explains the exit and returns its code (exit_code.h).
  int Fail(FailureSource source, std::string_view cause, const absl::Status& status) const {
    return Exit(ctx_.logger, last_global_step_, source, cause, status);
  }
  // Waits a little for `why`; the exit code once the wait has lasted too long, else nullopt.
  std::optional<int> KeepWaiting(const std::string& why, const absl::Status& status,
                                 const std::string& peer = std::string()) {
    absl::Status waited = patience_.Wait(why, status, peer.empty() ? client_.Peers() : peer);
    if (waited.ok()) return std::nullopt;
    return Fail(FailureSource::kWait, "gave up waiting", waited);
  }

  Context& ctx_;
  const config::RuntimeConfig& cfg_;
  const TrainerInfo& info_;
  BuiltModel& built_;
  const std::vector<Variable*>& vars_;
  const std::vector<Variable*>& states_;  // the state that is not trained, on the host
  std::vector<ps::VariablePlacement> placement_;
  std::vector<ps::VariablePlacement> state_placement_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  ps::PsClient client_;
  Patience patience_;
  Session::State session_state_;
  Session session_;
  std::vector<std::uint64_t> incarnations_;
  // The incarnations of the parameter servers the state was pulled from (workers; empty: none).
  std::vector<std::uint64_t> state_incarnations_;
  std::int64_t last_global_step_ = 0;
  std::int64_t local_step_ = 0;
  std::int64_t dropped_pushes_ = 0;  // pushes a PS dropped as stale or after a reset
  bool logged_training_on_ = false;  // StopsNow said a sync worker trains on after its signal
  ProgressWindow window_;
  RunSummary run_;

  // Chief only: summaries, checkpoints and evaluate() when TAAS_EVAL_ON_CHIEF asks.
  ChiefSchedule schedule_;
  ChiefEvaluation evaluation_;
};

absl::Status Trainer::InitializeOrRestore(bool first_time) {
  const std::size_t n = vars_.size();
  TAAS_ASSIGN_OR_RETURN(TrainingState state,
                        LoadTrainingState(ctx_, built_, session_, session_state_,
                                          optimizer_->slot_count(), first_time, last_global_step_));
  const std::int64_t step = state.global_step;
  const auto& values = state.values;
  const auto& slots = state.slots;
  for (int p = 0; p < client_.num_ps(); ++p) {
    std::vector<ps::ShardState> shards;
    for (std::size_t v = 0; v < n; ++v) {
      for (const auto& shard : placement_[v].shards) {
        if (shard.ps != p) continue;
        auto begin = static_cast<std::ptrdiff_t>(shard.offset);
        auto end = begin + static_cast<std::ptrdiff_t>(shard.size);
        ps::ShardState state{shard.name,
                             std::vector<float>(values[v].begin() + begin, values[v].begin() + end),
                             {},
                             placement_[v].name};
        for (const auto& slot : slots[v]) {
          state.slots.emplace_back(slot.begin() + begin, slot.begin() + end);
        }
        shards.push_back(std::move(state));
      }
    }
    // The chief's own state, which LoadTrainingState left on the host.
    for (std::size_t s = 0; s < states_.size(); ++s) {
      const auto values = states_[s]->value.values();
      for (const auto& shard : state_placement_[s].shards) {
        if (shard.ps != p) continue;
        const auto begin = values.begin() + static_cast<std::ptrdiff_t>(shard.offset);
        shards.push_back(
            {shard.name, {begin, begin + static_cast<std::ptrdiff_t>(shard.size)}, {}});
      }
    }
    ps::TrainingSpec spec;
    spec.sync = info_.sync;
    spec.replicas_to_aggregate = info_.replicas_to_aggregate;
    spec.optimizer = built_.state.optimizer;
    spec.max_steps = info_.max_steps;
    TAAS_RETURN_IF_ERROR(
        client_.Initialize(p, spec, step, std::move(shards), cfg_.wait_timeout_secs));
  }
  schedule_.CheckpointIsAt(state.from_checkpoint ? step : -1);
  last_global_step_ = step;
  ctx_.logger.Info("parameter servers ready: other replicas may start",
                   {{"global_step", step}, {"ps", client_.num_ps()}});
  return absl::OkStatus();
}

absl::Status Trainer::SaveCheckpoint(std::int64_t global_step,
                                     const TerminationDeadline* deadline) {
  const auto time_left = [&]() -> absl::StatusOr<double> {
    if (deadline == nullptr) return cfg_.wait_timeout_secs;
    const double left = deadline->SecondsLeft(Clock::now());
    if (left <= 0) {
      return absl::DeadlineExceededError("the termination grace (" +
                                         std::string(contract::kTerminationGraceSecsEnv) +
                                         ") is over before the checkpoint was written");
    }
    return std::min(left, cfg_.wait_timeout_secs);
  };
  const int slot_count = optimizer_->slot_count();
  std::vector<std::map<std::string, ps::ShardState>> by_ps(
      static_cast<std::size_t>(client_.num_ps()));
  TrainingState state;
  state.global_step = global_step;
  for (int p = 0; p < client_.num_ps(); ++p) {
    TAAS_ASSIGN_OR_RETURN(const double timeout_secs, time_left());
    TAAS_ASSIGN_OR_RETURN(auto snap, client_.Snapshot(p, timeout_secs));
    if (p == 0) state.global_step = snap.first;
    for (auto& s : snap.second) {
      std::string name = s.name;
      by_ps[static_cast<std::size_t>(p)].emplace(std::move(name), std::move(s));
    }
  }
  for (std::size_t v = 0; v < vars_.size(); ++v) {
    const auto size = static_cast<std::size_t>(placement_[v].size);
    std::vector<float>& value = state.values.emplace_back(size);
    auto& slots =
        state.slots.emplace_back(static_cast<std::size_t>(slot_count), std::vector<float>(size));
    for (const auto& shard : placement_[v].shards) {
      auto& held = by_ps[static_cast<std::size_t>(shard.ps)];
      auto it = held.find(shard.name);
      if (it == held.end() || it->second.values.size() != static_cast<std::size_t>(shard.size)) {
        return absl::InternalError("ps " + std::to_string(shard.ps) + " lacks shard " + shard.name +
                                   " while checkpointing");
      }
      const auto offset = static_cast<std::ptrdiff_t>(shard.offset);
      std::copy(it->second.values.begin(), it->second.values.end(), value.begin() + offset);
      for (int k = 0; k < slot_count && k < static_cast<int>(it->second.slots.size()); ++k) {
        const auto& slot = it->second.slots[static_cast<std::size_t>(k)];
        std::copy(slot.begin(), slot.end(), slots[static_cast<std::size_t>(k)].begin() + offset);
      }
    }
  }
  const std::int64_t step = state.global_step;
  const auto start = Clock::now();
  // The chief's own state, from its device when it is on one (the PS copy is the start's).
  TAAS_RETURN_IF_ERROR(built_.replica->StateToHost());
  TAAS_RETURN_IF_ERROR(time_left().status());
  TAAS_ASSIGN_OR_RETURN(
      std::string path,
      checkpoint::Save(info_.model_dir, step, CheckpointEntries(vars_, states_, std::move(state)),
                       cfg_.keep_checkpoints));
  ctx_.logger.Info("saved checkpoint",
                   {{"checkpoint", path}, {"global_step", step}, {"secs", SecondsSince(start)}});
  schedule_.CheckpointIsAt(step);
  return absl::OkStatus();
}

int Trainer::Run() {
  PlaceVariables();
  if (TrainingAlreadyDone(info_, ctx_.logger)) return kExitOk;
  if (auto code = Prepare()) return *code;

  // The loop: pull -> train -> push -> record. Each phase ends the step early (Next::kRetry: a
  // peer to wait for; the wait is bounded by Patience) or the run (kExit with its code).
  std::optional<ps::PullInfo> refreshed;  // what the last push brought back; empty: pull
  bool chief_stop = false;
  window_ = ProgressWindow();  // the first window starts with the first step, not at start-up
  run_ = RunSummary();
  std::optional<StepResult> last_result;  // the last step's, for the last window's loss
  while (true) {
    // Between steps (a retried one included): the step in flight is done or abandoned.
    if (auto deadline = TerminationRequested(ctx_); deadline && StopsNow(*deadline)) {
      return Terminate(*deadline);
    }
    Step step;
    Outcome outcome = PullVariables(refreshed, step);
    if (outcome.next == Next::kRetry) continue;
    if (outcome.next == Next::kExit) return outcome.exit_code;
    if (step.pulled.done || step.pulled.global_step >= info_.max_steps) break;
    last_result.reset();  // its device loss is valid only until the next train()

    outcome = Train(step);
    if (outcome.next == Next::kExit) return outcome.exit_code;

    outcome = PushGradients(step);
    if (outcome.next == Next::kRetry) continue;
    if (outcome.next == Next::kExit) return outcome.exit_code;
    refreshed = std::move(step.pushed.pulled);

    const std::int64_t global_step = Record(step);
    if (info_.is_chief) {
      absl::Status evaluated = evaluation_.AfterStep(global_step);
      if (!evaluated.ok()) return Fail(FailureSource::kModel, "evaluate() failed", evaluated);
    }
    const bool stop = step.result.stop;
    last_result = std::move(step.result);
    if (step.pushed.done || global_step >= info_.max_steps) break;
    if (stop) {
      chief_stop = info_.is_chief;
      ctx_.logger.Info("train() asked to stop", {{"global_step", global_step}});
      break;
    }
  }
  // The last window, shorter than TAAS_LOG_STEPS, is logged too.
  if (window_.steps() > 0 && last_result) LogProgress(last_global_step_, *last_result);
  // A worker that trained on after its signal ends here when the PS released it (done).
  if (auto deadline = TerminationRequested(ctx_); deadline && !info_.is_chief) {
    return Terminate(*deadline);
  }
  return Finish(chief_stop);
}

bool Trainer::StopsNow(const TerminationDeadline& deadline) {
  if (info_.is_chief || !info_.sync || deadline.Passed(Clock::now())) return true;
  if (!logged_training_on_) {
    ctx_.logger.Info("terminating: training on until the chief saved the job's state (sync)",
                     {{"signal", TerminationSignalName(deadline.request().signal)},
                      {"global_step", last_global_step_},
                      {"deadline_secs", deadline.SecondsLeft(Clock::now())}});
    logged_training_on_ = true;
  }
  return false;
}

int Trainer::Terminate(const TerminationDeadline& deadline) {
  ctx_.logger.Info("terminating: the step in flight is done",
                   {{"signal", TerminationSignalName(deadline.request().signal)},
                    {"global_step", last_global_step_},
                    {"local_step", local_step_},
                    {"deadline_secs", deadline.SecondsLeft(Clock::now())}});
  const std::string what =
      info_.is_chief ? SaveOnTermination(deadline) : "the step in flight finished";
  return ExitTerminated(ctx_, deadline, last_global_step_, what);
}

std::string Trainer::SaveOnTermination(const TerminationDeadline& deadline) {
  if (!NeedsTerminationSave(last_global_step_, schedule_.last_checkpoint_step())) {
    return "the last checkpoint holds the job's step " + std::to_string(last_global_step_);
  }
  const auto start = Clock::now();
  const absl::Status saved = SaveCheckpoint(last_global_step_, &deadline);
  const double secs = SecondsSince(start);
  if (!saved.ok()) {
    ctx_.logger.Warning(
        "checkpoint on termination abandoned: the previous checkpoint stays the latest",
        {{"error", std::string(saved.message())},
         {"last_checkpoint_step", schedule_.last_checkpoint_step()},
         {"save_secs", secs}});
    return "the checkpoint on termination was abandoned";
  }
  const std::int64_t step = schedule_.last_checkpoint_step();  // PS 0's, which the snapshot read
  AnnounceSaved(step, std::max(0.1, std::min(deadline.SecondsLeft(Clock::now()), 2.0)));
  ctx_.logger.Info("checkpoint on termination saved",
                   {{"global_step", step},
                    {"save_secs", secs},
                    {"since_signal_secs", deadline.SecondsSinceSignal(Clock::now())}});
  return "the job's state is saved at global step " + std::to_string(step);
}

void Trainer::AnnounceSaved(std::int64_t step, double timeout_secs) {
  for (int p = 0; p < client_.num_ps(); ++p) {
    const absl::Status told = client_.CheckpointSaved(p, step, timeout_secs);
    if (!told.ok()) {
      ctx_.logger.Warning(
          "cannot tell a parameter server the checkpoint is saved: it serves "
          "until its own deadline",
          {{"ps", p}, {"error", std::string(told.message())}});
    }
  }
}

void Trainer::PlaceVariables() {
  // Placed together, so the bytes balance over both; each keeps its own list.
  std::vector<ps::VariableInfo> infos;
  for (auto* v : vars_) infos.push_back({v->name, v->value.size()});
  for (auto* s : states_) infos.push_back({s->name, s->value.size()});
  placement_ = ps::PlaceVariables(infos, client_.num_ps(), cfg_.partition_bytes, client_.lanes());
  const auto first_state = placement_.begin() + static_cast<std::ptrdiff_t>(vars_.size());
  state_placement_.assign(std::make_move_iterator(first_state),
                          std::make_move_iterator(placement_.end()));
  placement_.erase(first_state, placement_.end());
  std::string bytes;
  for (auto b : ps::BytesPerPs(placement_, client_.num_ps())) {
    bytes += (bytes.empty() ? "" : ",") + std::to_string(b);
  }
  ctx_.logger.Info("model built", {{"variables", static_cast<std::int64_t>(vars_.size())},
                                   {"state", static_cast<std::int64_t>(states_.size())},
                                   {"bytes_per_ps", bytes},
                                   {"sync", info_.sync},
                                   {"replicas_to_aggregate", info_.replicas_to_aggregate}});
}

std::optional<int> Trainer::Prepare() {
  // A termination during the waits below ends them at once: nothing was trained, nothing to save.
  auto reachable = client_.WaitForServers(
      cfg_.wait_timeout_secs, [this] { return TerminationRequested(ctx_).has_value(); });
  if (auto deadline = TerminationRequested(ctx_); deadline && !reachable.ok()) {
    return ExitTerminated(ctx_, *deadline, 0,
                          "nothing to save yet: it was still waiting for the parameter servers");
  }
  if (!reachable.ok()) {
    return Fail(FailureSource::kPeer, "parameter servers unreachable", reachable.status());
  }
  if (!info_.is_chief) return std::nullopt;
  std::error_code ec;
  fs::create_directories(info_.model_dir, ec);
  fs::remove(fs::path(info_.model_dir) / contract::kTrainingDoneFile, ec);
  while (true) {
    absl::Status s = InitializeOrRestore(/*first_time=*/true);
    if (s.ok()) break;
    if (auto deadline = TerminationRequested(ctx_)) {
      return ExitTerminated(ctx_, *deadline, 0,
                            "nothing to save yet: the parameter servers were not initialised");
    }
    if (!ps::IsTransient(s)) {
      return Fail(FailureSource::kPeer, "cannot initialise the parameter servers", s);
    }
    if (auto code = KeepWaiting("parameter servers not answering initialisation", s)) {
      return code;
    }
  }
  patience_.Reset();
  schedule_.Start(last_global_step_, schedule_.last_checkpoint_step());
  evaluation_.Start(last_global_step_);
  return std::nullopt;
}

Trainer::Outcome Trainer::PullVariables(std::optional<ps::PullInfo>& refreshed, Step& step) {
  const auto pull_start = Clock::now();
  absl::StatusOr<ps::PullInfo> pulled =
      refreshed ? absl::StatusOr<ps::PullInfo>(std::move(*refreshed))
                : client_.Pull(placement_, Buffers(), cfg_.wait_timeout_secs);
  refreshed.reset();
  step.pull_secs = SecondsSince(pull_start);
  if (!pulled.ok()) return PullFailed(pulled.status());
  step.pulled = std::move(*pulled);
  built_.replica->ValuesChangedOnHost();
  if (info_.is_chief && !incarnations_.empty()) {
    for (std::size_t p = 0; p < incarnations_.size(); ++p) {
      if (incarnations_[p] != step.pulled.incarnations[p]) {
        ctx_.logger.Info("parameter server incarnation changed",
                         {{"ps", static_cast<std::int64_t>(p)},
                          {"incarnation", std::to_string(step.pulled.incarnations[p])}});
      }
    }
  }
  incarnations_ = step.pulled.incarnations;
  SetGlobalStep(step.pulled.global_step);
  if (!info_.is_chief && state_incarnations_ != step.pulled.incarnations) {
    return PullState(step.pulled);
  }
  return {Next::kGoOn};
}

Trainer::Outcome Trainer::PullState(const ps::PullInfo& pulled) {
  if (!states_.empty()) {
    auto got = client_.Pull(state_placement_, StateBuffers(), cfg_.wait_timeout_secs);
    if (!got.ok()) return PullFailed(got.status());
    // Another incarnation answered than the variables' pull did (a PS restarted in between): the
    // next step pulls again. A lane one of the two pulls did not call reports 0 (every lane of a
    // task restarts with its lane 0, which both call).
    for (std::size_t p = 0; p < pulled.incarnations.size(); ++p) {
      const std::uint64_t mine = got->incarnations[p], theirs = pulled.incarnations[p];
      if (mine != 0 && theirs != 0 && mine != theirs) return {Next::kRetry};
    }
    built_.replica->StateChangedOnHost();
    ctx_.logger.Info("state pulled from the parameter servers",
                     {{"state", static_cast<std::int64_t>(states_.size())},
                      {"global_step", pulled.global_step}});
  }
  state_incarnations_ = pulled.incarnations;
  return {Next::kGoOn};
}

Trainer::Outcome Trainer::PullFailed(const absl::Status& s) {
  // A newer incarnation of this replica replaced it: nothing to wait for or restore.
  if (IsFenced(s)) return Exiting(Fail(FailureSource::kPeer, "pull refused", s));
  if (s.code() == absl::StatusCode::kFailedPrecondition) {
    if (!info_.is_chief) {
      return Wait("waiting for the chief to initialise or restore the variables", s,
                  cfg_.worker_names.empty() ? PeerName("worker", 0) : cfg_.worker_names.front());
    }
    ctx_.logger.Warning(
        "a parameter server lost its variables (restarted): restoring all parameter servers "
        "from the latest checkpoint",
        {{"detail", std::string(s.message())}});
    absl::Status restored = InitializeOrRestore(/*first_time=*/false);
    if (restored.ok()) return {Next::kRetry};
    if (!ps::IsTransient(restored)) {
      return Exiting(Fail(FailureSource::kPeer, "cannot restore the parameter servers", restored));
    }
    return Wait("restoring parameter servers", restored);
  }
  if (ps::IsTransient(s)) return Wait("parameter server unreachable, retrying", s);
  return Exiting(Fail(FailureSource::kPeer, "pull failed", s));
}

Trainer::Outcome Trainer::Train(Step& step) {
  session_state_.global_step = step.pulled.global_step;
  session_state_.local_step = local_step_;
  session_state_.learning_rate = optimizer_->LearningRate(step.pulled.global_step);
  step.start = Clock::now();
  const double train_cpu_start = ThreadCpuSeconds();
  // On a device: the pulled values go there first (one copy), the gradients come back for the
  // push (one copy).
  // The state goes there only after a restore or a pull of the chief's (a copy per state).
  absl::Status trained = built_.replica->ValuesToDevice();
  if (trained.ok()) trained = built_.replica->StateToDevice();
  if (trained.ok()) trained = TrainOnce(built_, session_, step.result);
  // Clipping by global norm needs the whole gradient, which only this replica holds (a PS holds
  // shards): on the replica's device, before the push.
  if (trained.ok() && optimizer_->clips()) {
    Tensor gradients = built_.replica->variable_gradients();
    trained = optimizer_->ClipByGlobalNorm(std::span<Tensor* const>(std::array{&gradients}));
  }
  if (trained.ok()) trained = built_.replica->GradientsToHost();
  if (!trained.ok()) return Exiting(Fail(FailureSource::kModel, "train() failed", trained));
  step.times.train_cpu_secs = ThreadCpuSeconds() - train_cpu_start;
  step.times.train_secs = SecondsSince(step.start);
  step.times.examples = step.result.examples > 0 ? step.result.examples : built_.state.batch_size;
  return {Next::kGoOn};
}

Trainer::Outcome Trainer::PushGradients(Step& step) {
  const auto push_start = Clock::now();
  auto pushed = client_.Push(placement_, Buffers(), step.pulled.ps_steps, info_.worker_rank,
                             cfg_.wait_timeout_secs, /*pull_values=*/true);
  if (!pushed.ok()) {
    const absl::Status& s = pushed.status();
    if (IsFenced(s)) return Exiting(Fail(FailureSource::kPeer, "push refused", s));
    if (s.code() == absl::StatusCode::kFailedPrecondition || ps::IsTransient(s)) {
      // The next pull waits for the PS or the chief's restore. Failed pushes count towards the
      // same timeout as failed pulls: a sync step that never completes must end too.
      return Wait("gradients not applied (peer lost or sync step timed out)", s);
    }
    return Exiting(Fail(FailureSource::kPeer, "push failed", s));
  }
  if (pushed->applied == 0 && !pushed->done && pushed->global_step <= step.pulled.global_step) {
    // Dropped without the step moving (a retried sync push, a restore): no progress, so this
    // counts towards the wait timeout instead of spinning.
    return Wait("gradients dropped and the step does not advance", absl::OkStatus());
  }
  patience_.Reset();
  step.pushed = std::move(*pushed);
  step.times.comm_secs = step.pull_secs + SecondsSince(push_start);
  step.times.wait_secs = step.pushed.wait_secs;
  return {Next::kGoOn};
}

std::int64_t Trainer::Record(const Step& step) {
  ++local_step_;
  dropped_pushes_ += step.pushed.stale + step.pushed.reset;
  const std::int64_t global_step = std::max(step.pushed.global_step, step.pulled.global_step);
  SetGlobalStep(global_step);
  window_.Add(step.times);
  run_.Add(step.times.examples);
  ctx_.gauges->Set(contract::kLearningRateMetric, session_state_.learning_rate);
  if (local_step_ % cfg_.log_steps == 0) LogProgress(global_step, step.result);
  if (info_.is_chief) {
    schedule_.AfterStep(
        global_step, step.times.examples, [&] { return HostLoss(step.result); }, step.result);
  }
  return global_step;
}

void Trainer::SetGlobalStep(std::int64_t global_step) {
  last_global_step_ = global_step;
  built_.global_step = global_step;
  ctx_.global_step = global_step;
  ctx_.gauges->Set(contract::kGlobalStepMetric, static_cast<double>(global_step));
}

void Trainer::LogProgress(std::int64_t global_step, const StepResult& result) {
  const ProgressWindow::Summary w = window_.Close();
  ctx_.gauges->Set(contract::kExamplesPerSecondMetric, w.examples_per_sec);
  absl::StatusOr<float> read = HostLoss(result);
  if (!read.ok())
    ctx_.logger.Warning("cannot read the loss", {{"error", read.status().ToString()}});
  const float loss = read.value_or(0.0f);
  ctx_.gauges->Set(contract::kLossMetric, loss);
  ctx_.logger.Info("training", {{"step", local_step_},
                                {"global_step", global_step},
                                {"loss", static_cast<double>(loss)},
                                {"sec_per_batch", w.sec_per_batch},
                                {"comm_fraction", w.comm_fraction},
                                {"wait_fraction", w.wait_fraction},
                                {"train_secs", w.train_secs},
                                {"train_cpu_secs", w.train_cpu_secs},
                                {"examples_per_sec", w.examples_per_sec},
                                {"dropped_pushes", dropped_pushes_}});
}

int Trainer::Finish(bool chief_stop) {
  const RunSummary::Figures run = run_.Get();
  ctx_.logger.Info("training finished", {{"global_step", last_global_step_},
                                         {"max_steps", info_.max_steps},
                                         {"stopped_by_model", chief_stop},
                                         {"local_steps", run.local_steps},
                                         {"warmup_steps", run.warmup_steps},
                                         {"mean_sec_per_batch", run.sec_per_batch},
                                         {"mean_examples_per_sec", run.examples_per_sec}});
  if (!info_.is_chief) {
    // Best effort: the final values for after_train (the PS may already be gone).
    auto pulled = client_.Pull(placement_, Buffers(), 10);
    if (pulled.ok()) session_state_.global_step = pulled->global_step;
    built_.replica->ValuesChangedOnHost();
    absl::Status s = built_.replica->Synchronize();
    if (s.ok())
      s = CallModel("after_train()", [&] {
        built_.model->after_train(session_, false);
        return absl::OkStatus();
      });
    if (!s.ok()) return Fail(FailureSource::kModel, "after_train() failed", s);
    return kExitOk;
  }
  // Release workers waiting in sync pushes; pulls and snapshots keep working.
  for (int p = 0; p < client_.num_ps(); ++p) {
    absl::Status s = client_.Shutdown(p, /*exit=*/false, cfg_.wait_timeout_secs);
    if (!s.ok()) ctx_.logger.Warning("cannot mark training done", {{"error", s.ToString()}});
  }
  auto pulled = client_.Pull(placement_, Buffers(), cfg_.wait_timeout_secs);
  if (!pulled.ok()) {
    return Fail(FailureSource::kPeer, "cannot fetch the final variables", pulled.status());
  }
  session_state_.global_step = pulled->global_step;
  built_.replica->ValuesChangedOnHost();
  if (pulled->global_step != schedule_.last_checkpoint_step()) {
    // A snapshot that lost its PS is transient; a checkpoint that cannot be written is not.
    absl::Status s = SaveCheckpoint(pulled->global_step);
    if (!s.ok()) return Fail(FailureSource::kPeer, "final checkpoint failed", s);
  }
  // A PS stopped from here on (the job failed in the final evaluation, say) need not wait.
  AnnounceSaved(schedule_.last_checkpoint_step(), 2);
  // Done only once the final evaluation succeeded: a chief restarted after it failed (restart
  // policy OnFailure) evaluates the final checkpoint again instead of ending with no result.
  absl::Status evaluated = evaluation_.AtEnd(pulled->global_step);
  if (!evaluated.ok()) return Fail(FailureSource::kModel, "evaluate() failed", evaluated);
  MarkTrainingDone(info_, pulled->global_step);
  absl::Status after = built_.replica->Synchronize();
  if (after.ok())
    after = CallModel("after_train()", [&] {
      built_.model->after_train(session_, true);
      return absl::OkStatus();
    });
  if (!after.ok()) return Fail(FailureSource::kModel, "after_train() failed", after);
  PublishFinalMetrics(ctx_, schedule_, pulled->global_step, session_state_.final_metrics);
  for (int p = 0; p < client_.num_ps(); ++p) {
    absl::Status s = client_.Shutdown(p, /*exit=*/true, 10);
    if (!s.ok()) ctx_.logger.Warning("cannot stop a parameter server", {{"error", s.ToString()}});
  }
  ctx_.logger.Info("job done", {{"global_step", pulled->global_step}});
  return kExitOk;
}

}  // namespace

int RunTrainer(Context& ctx, const std::vector<std::string>& ps_addresses) {
  auto built = BuildModel(ctx, ctx.config->info);
  if (!built.ok())
    return Exit(ctx.logger, 0, FailureSource::kModel, "build_model failed", built.status());
  Trainer trainer(ctx, **built, ps_addresses);
  return trainer.Run();
}

}  // namespace taas::runtime
