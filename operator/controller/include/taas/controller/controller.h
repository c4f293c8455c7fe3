// The TFJob controller: informers on TFJobs and on the pods and services the operator created,
// a rate-limited work queue of job keys, and N workers running an idempotent, level-triggered
// reconcile in three steps:
//   observe  the job's children in the caches, corrected by the expectations (Observe);
//   decide   the new status and the children to create and delete (plan.h, pure: Decide);
//   act      write the status through `/status` when it changed (retrying on 409 with a fresh
//            read), then delete and create children through a shared, bounded pool of API calls.
// The decision never comes from the triggering event, only from the spec and what is observed.
//
// Expectations (like client-go's ControllerExpectations) make a burst of events or a stale cache
// safe: pods created but not yet seen count as Pending replicas, and pods deleted (or to delete)
// for a restart count as terminating until the informer reports them gone, so nothing is created
// or restarted twice. Restarts are counted once per pod UID even across a crash (plan.h,
// RestartLedger).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "taas/base/log.h"
#include "taas/controller/builders.h"
#include "taas/controller/metrics.h"
#include "taas/controller/node_failure.h"
#include "taas/controller/plan.h"
#include "taas/controller/progress.h"
#include "taas/kube/client.h"
#include "taas/kube/events.h"
#include "taas/kube/informer.h"
#include "taas/kube/workqueue.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/validation.h"

namespace taas::controller {

class ProgressTracker;
class TaskPool;

struct ControllerOptions {
  std::vector<std::string> namespaces;  // empty: every namespace
  int workers = 4;
  // API calls (creates, deletes) in flight at once, over every worker: the size of the shared
  // pool that runs them.
  int create_parallelism = 16;
  // A change of a child (pod, service) is reconciled this long after it arrives, so a burst of
  // changes to one job (its pods starting one after the other) makes one reconcile and at most
  // one status write. Changes of the TFJob itself are reconciled at once.
  std::chrono::milliseconds child_event_delay{250};
  BuildOptions build;
  taas::tfjob::StatusOptions status;
  // Size limits every TFJob is validated against (`--max-replicas-per-job` lowers them).
  taas::tfjob::Limits limits;
  std::chrono::seconds resync_period{std::chrono::minutes(5)};
  std::string host = "taas-operator";  // Event source.host
  // Running jobs' status.progress, read from their chiefs (progress.h).
  ProgressOptions progress;
  // A job's pods on a node NotReady or unreachable this long are replaced elsewhere
  // (node_failure.h; --node-failure-seconds). Zero: off, and nodes are not watched.
  std::chrono::seconds node_failure_after{60};
};

class Controller {
 public:
  Controller(kube::Client* client, ControllerOptions options, Logger logger);  // client not owned
  ~Controller();                                                               // stops
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Starts the informers, waits for their first LIST, then starts the workers. Returns false
  // when the caches did not sync within `sync_timeout`.
  bool Start(std::chrono::milliseconds sync_timeout);
  void Stop();
  bool Synced() const;

  // Prometheus text: reconcile counts and latency histogram, queue depth, API requests/errors,
  // jobs by state, children created/deleted, progress reads and writes.
  std::string RenderMetrics() const;
  const Metrics& metrics() const { return metrics_; }

 private:
  struct Expectations {
    // Pods created and not yet seen by the informer: name -> replica and give-up time.
    std::map<std::string, std::pair<taas::tfjob::ReplicaRef, std::chrono::steady_clock::time_point>>
        pods;
    std::map<std::string, std::chrono::steady_clock::time_point> services;
    // Pods deleted (or still to delete) by this controller: uid -> name.
    std::map<std::string, std::string> deleting;
  };
  struct Watched {
    std::unique_ptr<kube::Informer> jobs, pods, services;
  };
  // The job being reconciled: who it is, for API paths, Events and logs.
  struct JobContext {
    std::string key, ns, name, uid;
    kube::ObjectReference ref;
    Logger log;
  };

