#include "taas/tfjob/status.h"

#include <algorithm>
#include <limits>
#include <set>

#include "taas/tfjob/labels.h"
#include "taas/tfjob/progress.h"
#include "taas/tfjob/restart.h"

namespace taas::tfjob {
namespace {

// Kubeflow's stand-in exit code for a Failed pod whose container never reported one (it is
// >= 128, hence retryable under ExitCode).
constexpr int kUnknownExitCode = 0xbeef;

constexpr std::string_view kStuckWaitingReasons[] = {
    "ImagePullBackOff",     "ErrImagePull",     "CrashLoopBackOff",
    "CreateContainerError", "InvalidImageName", "CreateContainerConfigError"};

bool IsStuckWaitingReason(std::string_view reason) {
  return std::find(std::begin(kStuckWaitingReasons), std::end(kStuckWaitingReasons), reason) !=
         std::end(kStuckWaitingReasons);
}

// What becomes of a replica observed in phase Failed (the container may or may not have said
// why): Kubeflow restarts it under OnFailure/Always, under ExitCode when the code is retryable.
ExitAction FailedReplicaAction(RestartPolicy policy, std::optional<int> exit_code) {
  switch (policy) {
    case RestartPolicy::kNever:
      return ExitAction::kFail;
    case RestartPolicy::kOnFailure:
    case RestartPolicy::kAlways:
      return ExitAction::kRestart;
    case RestartPolicy::kExitCode:
      return IsRetryableExitCode(exit_code.value_or(kUnknownExitCode)) ? ExitAction::kRestart
                                                                       : ExitAction::kFail;
  }
  return ExitAction::kFail;
}

bool InSpec(const TFJobSpec& spec, ReplicaType type, int index) {
  const auto it = spec.replica_specs.find(type);
  return it != spec.replica_specs.end() && index >= 0 && index < it->second.replicas;
}

void MoveActiveToSucceeded(JobStatus& status) {
  for (auto& [type, replica] : status.replica_statuses) {
    replica.succeeded += replica.active;
    replica.active = 0;
  }
}

// Per replica type, what this round observed.
struct Tally {
  int failed_for_good = 0;   // under Never
  int failed_exit_code = 0;  // under ExitCode, with a permanent code
  int restarting = 0;
};

// The end of Kubeflow's Failed messages for a job past its limits (common/job.go), after
// "Job <name>". FailedByLimit recognises a job failed so from its status alone.
constexpr std::string_view kBackoffLimitSuffix =
    " has failed because it has reached the specified backoff limit";
constexpr std::string_view kDeadlineSuffix =
    " has failed because it was active longer than specified deadline";

// A replica that has been stuck since `since`.
struct Stuck {
  ReplicaRef replica;
  std::string reason;
  std::string message;
};

// The computation, step by step; each step reads and writes `update_`.
class StatusComputation {
 public:
  StatusComputation(const TFJob& job, const std::vector<ObservedReplica>& observed, Time now,
                    const StatusOptions& options)
      : job_(job), observed_(observed), now_(now), options_(options) {
    update_.status = job.status;
  }

  StatusUpdate Run() {
    if (IsFinished(status())) {
      if (IsSucceeded(status())) MoveActiveToSucceeded(status());
      return std::move(update_);
    }
    SetCreated();
    InitReplicaStatuses();
    if (job_.spec.run_policy.suspend) {
      Suspend();
      return std::move(update_);
    }
    Resume();
    if (!status().start_time) status().start_time = now_;
    CountReplicas();
    if (Decide()) UpdateStuck();
    ScheduleDeadline();
    return std::move(update_);
  }

 private:
  JobStatus& status() { return update_.status; }
  std::string Key() const { return JobKey(job_.metadata); }

  void Set(ConditionType type, ConditionStatus condition_status, std::string_view reason,
           std::string message, bool warning) {
    if (SetCondition(status(), type, condition_status, reason, message, now_)) {
      update_.events.push_back({warning, std::string(reason), std::move(message)});
    }
  }

