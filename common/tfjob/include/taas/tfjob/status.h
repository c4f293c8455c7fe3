// The job status computation, with Kubeflow's condition semantics, from the observed state of
// each replica. The operator feeds it pod states, the launcher process states; both act on the
// same answer. Pure: `now` is passed in, nothing is read from the environment.
#pragma once

#include <chrono>
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// Condition reasons, as Kubeflow's NewReason("TFJob", ...) spells them.
inline constexpr std::string_view kReasonCreated = "TFJobCreated";
inline constexpr std::string_view kReasonRunning = "TFJobRunning";
inline constexpr std::string_view kReasonRestarting = "TFJobRestarting";
inline constexpr std::string_view kReasonSucceeded = "TFJobSucceeded";
inline constexpr std::string_view kReasonFailed = "TFJobFailed";
inline constexpr std::string_view kReasonSuspended = "TFJobSuspended";
inline constexpr std::string_view kReasonResumed = "TFJobResumed";
// Reason of a Stuck condition with status False once no replica is stuck any more.
inline constexpr std::string_view kReasonUnstuck = "TFJobReplicasProgressing";

// ---------------------------------------------------------------------------------------------
// Conditions

// The condition of that type, or nullptr.
const JobCondition* FindCondition(const JobStatus& status, ConditionType type);
// True when the condition of that type exists with status True.
bool HasTrueCondition(const JobStatus& status, ConditionType type);
bool IsSucceeded(const JobStatus& status);
bool IsFailed(const JobStatus& status);
bool IsFinished(const JobStatus& status);  // Succeeded or Failed
bool IsRunning(const JobStatus& status);
bool IsSuspended(const JobStatus& status);
// Failed because of backoffLimit or activeDeadlineSeconds (read from the Failed condition's
// message, Kubeflow's, so a restarted operator knows it from the status alone).
bool FailedByLimit(const JobStatus& status);

// Kubeflow's UpdateJobConditions, plus "finished is final". Returns whether `status` changed.
//  - nothing changes once the job is Succeeded or Failed;
//  - nothing changes when the condition exists with the same status and reason (a new message
//    alone is not a change);
//  - lastUpdateTime becomes `now`; lastTransitionTime becomes `now` only when the status changes;
//  - the condition moves to the end of the list; Running and Restarting replace each other;
//    setting Succeeded or Failed sets an existing Running condition to False.
bool SetCondition(JobStatus& status, ConditionType type, ConditionStatus condition_status,
                  std::string_view reason, std::string message, Time now);

// Whether the status must be written: any difference except lastReconcileTime (and the
// progress's lastUpdateTime, ProgressChanged).
bool StatusChanged(const JobStatus& before, const JobStatus& after);

// ---------------------------------------------------------------------------------------------
// Observed replicas

enum class ReplicaPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };  // pod phases

std::string_view ToString(ReplicaPhase phase);
std::optional<ReplicaPhase> ParseReplicaPhase(std::string_view text);  // "Pending", ...

struct ReplicaRef {
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;

  auto operator<=>(const ReplicaRef&) const = default;
};

// What the caller sees of one replica (a pod, or a local process).
struct ObservedReplica {
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;
  ReplicaPhase phase = ReplicaPhase::kPending;
  // Exit code of the `tensorflow` container's last termination, when it terminated.
  std::optional<int> exit_code;
  // Restarts the object itself records (the container's restartCount; the launcher's in-place
  // restarts under Always/OnFailure). Restarts done by recreating the replica are NOT included.
  // The status adds each rise of this count to ReplicaStatus::restarts once (remembering the last
  // value per index in ReplicaStatus::container_restarts).
  int restarts = 0;
  // Being deleted (the pod has a deletionTimestamp).
  bool terminating = false;
  // Why it is not running: the pod's reason or its container's waiting reason
  // ("Unschedulable", "ImagePullBackOff", "CrashLoopBackOff", ...), with its message.
  std::string reason;
  std::string message;
  // Since when it has been Pending or waiting for `reason` (for the Stuck condition).
  std::optional<Time> waiting_since;
  // When it ended, for a replica Succeeded or Failed: its container's state.terminated.finishedAt
  // (a pod), its process's exit (the launcher). Read for the chief's success (rule 7); it may be
  // missing, or ahead of `now` (another machine's clock).
  std::optional<Time> finished_at;
};

// The longest StatusOptions::evaluator_grace that counts (the flags' upper bound): a longer one
// is cut to it.
inline constexpr std::chrono::seconds kMaxEvaluatorGrace{std::chrono::hours(1)};

struct StatusOptions {
  // A replica that is Pending, or waits in ImagePullBackOff, ErrImagePull, CrashLoopBackOff,
  // CreateContainerConfigError, CreateContainerError or InvalidImageName, for at least this long
  // makes the Stuck condition True. Zero disables the Stuck condition.
  std::chrono::seconds stuck_after{std::chrono::minutes(5)};
  // How long after the chief's success a job with an Evaluator waits for it to score the final
  // checkpoint before it is reported Succeeded (rule 7; docs/operator.md, "Waiting for the
  // evaluator", says why 2 minutes). Zero: Succeeded at the chief's success, as Kubeflow.
  std::chrono::seconds evaluator_grace{std::chrono::minutes(2)};
};

// An event worth a Kubernetes Event (or a log line locally): one per condition change.
struct JobEvent {
  bool warning = false;  // Warning (Failed, Restarting, Stuck) or Normal
  std::string reason;    // the condition's reason, e.g. "TFJobRestarting"
  std::string message;

