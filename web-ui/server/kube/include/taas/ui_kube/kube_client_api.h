// KubeApi over the real Kubernetes client (taas::kube::Client).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "taas/base/log.h"
#include "taas/kube/client.h"
#include "taas/kube/informer.h"
#include "taas/ui_kube/kube_api.h"

namespace taas::ui_kube {

class KubeClientApi : public KubeApi {
 public:
  // Owns `client`.
  explicit KubeClientApi(std::unique_ptr<kube::Client> client, Logger logger = Logger(stderr));
  // Shares a client owned elsewhere (e.g. the operator's), which must outlive this object.
  explicit KubeClientApi(kube::Client* client, Logger logger = Logger(stderr));
  ~KubeClientApi() override;

  absl::StatusOr<nlohmann::json> Get(const std::string& path) override;
  absl::StatusOr<nlohmann::json> Post(const std::string& path, const nlohmann::json& body) override;
  // Deletes in the background: the garbage collector removes the job's pods and services.
  absl::StatusOr<nlohmann::json> Delete(const std::string& path) override;
  absl::Status StreamText(const std::string& path,
                          const std::function<bool(std::string_view)>& on_chunk,
                          Cancellation* cancel, bool follow) override;
  // From informers started on the first call (a UI whose cluster page is never opened watches
  // nothing): nodes, every pod, and FailedScheduling events of `namespaces`.
  absl::StatusOr<ClusterObjects> ListClusterObjects(
      const std::vector<std::string>& namespaces) override;

 private:
  absl::Status StartClusterInformers(const std::vector<std::string>& namespaces);

  std::unique_ptr<kube::Client> owned_;
  kube::Client* client_;
  Logger logger_;
  std::mutex informers_mu_;
  std::vector<std::string> informed_namespaces_;         // guarded by informers_mu_
  std::unique_ptr<kube::Informer> nodes_;                // guarded by informers_mu_
  std::unique_ptr<kube::Informer> pods_;                 // guarded by informers_mu_
  std::vector<std::unique_ptr<kube::Informer>> events_;  // guarded by informers_mu_
};

}  // namespace taas::ui_kube
