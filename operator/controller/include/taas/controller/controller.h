// The TFJob controller: informers on TFJobs and on the pods and services the operator created,
// a rate-limited work queue of job keys, and N workers running an idempotent, level-triggered
// reconcile. Each reconcile computes the desired children from the spec and the observed children
// (never from the triggering event) with the rules of taas::tfjob, writes the status through
// `/status` only when it changed (retrying on 409 with a fresh read), and acts: creates missing
// pods and services in parallel, deletes pods to restart or clean up, deletes expired jobs.
//
// Expectations (like client-go's ControllerExpectations) make a burst of events or a stale cache
// safe: pods created but not yet seen count as Pending replicas, and pods deleted (or to delete)
// for a restart count as terminating until the informer reports them gone, so nothing is created
// or restarted twice.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "taas/base/log.h"
#include "taas/controller/builders.h"
#include "taas/controller/metrics.h"
#include "taas/kube/client.h"
#include "taas/kube/events.h"
#include "taas/kube/informer.h"
#include "taas/kube/workqueue.h"
#include "taas/tfjob/status.h"

namespace taas::controller {

struct ControllerOptions {
  std::vector<std::string> namespaces;  // empty: every namespace
  int workers = 4;
  int create_parallelism = 16;  // concurrent creates/deletes within one reconcile
  BuildOptions build;
  taas::tfjob::StatusOptions status;
  std::chrono::seconds resync_period{std::chrono::minutes(5)};
  std::string host = "taas-operator";  // Event source.host
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
  // jobs by state, children created/deleted.
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

  struct Observation {
    std::vector<kube::ObjectPtr> pods, services;
    std::vector<taas::tfjob::ObservedReplica> replicas;
    std::map<taas::tfjob::ReplicaRef, kube::ObjectPtr> pod_by_ref;
    std::set<std::string> pod_names, service_names;  // service_names includes expected ones
    std::vector<std::pair<std::string, std::string>> redelete;  // (uid, name) still to delete
  };

  void Worker();
  absl::Status Reconcile(const std::string& key);
  Observation Observe(const std::string& key, const std::string& uid, const Watched& watched);
  absl::Status HandleInvalid(const nlohmann::json& object, const absl::Status& error);
  absl::StatusOr<nlohmann::json> WriteStatus(const nlohmann::json& object,
                                             const taas::tfjob::JobStatus& status);
  kube::ObjectPtr CurrentJob(const std::string& key);
  const Watched* WatchedFor(const std::string& namespace_name) const;
  void OnJob(const kube::Delta& delta);
  void OnChild(const kube::Delta& delta, bool is_pod);
  absl::Status RunParallel(std::vector<std::function<absl::Status()>> tasks);

  kube::Client* client_;
  const ControllerOptions options_;
  Logger logger_;
  Metrics metrics_;
  kube::WorkQueue queue_;
  kube::EventRecorder events_;
  std::map<std::string, Watched> watched_;  // by namespace ("" = all); fixed after construction
  std::vector<std::thread> workers_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, Expectations> expectations_;  // guarded by mu_
  // Status objects this controller wrote that the informer may not show yet.
  std::unordered_map<std::string, kube::ObjectPtr> written_;  // guarded by mu_
  bool synced_ = false;                                       // guarded by mu_
};

}  // namespace taas::controller
