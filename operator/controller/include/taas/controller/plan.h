// The reconcile's decision, apart from its I/O. The controller observes a job's children in its
// caches (Observation), decides here what the job's status becomes and which children to create
// and delete (Decide, pure), then acts on the API server. Everything in this header is pure and
// unit tested without an API server.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "taas/job_report/job_report.h"
#include "taas/tfjob/progress.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/tfjob.h"

namespace taas::controller {

// One pod controlled by the job, as the cache shows it.
struct ObservedPod {
  std::string name;
  std::string uid;
  // What the pod says about its replica; std::nullopt when it lacks the replica labels (such a
  // pod still blocks its name).
  std::optional<taas::tfjob::ObservedReplica> replica;
  // Deleted by this controller (in memory), the deletion not yet seen by the informer.
  bool deleting = false;
  // Its training container's termination message once that exited (TerminationMessage in
  // builders.h): the chief's job report, with an error when its evaluation failed.
  std::optional<std::string> termination_message;
  // The node it is bound to (spec.nodeName); empty while unscheduled.
  std::string node;
  // Which (re)creation of its replica it is (PodIncarnation in builders.h; 0: not numbered).
  std::uint64_t incarnation = 0;
};

// One service controlled by the job.
struct ObservedService {
  std::string name;
  bool terminating = false;  // has a deletionTimestamp
};

// A job's children: the caches corrected by the controller's expectations.
struct Observation {
  std::vector<ObservedPod> pods;
  // Pods created by this controller and not in the cache yet (they count as Pending replicas).
  std::vector<taas::tfjob::ReplicaRef> expected_pods;
  std::vector<ObservedService> services;
  // Services created by this controller and not in the cache yet.
  std::set<std::string> expected_services;
  // Pods to replace because their node failed (node_failure.h, PlanNodeFailures): uid -> why.
  // Deleted forced, and counted as terminating: a replica lost with its node is no failure and
  // no restart, as a pod deleted by hand is not (Kubeflow's restart rules stay for the rest).
  std::map<std::string, std::string> lost_pods;
};

// The UIDs of the pods whose failure has already been counted as a restart (in
// replicaStatuses[type].restarts). Persisted in the same status write as the count, as the taas
// status extension `restartedPods`, so that a crash between that write and the pod's deletion
// never counts the same pod twice: a pod in the ledger is treated as already being deleted.
using RestartLedger = std::set<std::string>;

// Reads `restartedPods` (an array of pod UIDs) from a TFJob's status JSON; empty when absent.
RestartLedger LedgerFromStatus(const nlohmann::json& status);
// Writes the ledger into a status JSON (removes the field when the ledger is empty).
void LedgerToStatus(const RestartLedger& ledger, nlohmann::json& status);

struct PodToDelete {
  std::string uid;  // the delete is preconditioned on it: a newer pod of the name is kept
  std::string name;
  std::string why;       // "restart after exit code 137", "cleanPodPolicy", "job suspended", ...
  bool restart = false;  // a restart (decided now, or still to finish after an earlier decision)
  bool newly_restarted = false;  // a restart decided by this very decision (worth an Event)
  // gracePeriodSeconds 0: the pod's node failed, and its kubelet cannot confirm a graceful end.
  bool force = false;
};

struct ServiceToDelete {
  std::string name;
  std::string why;
};

struct Decision {
  // The new status, the condition-change events and when to look again (requeue_at).
  taas::tfjob::StatusUpdate update;
  // The restart ledger to write with the status: the old one, minus pods no longer observed,
  // plus the pods restarted now.
  RestartLedger ledger;
  // The status (and ledger) must be written: the status changed, or the ledger gained a pod.
  bool write_status = false;

