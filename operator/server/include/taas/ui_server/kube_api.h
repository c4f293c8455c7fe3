// The UI server's view of the Kubernetes API: the few calls its handlers make, behind an
// interface so that handler tests run against an in-memory fake and, unchanged, against a real
// control plane (through `taas::kube::Client`, see kube_client_api.h).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas::ui_server {

// Paths are absolute API paths with an optional query, e.g.
// `/apis/kubeflow.org/v1/namespaces/default/tfjobs?dryRun=All`. A non-2xx answer is a Status
// whose code maps the HTTP code and which may carry the Kubernetes `Status` object as payload
// under `kKubeStatusPayload` (so callers can read `details.causes[].field`).
// Implementations are thread-safe; every call blocks.
class KubeApi {
 public:
  virtual ~KubeApi() = default;

  virtual absl::StatusOr<nlohmann::json> Get(const std::string& path) = 0;
  virtual absl::StatusOr<nlohmann::json> Post(const std::string& path,
                                              const nlohmann::json& body) = 0;
  virtual absl::StatusOr<nlohmann::json> Delete(const std::string& path) = 0;
  virtual absl::StatusOr<std::string> GetText(const std::string& path) = 0;
  // Calls `on_chunk` with each piece of a streamed text answer (pod logs with `follow=true`)
  // until the stream ends, `on_chunk` returns false (not an error), or the connection fails.
  virtual absl::Status StreamText(const std::string& path,
                                  const std::function<bool(std::string_view)>& on_chunk) = 0;
};

// The type URL under which a Kubernetes `Status` JSON object travels in an absl::Status payload.
inline constexpr std::string_view kKubeStatusPayload = "taas.kube.Status";

}  // namespace taas::ui_server