  void Finish(ConditionType type, std::string_view reason, std::string message) {
    Set(type, ConditionStatus::kTrue, reason, std::move(message), type == ConditionType::kFailed);
    if (!status().completion_time) status().completion_time = now_;
    if (type == ConditionType::kSucceeded) MoveActiveToSucceeded(status());
    update_.restart.clear();
  }

  void SetCreated() {
    if (FindCondition(status(), ConditionType::kCreated) != nullptr) return;
    Set(ConditionType::kCreated, ConditionStatus::kTrue, kReasonCreated,
        "TFJob " + job_.metadata.name + " is created.", false);
  }

  // Keeps one entry per replica type of the spec, with its selectors; counts are recomputed.
  void InitReplicaStatuses() {
    std::map<ReplicaType, ReplicaStatus> fresh;
    for (const auto& [type, spec] : job_.spec.replica_specs) {
      ReplicaStatus replica;
      if (const auto old = status().replica_statuses.find(type);
          old != status().replica_statuses.end()) {
        replica = std::move(old->second);
      }
      const Labels labels = ReplicaTypeLabels(job_.metadata.name, type);
      std::string selector = SelectorString(labels);
      if (replica.selector != selector || !replica.label_selector) {
        replica.label_selector = LabelSelectorJson(labels);
        replica.selector = std::move(selector);
      }
      // A named copy: clang 14 (the sanitizer builds) cannot capture a structured binding.
      const auto replicas = spec.replicas;
      std::erase_if(replica.succeeded_indexes,
                    [replicas](int index) { return index < 0 || index >= replicas; });
      std::erase_if(replica.container_restarts, [replicas](const auto& entry) {
        return entry.first < 0 || entry.first >= replicas;
      });
      fresh[type] = std::move(replica);
    }
    status().replica_statuses = std::move(fresh);
  }

  void Suspend() {
    const std::string message = "TFJob " + job_.metadata.name + " is suspended.";
    if (IsRunning(status())) {
      Set(ConditionType::kRunning, ConditionStatus::kFalse, kReasonSuspended, message, false);
    }
    if (!IsSuspended(status())) {
      Set(ConditionType::kSuspended, ConditionStatus::kTrue, kReasonSuspended, message, false);
    }
    for (auto& [type, replica] : status().replica_statuses) replica.active = 0;
  }

  void Resume() {
    if (!IsSuspended(status())) return;
    Set(ConditionType::kSuspended, ConditionStatus::kFalse, kReasonResumed,
        "TFJob " + job_.metadata.name + " is resumed.", false);
    status().start_time = now_;
  }

  void CountReplicas() {
    std::map<ReplicaType, std::set<int>> succeeded;
    for (auto& [type, replica] : status().replica_statuses) {
      succeeded[type].insert(replica.succeeded_indexes.begin(), replica.succeeded_indexes.end());
      replica.active = replica.succeeded = replica.failed = 0;
    }
    for (const ObservedReplica& replica : observed_) {
      if (!InSpec(job_.spec, replica.type, replica.index) || replica.terminating) continue;
      ReplicaStatus& counts = status().replica_statuses[replica.type];
      CountInPlaceRestarts(replica, counts);
      switch (replica.phase) {
        case ReplicaPhase::kRunning:
          ++counts.active;
          break;
        case ReplicaPhase::kSucceeded:
          succeeded[replica.type].insert(replica.index);
          break;
        case ReplicaPhase::kFailed:
          ++counts.failed;
          CountFailure(replica);
          break;
        case ReplicaPhase::kPending:
        case ReplicaPhase::kUnknown:
          break;
      }
    }
    for (auto& [type, replica] : status().replica_statuses) {
      replica.succeeded_indexes.assign(succeeded[type].begin(), succeeded[type].end());
      replica.succeeded = static_cast<std::int32_t>(replica.succeeded_indexes.size());
    }
  }