  bool operator==(const JobEvent&) const = default;
};

struct StatusUpdate {
  JobStatus status;
  // Failed replicas to run again (the operator deletes the pod and recreates it later through
  // ReplicasToCreate; the launcher starts the process again). Their restarts are already counted
  // in status.replica_statuses[type].restarts, so the caller must act on each exactly once and
  // must not report the old incarnation again (creation/deletion expectations).
  std::vector<ReplicaRef> restart;
  std::vector<JobEvent> events;
  // When the status may change with no new observation (activeDeadlineSeconds, the Stuck
  // timeout, the end of the evaluator's grace); the caller should reconcile again then.
  std::optional<Time> requeue_at;
  // Set while the chief has succeeded and the job waits for its evaluator (rule 7): the end of
  // the grace, when the job is reported Succeeded at the latest.
  std::optional<Time> awaiting_evaluator_until;
};

// The new status of `job` (whose `status` is the previous one) given what is observed now.
// Rules, in order:
//  1. Finished (Succeeded/Failed) jobs keep their conditions; a succeeded job's active replicas
//     are counted as succeeded. Nothing else changes.
//  2. Created (TFJobCreated) is set when missing.
//  3. runPolicy.suspend: Running becomes False and Suspended True (TFJobSuspended), active counts
//     are zeroed, nothing else happens; when resumed, Suspended becomes False (TFJobResumed) and
//     startTime = now. Otherwise startTime is set to `now` when missing.
//  4. replicaStatuses are recounted for every type of the spec: Running and not terminating ->
//     active; Succeeded -> succeeded (and its index remembered in succeededIndexes, so a
//     garbage-collected pod still counts); Failed and not terminating -> failed, and
//     the policy picks restart or fail (Never: fail; OnFailure/Always: restart; ExitCode: restart
//     on IsRetryableExitCode, and a Failed replica without an exit code is retryable, like
//     Kubeflow's 0xbeef). A terminating replica counts as neither active nor failed: once gone it
//     is recreated (a pod deleted by hand or lost with its node). Replicas of other types or
//     indices are ignored (ReplicasToDelete removes them).
//     A rise of a replica's in-place restart count since the last computation adds to
//     replicaStatuses[type].restarts (a lower count is a new pod: all of it is new).
//  5. Restarts (recorded, in place included, + decided now) of the types whose policy restarts
//     (not Never) above backoffLimit -> Failed (no restart happens); then activeDeadlineSeconds
//     passed since startTime -> Failed. Both with Kubeflow's messages ("Job <name> has failed
//     because ..."); ReplicasToDelete then removes every replica (FailedByLimit).
//  6. A replica under ExitCode failed with a permanent code -> Failed with Kubeflow's
//     `job "<name>" is failing because "<Type>" replica(s) failed.` (before success, as
//     Kubeflow's ReconcilePods, and under enableDynamicWorker too).
//  7. Success: the Chief/Master has succeeded; without a chief, worker 0 has succeeded (default
//     successPolicy) or every worker has (AllWorkers). Running (TFJobRunning) while the chief, or
//     without a chief any worker, is active.
//     Waiting for the evaluator (taas): in a job with an Evaluator, once the success rule holds,
//     success is decided first (before rules 5 and 6), so a wait never ends in a failure; the job
//     is reported Succeeded once no Evaluator replica is active (Running or Pending, not being
//     deleted: it exits once it scored the final checkpoint), or options.evaluator_grace after the
//     deciding replicas' finished_at (the latest of them), whichever comes first. Meanwhile the
//     job is Running (set then if the chief ended before it was ever seen active), the other
//     conditions stay, no replica is failed or restarted, requeue_at and awaiting_evaluator_until
//     are the grace's end. No wait when the grace is zero, a finished_at is missing, or one is
//     more than the grace ahead of `now` (no clock is that far off: waiting from it would not be
//     bounded).
//  8. Failed (TFJobFailed) when a replica under Never failed, except workers under
//     enableDynamicWorker; Restarting (TFJobRestarting) when a replica is restarted, now or in
//     place.
//  9. Stuck (taas): True while a replica is stuck (options.stuck_after), False once none is.
// Finishing sets completionTime and Running to False; conditions change per SetCondition.
StatusUpdate ComputeJobStatus(const TFJob& job, const std::vector<ObservedReplica>& observed,
                              Time now, const StatusOptions& options = {});

// Replicas to create now: none when the job is finished or suspended; otherwise every index of
// every type of the spec with no observed replica and not in succeededIndexes. Pass the job with
// the status returned by ComputeJobStatus.
std::vector<ReplicaRef> ReplicasToCreate(const TFJob& job,
                                         const std::vector<ObservedReplica>& observed);

// Replicas to delete now (terminating ones are never listed): indices or types outside the spec;
// every replica while suspended; every replica of a job FailedByLimit, whatever cleanPodPolicy
// says (as Kubeflow); otherwise once finished, per cleanPodPolicy (All: every replica; Running:
// Running and Pending ones, as Kubeflow; None: none).
std::vector<ReplicaRef> ReplicasToDelete(const TFJob& job,
                                         const std::vector<ObservedReplica>& observed);

// When a finished job with ttlSecondsAfterFinished is to be deleted (completionTime + ttl);
// std::nullopt when it is not finished, has no TTL or no completionTime.
std::optional<Time> TtlExpiry(const TFJob& job);
bool TtlExpired(const TFJob& job, Time now);

}  // namespace taas::tfjob
