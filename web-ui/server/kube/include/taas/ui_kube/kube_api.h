// The Kubernetes JobSource's view of the API server (kube_job_source.h): the few calls it makes,
// behind an interface so that its tests (and the API handlers' tests over it) run against an
// in-memory fake and, unchanged, against a real control plane (through `taas::kube::Client`, see
// kube_client_api.h).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"
#include "taas/kube/client.h"
#include "taas/ui_server/job_source.h"

namespace taas::ui_kube {

// What the cluster page sums up (see ClusterView in views.h): every node, every pod not yet done
// in every namespace, the TFJob pods of the UI's namespaces and their FailedScheduling events.
struct ClusterObjects {
  nlohmann::json nodes = {{"items", nlohmann::json::array()}};
  nlohmann::json active_pods = {{"items", nlohmann::json::array()}};
  std::vector<nlohmann::json> job_pods;
  nlohmann::json events = {{"items", nlohmann::json::array()}};
};

// Paths are absolute API paths with an optional query, e.g.
// `/apis/kubeflow.org/v1/namespaces/default/tfjobs?dryRun=All`. A non-2xx answer is a Status
// whose code maps the HTTP code and which may carry the Kubernetes `Status` object as payload
// under `ui_server::kKubeStatusPayload` (so callers can read `details.causes[].field`).
// Implementations are thread-safe; every call blocks.
class KubeApi {
 public:
  virtual ~KubeApi() = default;

  virtual absl::StatusOr<nlohmann::json> Get(const std::string& path) = 0;
  virtual absl::StatusOr<nlohmann::json> Post(const std::string& path,
                                              const nlohmann::json& body) = 0;
  virtual absl::StatusOr<nlohmann::json> Delete(const std::string& path) = 0;
  // Calls `on_chunk` with each piece of a streamed text answer (pod logs, followed or not)
  // until the stream ends, `on_chunk` returns false or `cancel` (may be null) is cancelled (not
  // errors), or the connection fails. A followed stream (`follow`) may be quiet for minutes; an
  // answer fails after the client's call timeout without a byte.
  virtual absl::Status StreamText(const std::string& path,
                                  const std::function<bool(std::string_view)>& on_chunk,
                                  Cancellation* cancel, bool follow) = 0;
  // The objects of the cluster page for `namespaces`. By default one list of each per call;
  // KubeClientApi serves nodes, pods and events from informers (one watch each, shared).
  virtual absl::StatusOr<ClusterObjects> ListClusterObjects(
      const std::vector<std::string>& namespaces);
};

}  // namespace taas::ui_kube
