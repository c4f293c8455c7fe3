// The UI server's seam: where its API reads and writes jobs. Two implementations: Kubernetes
// (taas::ui_kube, TFJobs, pods, events and nodes through the API server) and the local launcher
// (`taas run`, its one job from the launcher's own state). The API handlers (api.h) and the
// metrics scraper (metrics.h) only see this interface.
//
// Rows are the structs of rows.h (the API serialises them, through their one field list); the
// job itself is the TFJob object as the source stores it, which the API shows as it is and reads
// with the shared TFJob rules (taas::tfjob).
//
// Errors: a Status whose code the API maps to HTTP (NotFound 404, AlreadyExists 409,
// InvalidArgument 422, PermissionDenied 403, Unimplemented 405, Unavailable 503, ...), with an
// optional payload under kKubeStatusPayload: a JSON object in the shape of a Kubernetes `Status`
// (`message`, `code`, `details.causes[].field`), so the form can place each error at its field.
// Implementations are thread-safe; every call blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/cancellation.h"
#include "taas/base/status.h"
#include "taas/ui_server/log_window.h"
#include "taas/ui_server/rows.h"

namespace taas::ui_server {

// The type URL under which a Status carries its Kubernetes-shaped details (see above).
inline constexpr std::string_view kKubeStatusPayload = "taas.kube.Status";

// A job with its replicas: what a row of the job list is computed from.
struct JobRecord {
  nlohmann::json tfjob;  // the TFJob object as stored (metadata, spec, status); any JSON
  std::vector<ReplicaRow> replicas;
};

struct JobDetail {
  JobRecord record;
  std::vector<EventRow> events;  // about the job or its replicas, oldest first
  // Why the job waits; unset when it does not wait (or nothing says why).
  std::optional<Waiting> waiting;
};

// One replica's output. `tail_lines` >= 1; `limit_bytes` bounds the answer (a followed stream
// is bounded by time instead, unless set); `previous`: the replica's previous run.
// `window_bytes` is the log window of log_window.h: an answer is its output's end within it, and
// a line longer than it, in an answer or a followed stream, shows its end behind CutMarker.
struct LogRequest {
  std::string namespace_name;
  std::string job;
  std::string replica;
  std::int64_t tail_lines = 1000;
  std::optional<std::int64_t> limit_bytes;
  std::int64_t window_bytes = kDefaultLogWindowBytes;
  bool previous = false;
};

// CPU cores, memory bytes and GPUs.
struct Resources {
  double cpu = 0;
  double memory = 0;
  double gpu = 0;
};

// A taint that keeps new pods off a node unless they tolerate it (effect NoSchedule or
// NoExecute; PreferNoSchedule only steers the scheduler and is not kept).
struct Taint {
  std::string key;
  std::string value;  // may be empty
  std::string effect;
};

// A machine replicas run on, and what the active replicas and other pods ask of it.
struct NodeUsage {
  std::string name;
  bool ready = false;
  bool unschedulable = false;  // cordoned
  std::vector<Taint> taints;
  Resources capacity;
  Resources allocatable;
  Resources in_use;
  int pods = 0;
};

// A replica waiting for a machine, and why.
struct PendingReplica {
  std::string namespace_name;
  std::string job;
  std::string replica;
  std::int64_t gpus = 0;
  std::string reason;
  std::string message;
};

struct ClusterPage {
  std::vector<NodeUsage> nodes;
  std::vector<PendingReplica> pending;
  // Kueue's queues (each ClusterQueue's `local_queues` left empty: the view fills them); unset
  // when no quota system is installed.
  std::optional<QueuesView> queues;
};

class JobSource {
 public:
  virtual ~JobSource() = default;

  // The TFJob objects of `namespace_name`, without replicas (what the metrics scraper reads).
  virtual absl::StatusOr<std::vector<nlohmann::json>> ListJobObjects(
      const std::string& namespace_name) = 0;
  virtual absl::StatusOr<std::vector<JobRecord>> ListJobs(const std::string& namespace_name) = 0;
  virtual absl::StatusOr<JobDetail> GetJob(const std::string& namespace_name,
                                           const std::string& name) = 0;
  // Stores `tfjob` (already checked against the TFJob rules) and returns it as stored; a dry run
  // checks it where it would be stored and stores nothing.
  virtual absl::StatusOr<nlohmann::json> CreateJob(const std::string& namespace_name,
                                                   const nlohmann::json& tfjob, bool dry_run) = 0;
  // Deletes the job and, in the background, its replicas.
  virtual absl::Status DeleteJob(const std::string& namespace_name, const std::string& name) = 0;

  // OK when `replica` is one of the job's replicas; NotFound otherwise.
  virtual absl::Status FindReplica(const std::string& namespace_name, const std::string& job,
                                   const std::string& replica) = 0;
  virtual absl::StatusOr<std::string> Logs(const LogRequest& request) = 0;
  // Calls `on_chunk` with the tail and then each new piece of output until the replica ends,
  // `on_chunk` returns false or `cancel` (may be null) is cancelled (not errors), or the source
  // fails.
  virtual absl::Status FollowLogs(const LogRequest& request,
                                  const std::function<bool(std::string_view)>& on_chunk,
                                  Cancellation* cancel) = 0;

  // Every node (in_use and pods need not be filled): the bounds of what can ever be scheduled.
  virtual absl::StatusOr<std::vector<NodeUsage>> Nodes() = 0;
  // The cluster page for the jobs of `namespaces`: every node with its use, and the replicas
  // waiting for one.
  virtual absl::StatusOr<ClusterPage> Cluster(const std::vector<std::string>& namespaces) = 0;
};

}  // namespace taas::ui_server
