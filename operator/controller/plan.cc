#include "taas/controller/plan.h"

#include <algorithm>
#include <map>

#include "taas/controller/progress.h"
#include "taas/tfjob/labels.h"

namespace taas::controller {

namespace tf = taas::tfjob;
using nlohmann::json;

namespace {

constexpr char kLedgerField[] = "restartedPods";

// A pod is being deleted for a restart: by this controller now (in memory), or after a restart
// the ledger already counted.
bool AlreadyRestarting(const ObservedPod& pod, const RestartLedger& ledger) {
  return pod.deleting || ledger.count(pod.uid) != 0;
}

std::string RestartWhy(const tf::ObservedReplica& replica) {
  return replica.exit_code ? "restart after exit code " + std::to_string(*replica.exit_code)
                           : std::string("restart");
}

// The children the decided status asks for. `pods` maps each replica to its pod.
class ChildPlanner {
 public:
  ChildPlanner(const tf::TFJob& job, const Observation& seen, const RestartLedger& ledger,
               const std::vector<tf::ObservedReplica>& replicas, Decision& out)
      : job_(job), seen_(seen), ledger_(ledger), replicas_(replicas), out_(out) {
    for (const auto& pod : seen.pods) {
      pod_names_.insert(pod.name);
      if (pod.replica) by_ref_[tf::ReplicaRef{pod.replica->type, pod.replica->index}] = &pod;
    }
    for (const auto& svc : seen.services) service_names_.insert(svc.name);
    service_names_.insert(seen.expected_services.begin(), seen.expected_services.end());
  }

  void Plan(const std::vector<tf::ReplicaRef>& restarts) {
    const bool finished = tf::IsFinished(job_.status);
    const bool suspended = job_.spec.run_policy.suspend && !finished;
    PlanLostPods();  // first: a lost pod's deletion is forced, whatever else wants it gone
    PlanRestarts(restarts);
    PlanCleanup(finished, suspended);
    PlanPods();
    PlanServices(finished, suspended);
  }

 private:
  void DeletePod(const ObservedPod& pod, std::string why, bool restart, bool newly,
                 bool force = false) {
    if (!deleting_.insert(pod.uid).second) return;
    out_.delete_pods.push_back({pod.uid, pod.name, std::move(why), restart, newly, force});
  }

  // Pods whose node failed (Observation::lost_pods): deleted forced, neither a failure nor a
  // restart; ReplicasToCreate recreates them once they are gone.
  void PlanLostPods() {
    for (const auto& pod : seen_.pods) {
      auto lost = seen_.lost_pods.find(pod.uid);
      if (lost != seen_.lost_pods.end()) DeletePod(pod, lost->second, false, false, true);
    }
  }

  // Restarts decided now (counted in the new status), then deletions still owed for restarts
  // decided earlier (the informer still shows the pod alive).
  void PlanRestarts(const std::vector<tf::ReplicaRef>& restarts) {
    for (const auto& ref : restarts) {
      auto it = by_ref_.find(ref);
      if (it == by_ref_.end()) continue;
      DeletePod(*it->second, RestartWhy(*it->second->replica), true, true);
    }
    for (const auto& pod : seen_.pods) {
      if (pod.replica && !pod.replica->terminating && AlreadyRestarting(pod, ledger_))
        DeletePod(pod, "restart (retry)", true, false);
    }
  }

  // Pods outside the spec, every pod while suspended, and per cleanPodPolicy once finished
  // (with their services).
  void PlanCleanup(bool finished, bool suspended) {
    const char* finished_why =
        tf::FailedByLimit(job_.status) ? "failed past backoffLimit or deadline" : "cleanPodPolicy";
    for (const auto& ref : tf::ReplicasToDelete(job_, replicas_)) {
      auto it = by_ref_.find(ref);
      if (it == by_ref_.end()) continue;
      DeletePod(*it->second,
                suspended  ? "job suspended"
                : finished ? finished_why
                           : "not in spec",
                false, false);
      if (finished) {
        std::string svc = tf::ReplicaName(job_.metadata.name, ref.type, ref.index);
        if (service_names_.count(svc) != 0) out_.delete_services.push_back({svc, finished_why});
      }
    }
  }

  // Every missing replica; an old pod of the same name in the way blocks its replica.
  void PlanPods() {
    for (const auto& ref : tf::ReplicasToCreate(job_, replicas_)) {
      if (pod_names_.count(tf::ReplicaName(job_.metadata.name, ref.type, ref.index)) != 0) {
        out_.blocked = true;
        continue;
      }
      out_.create_pods.push_back(ref);
    }
  }

  // One service per replica of the spec while the job runs (none while suspended), created once
  // no pod is left to create; services outside that set are deleted.
  void PlanServices(bool finished, bool suspended) {
    if (finished) return;
    std::set<std::string> wanted;
    if (!suspended) {
      for (const auto& [type, spec] : job_.spec.replica_specs) {
        for (int i = 0; i < spec.replicas; ++i) {
          std::string name = tf::ReplicaName(job_.metadata.name, type, i);
          wanted.insert(name);
          if (service_names_.count(name) == 0 && out_.create_pods.empty())
            out_.create_services.push_back({type, i});
        }
      }
    }
    for (const auto& svc : seen_.services) {
      if (wanted.count(svc.name) == 0 && !svc.terminating)
        out_.delete_services.push_back({svc.name, suspended ? "job suspended" : "not in spec"});
    }
  }