  std::vector<taas::tfjob::ReplicaRef> create_pods;
  // The job's Secret and NetworkPolicy must exist before any pod is created (the pods mount the
  // Secret; the policy guards them from their first second).
  bool ensure_job_access = false;
  // Services are created once none of the job's pods is left to create: a pod, not its
  // service, is what the job waits for, so under load the API server gets every job's pods first.
  std::vector<taas::tfjob::ReplicaRef> create_services;
  std::vector<PodToDelete> delete_pods;
  std::vector<ServiceToDelete> delete_services;
  // A replica to create is blocked by an old pod of the same name (terminating, or owned by
  // someone else): look again soon.
  bool blocked = false;
};

// The replicas as taas::tfjob::ComputeJobStatus must see them: every labelled pod (a pod this
// controller is deleting, whose restart the ledger already counted, or lost with its node, as
// terminating) plus the expected pods as Pending.
std::vector<taas::tfjob::ObservedReplica> ReplicasForStatus(const Observation& seen,
                                                            const RestartLedger& ledger);

// The highest incarnation of the observed pods named `pod_name` (those still terminating
// included); 0 when none is observed. NextIncarnation (builders.h) numbers its next pod above it.
// Pure.
std::uint64_t NewestIncarnation(const Observation& seen, const std::string& pod_name);

// The whole decision for `job` (defaulted and validated; its `status` is the one last written)
// given what is observed now. Pure.
Decision Decide(const taas::tfjob::TFJob& job, const RestartLedger& ledger, const Observation& seen,
                taas::tfjob::Time now, const taas::tfjob::StatusOptions& options);

// What a replica left as its result: its training container's termination message (its job
// report, taas/job_report) and when it exited (ObservedReplica::finished_at).
struct ReplicaMessage {
  std::string pod;
  std::string text;
  std::optional<taas::tfjob::Time> finished_at;
};
// The messages the job's result is read from (job_report::JobResult): its chief's (the pod whose
// replica IsMasterRole: Chief/Master, else Worker 0) and its Evaluator's; each std::nullopt while
// that pod has not exited with one. Pure.
struct ResultMessages {
  std::optional<ReplicaMessage> chief;
  std::optional<ReplicaMessage> evaluator;
};
ResultMessages FindResultMessages(const taas::tfjob::TFJobSpec& spec, const Observation& seen);

// The job's result (job_report::JobResult of its ResultMessages, parsed), and when: the exit of
// the replica whose report it is, else when it was read.
struct ReportedResult {
  taas::job_report::JobReport report;
  taas::tfjob::Time at;
};
// That result from the reports parsed from `messages` (`chief`, `evaluator`: std::nullopt where a
// message is missing or no report), at the finished_at of the message it came from, else `now`.
// Pure.
std::optional<ReportedResult> PickResult(
    const ResultMessages& messages, const std::optional<taas::job_report::JobReport>& chief,
    const std::optional<taas::job_report::JobReport>& evaluator, taas::tfjob::Time now);

// The status.progress that goes out with the decided status (taas/tfjob/progress.h), given the
// tracker's newest progress of the job (`latest`; ProgressTracker) and whether it is due for a
// write on its own (`due`: ProgressWriteDue):
//  - a job finished before this decision keeps what it has: nothing more is written for it;
//  - a job this decision finishes gets FinishedProgress of the newest progress it has, with the
//    job's `result` over it (WithJobReport), in the same write as the condition that finishes
//    it (no write of its own);
//  - a running job whose chief left its `result` (it waits for its evaluator) gets it at once,
//    over its progress (`latest` when that is due, else the status's): a result is worth a write;
//  - a running job gets `latest` when it is due, and whenever the status is written anyway (a
//    condition or a count changed: the progress rides along for free);
//  - a suspended job's progress loses its ETA when its status is written anyway.
// Sets decision.write_status when the progress changes what is written. Pure.
void DecideProgress(const taas::tfjob::JobStatus& before,
                    const std::optional<taas::tfjob::JobProgress>& latest, bool due,
                    const std::optional<ReportedResult>& result, Decision& decision);

}  // namespace taas::controller