  // The kubelet restarts containers in place (Always, OnFailure): each rise of the replica's
  // restartCount since the last observation is a restart, counted once in status. A count lower
  // than the one last seen belongs to a new pod, whose restarts are all new.
  void CountInPlaceRestarts(const ObservedReplica& replica, ReplicaStatus& counts) {
    auto& seen = counts.container_restarts;
    const auto it = seen.find(replica.index);
    const int before = it == seen.end() ? 0 : it->second;
    const int added = replica.restarts >= before ? replica.restarts - before : replica.restarts;
    if (replica.restarts > 0) {
      seen[replica.index] = replica.restarts;
    } else {
      seen.erase(replica.index);
    }
    if (added <= 0) return;
    counts.restarts += added;
    ++tally_[replica.type].restarting;
  }

  void CountFailure(const ObservedReplica& replica) {
    const RestartPolicy policy = job_.spec.replica_specs.at(replica.type).restart_policy;
    if (FailedReplicaAction(policy, replica.exit_code) == ExitAction::kRestart) {
      ++tally_[replica.type].restarting;
      restarts_.push_back({replica.type, replica.index});
    } else if (policy == RestartPolicy::kExitCode) {
      ++tally_[replica.type].failed_exit_code;
    } else {
      ++tally_[replica.type].failed_for_good;
    }
  }

  // Kubeflow's order: backoff limit, deadline (ReconcileJobs), a permanent ExitCode failure
  // (ReconcilePods), success and Running, a failure under Never (UpdateJobStatus), restarts.
  // A job that may wait for its evaluator decides its success first (rule 7 in status.h).
  // Returns false when the job finished.
  bool Decide() {
    if (MayAwaitEvaluator() && SucceededBy()) return !UpdateSuccessAndRunning();
    if (PastBackoffLimit()) {
      Finish(ConditionType::kFailed, kReasonFailed,
             "Job " + job_.metadata.name + std::string(kBackoffLimitSuffix));
      return false;
    }
    if (PastDeadline()) {
      Finish(ConditionType::kFailed, kReasonFailed,
             "Job " + job_.metadata.name + std::string(kDeadlineSuffix));
      return false;
    }
    // Kubeflow fails the job here even for workers under enableDynamicWorker.
    for (ReplicaType type : kStatusOrder) {
      if (tally_[type].failed_exit_code == 0) continue;
      Finish(ConditionType::kFailed, kReasonFailed,
             "job \"" + job_.metadata.name + "\" is failing because \"" +
                 std::string(ReplicaTypeName(type)) + "\" replica(s) failed.");
      return false;
    }
    if (UpdateSuccessAndRunning()) return false;
    for (ReplicaType type : kStatusOrder) {
      const int failed = tally_[type].failed_for_good;
      if (failed == 0) continue;
      if (job_.spec.enable_dynamic_worker && type == ReplicaType::kWorker) continue;
      Finish(ConditionType::kFailed, kReasonFailed,
             "TFJob " + Key() + " has failed because " + std::to_string(failed) + " " +
                 std::string(ReplicaTypeName(type)) + " replica(s) failed.");
      return false;
    }
    CommitRestarts();
    return true;
  }

  bool PastDeadline() const {
    const auto& deadline = job_.spec.run_policy.active_deadline_seconds;
    const auto& start = update_.status.start_time;
    return deadline && start && now_ - *start >= std::chrono::seconds(*deadline);
  }

  // Every restart so far (recorded in status, in-place ones included) plus the ones this round
  // would do, against backoffLimit. As Kubeflow, only replica types whose policy restarts
  // (OnFailure, Always, ExitCode) count; unlike Kubeflow, which sums the restartCount of the
  // running pods only, a restart stays counted when its pod is replaced or recreated (ExitCode).
  bool PastBackoffLimit() const {
    const auto& limit = job_.spec.run_policy.backoff_limit;
    if (!limit) return false;
    std::int64_t total = static_cast<std::int64_t>(restarts_.size());
    for (const auto& [type, replica] : update_.status.replica_statuses) {
      const auto spec = job_.spec.replica_specs.find(type);
      if (spec == job_.spec.replica_specs.end() ||
          spec->second.restart_policy == RestartPolicy::kNever)
        continue;
      total += replica.restarts;
    }
    return total > *limit;
  }