  const tf::TFJob& job_;
  const Observation& seen_;
  const RestartLedger& ledger_;
  const std::vector<tf::ObservedReplica>& replicas_;
  Decision& out_;
  std::map<tf::ReplicaRef, const ObservedPod*> by_ref_;
  std::set<std::string> pod_names_;
  std::set<std::string> service_names_;  // existing and expected
  std::set<std::string> deleting_;       // pod UIDs already planned for deletion
};

}  // namespace

RestartLedger LedgerFromStatus(const json& status) {
  RestartLedger ledger;
  if (!status.is_object()) return ledger;
  auto it = status.find(kLedgerField);
  if (it == status.end() || !it->is_array()) return ledger;
  for (const auto& uid : *it) {
    if (uid.is_string()) ledger.insert(uid.get<std::string>());
  }
  return ledger;
}

void LedgerToStatus(const RestartLedger& ledger, json& status) {
  if (ledger.empty()) {
    status.erase(kLedgerField);
    return;
  }
  status[kLedgerField] = json(std::vector<std::string>(ledger.begin(), ledger.end()));
}

std::vector<tf::ObservedReplica> ReplicasForStatus(const Observation& seen,
                                                   const RestartLedger& ledger) {
  std::vector<tf::ObservedReplica> replicas;
  replicas.reserve(seen.pods.size() + seen.expected_pods.size());
  for (const auto& pod : seen.pods) {
    if (!pod.replica) continue;
    replicas.push_back(*pod.replica);
    if (AlreadyRestarting(pod, ledger) || seen.lost_pods.count(pod.uid) != 0)
      replicas.back().terminating = true;
  }
  for (const auto& ref : seen.expected_pods) {
    tf::ObservedReplica pending;
    pending.type = ref.type;
    pending.index = ref.index;
    pending.phase = tf::ReplicaPhase::kPending;
    replicas.push_back(pending);
  }
  return replicas;
}

std::uint64_t NewestIncarnation(const Observation& seen, const std::string& pod_name) {
  std::uint64_t newest = 0;
  for (const ObservedPod& pod : seen.pods)
    if (pod.name == pod_name) newest = std::max(newest, pod.incarnation);
  return newest;
}

Decision Decide(const tf::TFJob& job, const RestartLedger& ledger, const Observation& seen,
                tf::Time now, const tf::StatusOptions& options) {
  Decision out;
  const std::vector<tf::ObservedReplica> replicas = ReplicasForStatus(seen, ledger);
  out.update = tf::ComputeJobStatus(job, replicas, now, options);

  tf::TFJob decided = job;
  decided.status = out.update.status;
  ChildPlanner(decided, seen, ledger, replicas, out).Plan(out.update.restart);
  out.ensure_job_access = !out.create_pods.empty();

  // The ledger keeps the pods still observed (a UID never comes back once its pod is gone).
  for (const auto& pod : seen.pods) {
    if (ledger.count(pod.uid) != 0) out.ledger.insert(pod.uid);
  }
  bool ledger_grew = false;
  for (const auto& deletion : out.delete_pods) {
    if (deletion.newly_restarted) ledger_grew |= out.ledger.insert(deletion.uid).second;
  }
  out.write_status = ledger_grew || tf::StatusChanged(job.status, out.update.status);
  return out;
}

ResultMessages FindResultMessages(const tf::TFJobSpec& spec, const Observation& seen) {
  ResultMessages found;
  for (const ObservedPod& pod : seen.pods) {
    if (!pod.replica || !pod.termination_message) continue;
    const ReplicaMessage message{pod.name, *pod.termination_message, pod.replica->finished_at};
    if (tf::IsMasterRole(spec, pod.replica->type, pod.replica->index)) {
      found.chief = message;
    } else if (tf::IsResultEvaluator(pod.replica->type, pod.replica->index)) {
      found.evaluator = message;
    }
  }
  return found;
}

std::optional<ReportedResult> PickResult(const ResultMessages& messages,
                                         const std::optional<job_report::JobReport>& chief,
                                         const std::optional<job_report::JobReport>& evaluator,
                                         tf::Time now) {
  const std::optional<job_report::JobReport> result = job_report::JobResult(chief, evaluator);
  if (!result) return std::nullopt;
  const std::optional<ReplicaMessage>& source =
      result == chief ? messages.chief : messages.evaluator;
  tf::Time at = now;
  if (source && source->finished_at) at = *source->finished_at;
  return ReportedResult{*result, at};
}

void DecideProgress(const tf::JobStatus& before, const std::optional<tf::JobProgress>& latest,
                    bool due, const std::optional<ReportedResult>& result, Decision& decision) {
  tf::JobStatus& after = decision.update.status;
  if (tf::IsFinished(before)) return;  // `after` kept the progress it had
  std::optional<tf::JobProgress> newest = latest ? latest : before.progress;
  if (tf::IsFinished(after)) {
    if (newest) newest = FinishedProgress(*std::move(newest), after);
    if (result)
      newest = WithJobReport(newest.value_or(tf::JobProgress{}), result->report, result->at);
    if (newest) after.progress = std::move(newest);
  } else if (result) {
    const std::optional<tf::JobProgress>& base =
        latest && (due || decision.write_status) ? latest : before.progress;
    after.progress = WithJobReport(base.value_or(tf::JobProgress{}), result->report, result->at);
  } else if (latest && (due || decision.write_status)) {
    after.progress = latest;
  } else if (tf::IsSuspended(after) && decision.write_status && after.progress) {
    after.progress->eta_seconds.reset();
  }
  decision.write_status =
      decision.write_status || tf::ProgressChanged(before.progress, after.progress);
}

}  // namespace taas::controller
