// The controller's status write on a 409, end to end through the HTTP client against the kube
// tests' loopback server: the conflicting PUT is followed by a fresh GET of the TFJob, a new
// decision, and a PUT of the new status onto the fresh object.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller_test_support.h"
#include "taas/controller/controller.h"
#include "taas/kube_testing/test_server.h"

namespace {

using nlohmann::json;
using taas::controller::testing::EndedWatch;
using taas::controller::testing::ListBody;
using taas::controller::testing::RequestBody;
using taas::controller::testing::TFJobObject;
using taas::kube::testing::Response;
using taas::kube::testing::TestServer;

json Job(const std::string& rv) { return TFJobObject("j", "uid-1", 1, rv); }

}  // namespace

TEST_CASE("controller: a 409 on the status write re-reads the job and writes onto the fresh one") {
  std::mutex mu;
  std::vector<json> status_puts;
  std::atomic<int> gets{0};
  json fresh = Job("8");
  fresh["metadata"]["labels"] = {{"owner", "someone-else"}};
  TestServer server([&](const std::string& request) -> std::vector<std::string> {
    const std::string line = request.substr(0, request.find("\r\n"));
    if (line.find("watch=1") != std::string::npos) return EndedWatch();
    if (line.rfind("GET /apis/kubeflow.org/v1/namespaces/ns/tfjobs/j ", 0) == 0) {
      gets.fetch_add(1);
      return {Response(200, fresh.dump())};
    }
    if (line.rfind("GET /apis/kubeflow.org/v1/namespaces/ns/tfjobs", 0) == 0)
      return {Response(200, ListBody({Job("5")}))};
    if (line.rfind("GET ", 0) == 0) return {Response(200, ListBody({}))};
    if (line.rfind("PUT /apis/kubeflow.org/v1/namespaces/ns/tfjobs/j/status ", 0) == 0) {
      json body = json::parse(RequestBody(request));
      std::lock_guard<std::mutex> lock(mu);
      status_puts.push_back(body);
      if (status_puts.size() == 1)
        return {Response(
            409, R"({"kind":"Status","reason":"Conflict","code":409,"message":"modified"})")};
      body["metadata"]["resourceVersion"] = "9";
      return {Response(200, body.dump())};
    }
    if (line.rfind("POST ", 0) == 0) return {Response(201, RequestBody(request))};
    return {Response(404, R"({"kind":"Status","reason":"NotFound","code":404})")};
  });
  taas::kube::ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  auto client = taas::kube::Client::Create(config);
  REQUIRE(client.ok());
  std::FILE* devnull = std::fopen("/dev/null", "w");
  taas::controller::ControllerOptions options;
  options.namespaces = {"ns"};
  options.workers = 1;
  {
    taas::controller::Controller controller(client->get(), options, taas::Logger(devnull));
    REQUIRE(controller.Start(std::chrono::seconds(20)));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (status_puts.size() >= 2) break;
      }
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(controller.metrics().status_conflicts.load() == 1);
    controller.Stop();
  }
  std::fclose(devnull);

  std::lock_guard<std::mutex> lock(mu);
  CHECK(gets.load() == 1);
  CHECK(status_puts[0]["metadata"]["resourceVersion"] == "5");
  const json& second = status_puts[1];
  CHECK(second["metadata"]["resourceVersion"] == "8");
  CHECK(second["metadata"]["labels"]["owner"] == "someone-else");
  CHECK(second["status"]["conditions"][0]["type"] == "Created");
  CHECK(second["status"] == status_puts[0]["status"]);
}