  // Kubeflow's UpdateJobStatus for success and Running. Returns true when the job succeeded;
  // false while it waits for its evaluator.
  bool UpdateSuccessAndRunning() {
    const bool has_chief = HasChiefOrMaster(job_.spec);
    for (ReplicaType type : kStatusOrder) {
      if (!DecidesSuccess(type)) continue;
      const bool succeeded = TypeSucceeded(type);
      if (ActiveCount(type) > 0 && (has_chief || !succeeded)) SetRunning();
      if (succeeded) return SucceedOrAwaitEvaluator(type);
    }
    return false;
  }

  // Whether `type`'s success may be the job's: the chief's (or master's) type; without one, the
  // workers.
  bool DecidesSuccess(ReplicaType type) const {
    return HasChiefOrMaster(job_.spec) ? IsChiefOrMaster(type) : type == ReplicaType::kWorker;
  }

  // The success rule for one deciding type: every replica succeeded; for workers under the
  // default successPolicy, worker 0 did.
  bool TypeSucceeded(ReplicaType type) const {
    const auto spec = job_.spec.replica_specs.find(type);
    const auto counts = update_.status.replica_statuses.find(type);
    if (spec == job_.spec.replica_specs.end() || counts == update_.status.replica_statuses.end()) {
      return false;
    }
    if (spec->second.replicas - counts->second.succeeded <= 0) return true;
    if (!WorkerZeroDecides(type)) return false;
    const auto& indexes = counts->second.succeeded_indexes;
    return std::binary_search(indexes.begin(), indexes.end(), 0);
  }

  bool WorkerZeroDecides(ReplicaType type) const {
    return type == ReplicaType::kWorker && !HasChiefOrMaster(job_.spec) &&
           job_.spec.success_policy != SuccessPolicy::kAllWorkers;
  }

  int ActiveCount(ReplicaType type) const {
    const auto counts = update_.status.replica_statuses.find(type);
    return counts == update_.status.replica_statuses.end() ? 0 : counts->second.active;
  }

  // The type whose success is the job's, once the success rule holds.
  std::optional<ReplicaType> SucceededBy() const {
    for (ReplicaType type : kStatusOrder) {
      if (DecidesSuccess(type) && TypeSucceeded(type)) return type;
    }
    return std::nullopt;
  }

  bool SucceedOrAwaitEvaluator(ReplicaType decided_by) {
    if (const std::optional<Time> until = EvaluatorWaitEnd(decided_by)) {
      // The job still runs (its evaluator scores the final checkpoint), also when its chief
      // ended before any observation counted it active (rule 7).
      SetRunning();
      update_.awaiting_evaluator_until = *until;
      Requeue(*until);
      return false;
    }
    Finish(ConditionType::kSucceeded, kReasonSucceeded,
           "TFJob " + Key() + " successfully completed.");
    return true;
  }

  std::chrono::seconds EvaluatorGrace() const {
    return std::min(options_.evaluator_grace, kMaxEvaluatorGrace);
  }

  // A job with an Evaluator, and a grace to give it.
  bool MayAwaitEvaluator() const {
    const auto evaluator = job_.spec.replica_specs.find(ReplicaType::kEvaluator);
    return EvaluatorGrace().count() > 0 && evaluator != job_.spec.replica_specs.end() &&
           evaluator->second.replicas > 0;
  }

