// The UI server's JobSource over Kubernetes: TFJobs, their pods and events, and the nodes, read
// and written through a KubeApi (the API server through taas::kube::Client in production, an
// in-memory fake in tests). Rows are computed by views.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "taas/ui_kube/kube_api.h"
#include "taas/ui_server/job_source.h"

namespace taas::ui_kube {

class KubeJobSource : public ui_server::JobSource {
 public:
  // `kube` is not owned and must outlive this object. Thread-safe (as `kube` is).
  explicit KubeJobSource(KubeApi* kube);

  absl::StatusOr<std::vector<nlohmann::json>> ListJobObjects(
      const std::string& namespace_name) override;
  absl::StatusOr<std::vector<ui_server::JobRecord>> ListJobs(
      const std::string& namespace_name) override;
  absl::StatusOr<ui_server::JobDetail> GetJob(const std::string& namespace_name,
                                              const std::string& name) override;
  // POSTs the TFJob (with `dryRun=All` for a dry run): the API server's own checks and webhooks.
  absl::StatusOr<nlohmann::json> CreateJob(const std::string& namespace_name,
                                           const nlohmann::json& tfjob, bool dry_run) override;
  absl::Status DeleteJob(const std::string& namespace_name, const std::string& name) override;
  // A replica is a pod of the job (by its labels or owner reference).
  absl::Status FindReplica(const std::string& namespace_name, const std::string& job,
                           const std::string& replica) override;
  // The pod's log (of its `tensorflow` container, else its first) with the API server's own
  // bounds (tailLines, limitBytes).
  absl::StatusOr<std::string> Logs(const ui_server::LogRequest& request) override;
  absl::Status FollowLogs(const ui_server::LogRequest& request,
                          const std::function<bool(std::string_view)>& on_chunk,
                          Cancellation* cancel) override;
  absl::StatusOr<std::vector<ui_server::NodeUsage>> Nodes() override;
  // From KubeApi::ListClusterObjects (informers in production), and Kueue's queues when its API
  // is served.
  absl::StatusOr<ui_server::ClusterPage> Cluster(
      const std::vector<std::string>& namespaces) override;

 private:
  // Why the job waits (views.h WaitingOf), reading its Kueue Workload and its PodGroup when they
  // can tell.
  std::optional<ui_server::Waiting> Waiting(const std::string& namespace_name,
                                            const std::string& name,
                                            const ui_server::JobRecord& record);
  // Kueue's ClusterQueues and the LocalQueues of `namespaces`; nullopt when Kueue's API is not
  // served.
  std::optional<ui_server::QueuesView> Queues(const std::vector<std::string>& namespaces);
  // The pod of `request.replica`, checked to be one of the job's.
  absl::StatusOr<nlohmann::json> ReplicaPod(const std::string& namespace_name,
                                            const std::string& job, const std::string& replica);
  // The API path of the pod's log.
  absl::StatusOr<std::string> LogPath(const ui_server::LogRequest& request, bool follow);

  KubeApi* kube_;
};

}  // namespace taas::ui_kube
