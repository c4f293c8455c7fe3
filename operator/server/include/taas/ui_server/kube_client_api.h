// KubeApi over the real Kubernetes client (taas::kube::Client).
#pragma once

#include <memory>

#include "taas/kube/client.h"
#include "taas/ui_server/kube_api.h"

namespace taas::ui_server {

class KubeClientApi : public KubeApi {
 public:
  // Owns `client`.
  explicit KubeClientApi(std::unique_ptr<kube::Client> client);
  // Shares a client owned elsewhere (e.g. the operator's), which must outlive this object.
  explicit KubeClientApi(kube::Client* client);

  absl::StatusOr<nlohmann::json> Get(const std::string& path) override;
  absl::StatusOr<nlohmann::json> Post(const std::string& path, const nlohmann::json& body) override;
  // Deletes in the background: the garbage collector removes the job's pods and services.
  absl::StatusOr<nlohmann::json> Delete(const std::string& path) override;
  absl::StatusOr<std::string> GetText(const std::string& path) override;
  absl::Status StreamText(const std::string& path,
                          const std::function<bool(std::string_view)>& on_chunk) override;

 private:
  std::unique_ptr<kube::Client> owned_;
  kube::Client* client_;
};

}  // namespace taas::ui_server
