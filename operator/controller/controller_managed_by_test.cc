// runPolicy.managedBy, end to end through the HTTP client against the kube tests' loopback
// server: a job another controller manages (Kueue's MultiKueue) gets no pod, no service and no
// status write from this operator, even when this operator would find it invalid; a job managed
// by the training operator, explicitly or by default, is reconciled.
#include <doctest/doctest.h>

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

json Job(const std::string& name, const json& run_policy) {
  json job = TFJobObject(name, "uid-" + name, 2);
  if (!run_policy.is_null()) job["spec"]["runPolicy"] = run_policy;
  return job;
}

}  // namespace

TEST_CASE("controller: jobs managed by another controller are left alone") {
  json kueue = Job("kueue", {{"managedBy", "kueue.x-k8s.io/multikueue"}});
  // Invalid for this operator (no image): still not touched, not even marked Failed.
  json kueue_invalid = Job("kueue-invalid", {{"managedBy", "kueue.x-k8s.io/multikueue"}});
  kueue_invalid["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].erase(
      "image");
  json other = Job("other", {{"managedBy", "example.com/other"}});
  json ours = Job("ours", {{"managedBy", "kubeflow.org/training-operator"}});
  json plain = Job("plain", nullptr);

  std::mutex mu;
  // Every POST, PUT, PATCH and DELETE, head and body: whatever this operator writes about a job
  // (status, pods, services, secrets, events) carries the job's uid.
  std::vector<std::string> writes;
  TestServer server([&](const std::string& request) -> std::vector<std::string> {
    const std::string line = request.substr(0, request.find("\r\n"));
    if (line.find("watch=1") != std::string::npos) return EndedWatch();
    if (line.rfind("GET /apis/kubeflow.org/v1/namespaces/ns/tfjobs", 0) == 0)
      return {Response(200, ListBody({kueue, kueue_invalid, other, ours, plain}))};
    if (line.rfind("GET ", 0) == 0) return {Response(200, ListBody({}))};
    {
      std::lock_guard<std::mutex> lock(mu);
      writes.push_back(request);
    }
    if (line.rfind("POST ", 0) == 0 || line.rfind("PUT ", 0) == 0) {
      return {Response(line.rfind("POST ", 0) == 0 ? 201 : 200, RequestBody(request))};
    }
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
  const auto touched = [&](const std::string& job) {
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string& request : writes) {
      if (request.find("\"uid-" + job + "\"") != std::string::npos) return true;
    }
    return false;
  };
  {
    taas::controller::Controller controller(client->get(), options, taas::Logger(devnull));
    REQUIRE(controller.Start(std::chrono::seconds(20)));
    // The two jobs this operator manages get their pods; by then (one worker, jobs queued in
    // list order) the others have been reconciled too.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(touched("ours") && touched("plain"))) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(controller.metrics().reconciles.load() >= 5);
    controller.Stop();
  }
  std::fclose(devnull);

  for (const char* job : {"kueue", "kueue-invalid", "other"}) {
    CAPTURE(job);
    CHECK_FALSE(touched(job));
  }
}
