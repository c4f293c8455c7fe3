#include "taas/ui_kube/kube_client_api.h"

#include <algorithm>
#include <chrono>

#include "taas/base/json_fields.h"
#include "taas/ui_kube/views.h"

namespace taas::ui_kube {
namespace {

// How long the first cluster page waits for the informers' first lists.
constexpr std::chrono::seconds kSyncTimeout{20};

nlohmann::json ListOf(const kube::Store& store, bool (*keep)(const nlohmann::json&)) {
  nlohmann::json items = nlohmann::json::array();
  for (const kube::ObjectPtr& object : store.List()) {
    if (object && (keep == nullptr || keep(*object))) items.push_back(*object);
  }
  return {{"items", std::move(items)}};
}

bool PodActive(const nlohmann::json& pod) {
  const nlohmann::json* status = json_fields::Object(pod, "status");
  const std::string phase = status ? json_fields::StringOr(*status, "phase", "") : "";
  return phase != "Succeeded" && phase != "Failed";
}

}  // namespace

static_assert(ui_server::kKubeStatusPayload == std::string_view(kube::kStatusPayloadUrl),
              "the UI reads the Kubernetes Status payload the client attaches");

KubeClientApi::KubeClientApi(std::unique_ptr<kube::Client> client, Logger logger)
    : owned_(std::move(client)), client_(owned_.get()), logger_(std::move(logger)) {}

KubeClientApi::KubeClientApi(kube::Client* client, Logger logger)
    : client_(client), logger_(std::move(logger)) {}

KubeClientApi::~KubeClientApi() {
  // Informers call the client: stop them before an owned client goes.
  std::lock_guard<std::mutex> lock(informers_mu_);
  for (auto& informer : events_) informer->Stop();
  if (pods_) pods_->Stop();
  if (nodes_) nodes_->Stop();
}

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

absl::Status KubeClientApi::StreamText(const std::string& path,
                                       const std::function<bool(std::string_view)>& on_chunk,
                                       Cancellation* cancel, bool follow) {
  kube::StreamOptions options;
  options.cancel = cancel;
  if (!follow) options.idle_timeout = client_->config().timeout;
  return client_->StreamText(path, on_chunk, options);
}

absl::Status KubeClientApi::StartClusterInformers(const std::vector<std::string>& namespaces) {
  if (nodes_ && informed_namespaces_ == namespaces) return absl::OkStatus();
  if (nodes_) return absl::InvalidArgumentError("the cluster page serves one set of namespaces");
  // One small list of each first: a missing permission is answered at once (and asked again on
  // the next visit) rather than by informers that would never sync.
  for (const char* probe : {"/api/v1/nodes?limit=1", "/api/v1/pods?limit=1"}) {
    TAAS_RETURN_IF_ERROR(client_->Get(probe).status());
  }
  auto make = [&](std::string path) {
    kube::Informer::Options options;
    options.path = std::move(path);
    options.transform = kube::StripManagedFields;
    auto informer = std::make_unique<kube::Informer>(client_, options, logger_);
    informer->Start();
    return informer;
  };
  informed_namespaces_ = namespaces;
  nodes_ = make("/api/v1/nodes");
  pods_ = make("/api/v1/pods");
  for (const std::string& ns : namespaces) {
    events_.push_back(
        make("/api/v1/namespaces/" + ns + "/events?fieldSelector=reason%3DFailedScheduling"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterObjects> KubeClientApi::ListClusterObjects(
    const std::vector<std::string>& namespaces) {
  std::lock_guard<std::mutex> lock(informers_mu_);
  TAAS_RETURN_IF_ERROR(StartClusterInformers(namespaces));
  const auto deadline = std::chrono::steady_clock::now() + kSyncTimeout;
  auto synced = [&](const kube::Informer& informer) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return informer.WaitForSync(std::max(left, std::chrono::milliseconds(0)));
  };
  bool all_synced = synced(*nodes_) && synced(*pods_);
  for (const auto& informer : events_) all_synced = all_synced && synced(*informer);
  if (!all_synced) {
    return absl::UnavailableError("the cluster cache (nodes, pods, events) has not listed within " +
                                  std::to_string(kSyncTimeout.count()) +
                                  " s; check the API server and the UI's permission to "
                                  "list and watch nodes, pods and events");
  }
  ClusterObjects out;
  out.nodes = ListOf(nodes_->store(), nullptr);
  out.active_pods = ListOf(pods_->store(), PodActive);
  for (const kube::ObjectPtr& pod : pods_->store().List()) {
    if (!pod) continue;
    const nlohmann::json* metadata = json_fields::Object(*pod, "metadata");
    const std::string ns = metadata ? json_fields::StringOr(*metadata, "namespace", "") : "";
    if (std::find(namespaces.begin(), namespaces.end(), ns) != namespaces.end() &&
        !JobNameOfPod(*pod).empty()) {
      out.job_pods.push_back(*pod);
    }
  }
  for (const auto& informer : events_) {
    for (const kube::ObjectPtr& e : informer->store().List()) {
      if (e) out.events["items"].push_back(*e);
    }
  }
  return out;
}

}  // namespace taas::ui_kube