  void Worker();
  absl::Status Reconcile(const std::string& key);
  // Decide (plan.h), with the job's newest progress (DecideProgress) when progress is on.
  Decision DecideAll(const JobContext& ctx, const taas::tfjob::TFJob& job,
                     const RestartLedger& ledger, const Observation& seen, taas::tfjob::Time now);
  // Reads a running job's progress from now on; stops once it finished or is suspended.
  void FollowProgress(const JobContext& ctx, const taas::tfjob::TFJob& job);
  Observation Observe(const JobContext& job, const Watched& watched);
  // Writes the decided status when it changed; on a 409 reads the job again, decides again
  // (replacing `job` and `decision`) and retries. `gone`: the job no longer exists (or became
  // invalid, which HandleInvalid reports): nothing else to do.
  absl::Status WriteDecidedStatus(const JobContext& ctx, nlohmann::json object,
                                  taas::tfjob::TFJob& job, const Observation& seen,
                                  taas::tfjob::Time now, Decision& decision, bool& gone);
  absl::Status Act(const JobContext& ctx, const nlohmann::json& object, taas::tfjob::TFJob& job,
                   const Observation& seen, taas::tfjob::Time now, Decision& decision, bool& gone,
                   bool& blocked);
  absl::Status FollowUp(const JobContext& ctx, const taas::tfjob::TFJob& job,
                        const Decision& decision, bool blocked, bool acted_ok,
                        taas::tfjob::Time now);
  void EnsurePodGroup(const JobContext& ctx, const taas::tfjob::TFJob& job, const Gang& gang);
  // A Warning event when the replica specs of a job not finished disagree on a setting their
  // replicas must share (taas/tfjob/settings.h), once per job generation: an edited spec is
  // judged again. Judged generations are kept in memory, so an operator that restarts warns
  // once more.
  void WarnOnSettings(const JobContext& ctx, const taas::tfjob::TFJob& job);
  // The job's Secret (created once, read back when it exists, never regenerated) and its
  // NetworkPolicy, before any of its pods; once per job UID.
  absl::Status EnsureJobAccess(const JobContext& ctx, const taas::tfjob::TFJob& job);
  absl::Status EnsureJobSecret(const JobContext& ctx, const taas::tfjob::TFJob& job);
  absl::Status EnsureNetworkPolicy(const JobContext& ctx, const taas::tfjob::TFJob& job);
  // `newest_incarnation`: the highest incarnation of the replica's pods observed
  // (NewestIncarnation); the pod is numbered above it (NextIncarnation).
  std::function<absl::Status()> CreatePodTask(const JobContext& ctx, const taas::tfjob::TFJob& job,
                                              taas::tfjob::ReplicaRef ref,
                                              std::uint64_t newest_incarnation,
                                              std::atomic<bool>& blocked);
  // Queued behind every pod creation; builds the service from the job when it runs.
  std::function<absl::Status()> CreateServiceTask(std::shared_ptr<const JobContext> ctx,
                                                  taas::tfjob::ReplicaRef ref);
  std::function<absl::Status()> DeletePodTask(const JobContext& ctx, const PodToDelete& pod);
  std::function<absl::Status()> DeleteServiceTask(const JobContext& ctx,
                                                  const ServiceToDelete& svc);
  absl::Status HandleInvalid(const nlohmann::json& object, const absl::Status& error);
  // PUTs a status body (status_write.h, StatusBody) to the job's `/status`.
  absl::StatusOr<nlohmann::json> PutStatus(const nlohmann::json& body);
  kube::ObjectPtr CurrentJob(const std::string& key);
  const Watched* WatchedFor(const std::string& namespace_name) const;
  void OnJob(const kube::Delta& delta);
  void OnChild(const kube::Delta& delta, bool is_pod);
  // A failed node enqueues the jobs with pods on it (their reconcile decides, PlanNodeFailures);
  // it also keeps when this operator first saw each node failed (NodeHealth::seen_since).
  void OnNode(const kube::Delta& delta);
  // The job's pods to replace because their node failed (empty for a finished job, or when
  // node failure handling is off), from the node cache.
  NodeFailurePlan PlanLostPods(const taas::tfjob::TFJob& job, const Observation& seen,
                               taas::tfjob::Time now);

  kube::Client* client_;
  const ControllerOptions options_;
  Logger logger_;
  Metrics metrics_;
  kube::WorkQueue queue_;
  kube::EventRecorder events_;
  std::map<std::string, Watched> watched_;  // by namespace ("" = all); fixed after construction
  std::unique_ptr<kube::Informer> nodes_;   // every node, trimmed; null when node failure is off
  std::vector<std::thread> workers_;
  std::unique_ptr<TaskPool> pool_;             // created by Start
  std::unique_ptr<ProgressTracker> progress_;  // created by Start unless progress is off

  mutable std::mutex mu_;
  std::unordered_map<std::string, Expectations> expectations_;  // guarded by mu_
  // Status objects this controller wrote that the informer may not show yet.
  std::unordered_map<std::string, kube::ObjectPtr> written_;  // guarded by mu_
  // TFJob UIDs whose PodGroup is known to exist (no GET per reconcile).
  std::set<std::string> pod_groups_;  // guarded by mu_
  // TFJob UIDs whose Secret and NetworkPolicy are known to exist.
  std::set<std::string> secured_;  // guarded by mu_
  // By job key: the UID and generation whose settings WarnOnSettings judged.
  std::unordered_map<std::string, std::pair<std::string, std::int64_t>>
      settings_judged_;  // guarded by mu_
  // Failed nodes by name: when this operator first saw each failed (NodeHealth::seen_since).
  std::unordered_map<std::string, taas::tfjob::Time> node_failed_seen_;  // guarded by mu_
  bool synced_ = false;                                                  // guarded by mu_
};

}  // namespace taas::controller