  // Until when the job's success waits for its evaluator (rule 7 in status.h); std::nullopt when
  // it does not wait.
  std::optional<Time> EvaluatorWaitEnd(ReplicaType decided_by) const {
    if (!MayAwaitEvaluator() || !EvaluatorActive()) return std::nullopt;
    const std::optional<Time> finished = SucceededAt(decided_by);
    const std::chrono::seconds grace = EvaluatorGrace();
    if (!finished || *finished > now_ + grace) return std::nullopt;
    const Time until = *finished + grace;
    if (now_ >= until) return std::nullopt;
    return until;
  }

  bool EvaluatorActive() const {
    return std::any_of(observed_.begin(), observed_.end(), [this](const ObservedReplica& r) {
      return r.type == ReplicaType::kEvaluator && InSpec(job_.spec, r.type, r.index) &&
             !r.terminating &&
             (r.phase == ReplicaPhase::kRunning || r.phase == ReplicaPhase::kPending);
    });
  }

  // When the replicas whose success is the job's ended: the latest finished_at of those the
  // success rule counts (every replica of `type`; worker 0 alone under the default
  // successPolicy). std::nullopt when one of them is not observed Succeeded with a finished_at
  // (a pod garbage-collected, a status without finishedAt).
  std::optional<Time> SucceededAt(ReplicaType type) const {
    const bool worker_zero = WorkerZeroDecides(type);
    const auto spec = job_.spec.replica_specs.find(type);
    if (spec == job_.spec.replica_specs.end()) return std::nullopt;
    const std::size_t needed = worker_zero ? 1 : static_cast<std::size_t>(spec->second.replicas);
    std::set<int> seen;
    std::optional<Time> latest;
    for (const ObservedReplica& r : observed_) {
      if (r.type != type || !InSpec(job_.spec, type, r.index) || (worker_zero && r.index != 0) ||
          r.phase != ReplicaPhase::kSucceeded || !r.finished_at) {
        continue;
      }
      seen.insert(r.index);
      if (!latest || *r.finished_at > *latest) latest = r.finished_at;
    }
    if (seen.size() < needed) return std::nullopt;
    return latest;
  }

  void SetRunning() {
    Set(ConditionType::kRunning, ConditionStatus::kTrue, kReasonRunning,
        "TFJob " + Key() + " is running.", false);
  }

  // Counts the restarts decided now (the replica's next pod starts a new restartCount) and sets
  // Restarting when any replica restarted, here or in place.
  void CommitRestarts() {
    for (const ReplicaRef& replica : restarts_) {
      ReplicaStatus& counts = status().replica_statuses[replica.type];
      ++counts.restarts;
      counts.container_restarts.erase(replica.index);
    }
    update_.restart = restarts_;
    for (ReplicaType type : kStatusOrder) {
      const int restarting = tally_[type].restarting;
      if (restarting == 0) continue;
      Set(ConditionType::kRestarting, ConditionStatus::kTrue, kReasonRestarting,
          "TFJob " + Key() + " is restarting because " + std::to_string(restarting) + " " +
              std::string(ReplicaTypeName(type)) + " replica(s) failed.",
          true);
      break;
    }
  }

  void UpdateStuck() {
    if (options_.stuck_after.count() <= 0) return;
    std::optional<Stuck> stuck;
    for (const ObservedReplica& replica : observed_) {
      if (!InSpec(job_.spec, replica.type, replica.index) || replica.terminating) continue;
      const bool waiting =
          replica.phase == ReplicaPhase::kPending ||
          (replica.phase == ReplicaPhase::kRunning && IsStuckWaitingReason(replica.reason));
      if (!waiting || !replica.waiting_since) continue;
      const Time due = *replica.waiting_since + options_.stuck_after;
      if (now_ < due) {
        Requeue(due);
      } else if (!stuck) {
        stuck = Stuck{{replica.type, replica.index},
                      replica.reason.empty() ? std::string("Pending") : replica.reason,
                      replica.message};
      }
    }
    if (stuck) {
      std::string message =
          "replica " + ReplicaName(job_.metadata.name, stuck->replica.type, stuck->replica.index) +
          " is stuck: " + stuck->reason;
      if (!stuck->message.empty()) message += ": " + stuck->message;
      Set(ConditionType::kStuck, ConditionStatus::kTrue, stuck->reason, std::move(message), true);
    } else if (HasTrueCondition(status(), ConditionType::kStuck)) {
      Set(ConditionType::kStuck, ConditionStatus::kFalse, kReasonUnstuck,
          "no replica is stuck any more", false);
    }
  }

