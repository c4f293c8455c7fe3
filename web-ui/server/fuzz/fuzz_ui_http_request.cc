// libFuzzer target: one raw HTTP request through the UI server's parser, checks and router, to
// the API handlers over the Kubernetes JobSource over an in-memory Kubernetes (no sockets). Any
// status from 100 to 599 is fine; an uncaught exception, a sanitizer report or another status is a
// bug.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taas/ui_kube/kube_api.h"
#include "taas/ui_kube/kube_job_source.h"
#include "taas/ui_server/api.h"
#include "taas/ui_server/server.h"

namespace {

using nlohmann::json;

// Answers every read with a small list holding one TFJob, pod, node or event.
class FakeKube : public taas::ui_kube::KubeApi {
 public:
  absl::StatusOr<json> Get(const std::string& path) override {
    const json pod = {{"metadata",
                       {{"name", "mnist-worker-0"},
                        {"namespace", "default"},
                        {"labels", {{"training.kubeflow.org/job-name", "mnist"}}}}},
                      {"spec", {{"containers", {{{"name", "tensorflow"}}}}}},
                      {"status", {{"phase", "Running"}}}};
    if (path.find("/pods/") != std::string::npos) return pod;
    if (path.find("/tfjobs/") != std::string::npos) {
      return json{{"metadata", {{"name", "mnist"}, {"namespace", "default"}}},
                  {"spec", {{"tfReplicaSpecs", {{"Worker", {{"replicas", 1}}}}}}}};
    }
    return json{{"items", {pod}}};
  }
  absl::StatusOr<json> Post(const std::string&, const json& body) override { return body; }
  absl::StatusOr<json> Delete(const std::string&) override { return json::object(); }
  absl::Status StreamText(const std::string&, const std::function<bool(std::string_view)>& on_chunk,
                          taas::Cancellation*, bool) override {
    on_chunk("log\n");
    return absl::OkStatus();
  }
};

struct Server {
  Server() {
    taas::ui_server::ApiOptions options;
    options.namespaces = {"default"};
    options.token = "s3cret";
    options.cluster_max_age = std::chrono::milliseconds(0);
    api = std::make_unique<taas::ui_server::Api>(options, &source, &metrics,
                                                 taas::Logger(stderr, taas::LogLevel::kError));
    http.max_body_bytes = 64 << 10;
    http.max_header_bytes = 8 << 10;
  }
  FakeKube kube;
  taas::ui_kube::KubeJobSource source{&kube};
  taas::ui_server::MetricsStore metrics;
  std::unique_ptr<taas::ui_server::Api> api;
  const taas::ui_server::AssetIndex assets = taas::ui_server::AssetIndex::FromFiles(
      {{"/index.html", "<!doctype html>"}, {"/assets/app.js", "1"}});
  taas::ui_server::ServerOptions http;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Server* server = new Server();  // NOLINT: one fixture for every input, never freed
  const int status = taas::ui_server::AnswerRawRequest(
      *server->api, server->assets, server->http,
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (status < 100 || status > 599) std::abort();
  return 0;
}
