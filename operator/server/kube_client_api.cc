#include "taas/ui_server/kube_client_api.h"

namespace taas::ui_server {

static_assert(kKubeStatusPayload == std::string_view(kube::kStatusPayloadUrl),
              "the UI reads the Kubernetes Status payload the client attaches");

KubeClientApi::KubeClientApi(std::unique_ptr<kube::Client> client)
    : owned_(std::move(client)), client_(owned_.get()) {}

KubeClientApi::KubeClientApi(kube::Client* client) : client_(client) {}

absl::StatusOr<nlohmann::json> KubeClientApi::Get(const std::string& path) {
  return client_->Get(path);
}

absl::StatusOr<nlohmann::json> KubeClientApi::Post(const std::string& path,
                                                   const nlohmann::json& body) {
  return client_->Post(path, body);
}

absl::StatusOr<nlohmann::json> KubeClientApi::Delete(const std::string& path) {
  return client_->Delete(path, {{"propagationPolicy", "Background"}});
}

absl::StatusOr<std::string> KubeClientApi::GetText(const std::string& path) {
  return client_->GetText(path);
}

absl::Status KubeClientApi::StreamText(const std::string& path,
                                       const std::function<bool(std::string_view)>& on_chunk) {
  return client_->StreamText(path, on_chunk);
}

}  // namespace taas::ui_server