  void ScheduleDeadline() {
    const auto& deadline = job_.spec.run_policy.active_deadline_seconds;
    // A job waiting for its evaluator has succeeded already: its deadline no longer applies.
    if (IsFinished(status()) || update_.awaiting_evaluator_until || !deadline ||
        !status().start_time) {
      return;
    }
    // A deadline past the clock's range (activeDeadlineSeconds up to 2^63-1) is never reached:
    // adding it would overflow and requeue the job in the past, every second.
    const auto start = status().start_time->time_since_epoch().count();
    if (*deadline > std::numeric_limits<Time::rep>::max() - start) return;
    Requeue(*status().start_time + std::chrono::seconds(*deadline));
  }

  void Requeue(Time at) {
    if (!update_.requeue_at || at < *update_.requeue_at) update_.requeue_at = at;
  }

  const TFJob& job_;
  const std::vector<ObservedReplica>& observed_;
  const Time now_;
  const StatusOptions& options_;
  StatusUpdate update_;
  std::map<ReplicaType, Tally> tally_;
  std::vector<ReplicaRef> restarts_;
};

}  // namespace

const JobCondition* FindCondition(const JobStatus& status, ConditionType type) {
  for (const JobCondition& condition : status.conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

bool HasTrueCondition(const JobStatus& status, ConditionType type) {
  const JobCondition* condition = FindCondition(status, type);
  return condition != nullptr && condition->status == ConditionStatus::kTrue;
}

bool IsSucceeded(const JobStatus& status) {
  return HasTrueCondition(status, ConditionType::kSucceeded);
}
bool IsFailed(const JobStatus& status) { return HasTrueCondition(status, ConditionType::kFailed); }
bool IsFinished(const JobStatus& status) { return IsSucceeded(status) || IsFailed(status); }
bool IsRunning(const JobStatus& status) {
  return HasTrueCondition(status, ConditionType::kRunning);
}
bool IsSuspended(const JobStatus& status) {
  return HasTrueCondition(status, ConditionType::kSuspended);
}

bool FailedByLimit(const JobStatus& status) {
  const JobCondition* failed = FindCondition(status, ConditionType::kFailed);
  if (failed == nullptr || failed->status != ConditionStatus::kTrue) return false;
  const std::string_view message = failed->message;
  return message.ends_with(kBackoffLimitSuffix) || message.ends_with(kDeadlineSuffix);
}

bool SetCondition(JobStatus& status, ConditionType type, ConditionStatus condition_status,
                  std::string_view reason, std::string message, Time now) {
  if (IsFinished(status)) return false;
  const JobCondition* current = FindCondition(status, type);
  if (current != nullptr && current->status == condition_status && current->reason == reason) {
    return false;
  }
  JobCondition condition{type, condition_status, std::string(reason), std::move(message), now, now};
  if (current != nullptr && current->status == condition_status) {
    condition.last_transition_time = current->last_transition_time;
  }
  const bool finishing = type == ConditionType::kSucceeded || type == ConditionType::kFailed;
  std::vector<JobCondition> kept;
  for (JobCondition existing : status.conditions) {
    if (existing.type == type) continue;
    if (type == ConditionType::kRestarting && existing.type == ConditionType::kRunning) continue;
    if (type == ConditionType::kRunning && existing.type == ConditionType::kRestarting) continue;
    if (finishing && existing.type == ConditionType::kRunning &&
        existing.status != ConditionStatus::kFalse) {
      existing.status = ConditionStatus::kFalse;
      existing.last_update_time = existing.last_transition_time = now;
    }
    kept.push_back(std::move(existing));
  }
  kept.push_back(std::move(condition));
  status.conditions = std::move(kept);
  return true;
}

bool StatusChanged(const JobStatus& before, const JobStatus& after) {
  return before.conditions != after.conditions ||
         before.replica_statuses != after.replica_statuses ||
         before.start_time != after.start_time || before.completion_time != after.completion_time ||
         ProgressChanged(before.progress, after.progress);
}

std::string_view ToString(ReplicaPhase phase) {
  switch (phase) {
    case ReplicaPhase::kPending:
      return "Pending";
    case ReplicaPhase::kRunning:
      return "Running";
    case ReplicaPhase::kSucceeded:
      return "Succeeded";
    case ReplicaPhase::kFailed:
      return "Failed";
    case ReplicaPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

std::optional<ReplicaPhase> ParseReplicaPhase(std::string_view text) {
  for (ReplicaPhase phase :
       {ReplicaPhase::kPending, ReplicaPhase::kRunning, ReplicaPhase::kSucceeded,
        ReplicaPhase::kFailed, ReplicaPhase::kUnknown}) {
    if (ToString(phase) == text) return phase;
  }
  return std::nullopt;
}

StatusUpdate ComputeJobStatus(const TFJob& job, const std::vector<ObservedReplica>& observed,
                              Time now, const StatusOptions& options) {
  return StatusComputation(job, observed, now, options).Run();
}

std::vector<ReplicaRef> ReplicasToCreate(const TFJob& job,
                                         const std::vector<ObservedReplica>& observed) {
  if (IsFinished(job.status) || job.spec.run_policy.suspend) return {};
  std::set<ReplicaRef> present;
  for (const ObservedReplica& replica : observed) present.insert({replica.type, replica.index});
  std::vector<ReplicaRef> missing;
  for (const auto& [type, spec] : job.spec.replica_specs) {
    std::vector<int> succeeded;
    if (const auto it = job.status.replica_statuses.find(type);
        it != job.status.replica_statuses.end()) {
      succeeded = it->second.succeeded_indexes;
    }
    for (int index = 0; index < spec.replicas; ++index) {
      if (present.contains({type, index})) continue;
      if (std::find(succeeded.begin(), succeeded.end(), index) != succeeded.end()) continue;
      missing.push_back({type, index});
    }
  }
  return missing;
}

std::vector<ReplicaRef> ReplicasToDelete(const TFJob& job,
                                         const std::vector<ObservedReplica>& observed) {
  const bool finished = IsFinished(job.status);
  const bool suspended = !finished && job.spec.run_policy.suspend;
  const CleanPodPolicy policy = job.spec.run_policy.clean_pod_policy;
  std::vector<ReplicaRef> doomed;
  for (const ObservedReplica& replica : observed) {
    if (replica.terminating) continue;
    const bool active =
        replica.phase == ReplicaPhase::kRunning || replica.phase == ReplicaPhase::kPending;
    // Kubeflow deletes every pod of a job that fails past its limits, whatever cleanPodPolicy
    // says: a job past its deadline must not keep a running pod and its GPUs.
    const bool remove = !InSpec(job.spec, replica.type, replica.index) || suspended ||
                        (finished && (policy == CleanPodPolicy::kAll || FailedByLimit(job.status) ||
                                      (policy == CleanPodPolicy::kRunning && active)));
    if (remove) doomed.push_back({replica.type, replica.index});
  }
  return doomed;
}

std::optional<Time> TtlExpiry(const TFJob& job) {
  const auto& ttl = job.spec.run_policy.ttl_seconds_after_finished;
  if (!IsFinished(job.status) || !ttl || !job.status.completion_time) return std::nullopt;
  return *job.status.completion_time + std::chrono::seconds(*ttl);
}

bool TtlExpired(const TFJob& job, Time now) {
  const std::optional<Time> expiry = TtlExpiry(job);
  return expiry && now >= *expiry;
}

}  // namespace taas::tfjob
