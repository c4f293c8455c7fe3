// A running job's progress through the whole controller, against the kube tests' loopback API
// server and a loopback metrics endpoint playing the chief: the progress reaches the TFJob's
// status through `/status`, Kubeflow's fields unchanged, at most once an interval; a finished
// job's chief is never read and its status never written for progress.
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
#include "taas/tfjob/labels.h"

namespace {

namespace tf = taas::tfjob;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using taas::controller::testing::EndedWatch;
using taas::controller::testing::ListBody;
using taas::controller::testing::RequestBody;
using taas::controller::testing::TFJobObject;
using taas::kube::testing::Response;
using taas::kube::testing::TestServer;

json Condition(const char* type) {
  return {{"type", type},
          {"status", "True"},
          {"reason", std::string("TFJob") + type},
          {"lastUpdateTime", "2026-01-01T00:00:01Z"},
          {"lastTransitionTime", "2026-01-01T00:00:01Z"}};
}

// Job j: one worker (its chief) that runs; `finished` adds Succeeded.
json Job(bool finished) {
  json conditions = {Condition("Created"), Condition("Running")};
  if (finished) {
    conditions[1]["status"] = "False";
    conditions.push_back(Condition("Succeeded"));
  }
  json job = TFJobObject("j", "uid-1", 1);
  job["status"] = {{"conditions", conditions}, {"startTime", "2026-01-01T00:00:01Z"}};
  return job;
}

// The worker's pod (Running, or Succeeded) or service, owned by the job.
json Child(const char* phase) {
  json labels = {{std::string(tf::kLabelOperatorName), std::string(tf::kOperatorName)},
                 {std::string(tf::kLabelJobName), "j"},
                 {std::string(tf::kLabelReplicaType), "worker"},
                 {std::string(tf::kLabelReplicaIndex), "0"}};
  json child = {{"metadata",
                 {{"name", "j-worker-0"},
                  {"namespace", "ns"},
                  {"uid", "child-uid"},
                  {"labels", labels},
                  {"ownerReferences",
                   {{{"apiVersion", "kubeflow.org/v1"},
                     {"kind", "TFJob"},
                     {"name", "j"},
                     {"uid", "uid-1"},
                     {"controller", true}}}}}}};
  if (phase != nullptr) child["status"] = {{"phase", phase}};
  return child;
}

// A loopback API server holding one job: the status PUTs are kept (with when they came) and
// the job is served as last written.
struct Cluster {
  explicit Cluster(bool finished)
      : job(Job(finished)), server([this, finished](const std::string& request) {
          return Respond(request, finished);
        }) {}

  std::vector<std::string> Respond(const std::string& request, bool finished) {
    const std::string line = request.substr(0, request.find("\r\n"));
    if (line.find("watch=1") != std::string::npos) return EndedWatch();
    std::lock_guard<std::mutex> lock(mu);
    if (line.rfind("GET /apis/kubeflow.org/v1/namespaces/ns/tfjobs", 0) == 0)
      return {Response(200, ListBody({job}))};
    if (line.rfind("GET /api/v1/namespaces/ns/pods", 0) == 0)
      return {Response(200, ListBody({Child(finished ? "Succeeded" : "Running")}))};
    if (line.rfind("GET /api/v1/namespaces/ns/services", 0) == 0)
      return {Response(200, ListBody({Child(nullptr)}))};
    if (line.rfind("PUT /apis/kubeflow.org/v1/namespaces/ns/tfjobs/j/status ", 0) == 0) {
      json body = json::parse(RequestBody(request));
      puts.emplace_back(Clock::now(), body);
      body["metadata"]["resourceVersion"] = std::to_string(6 + puts.size());
      job = body;
      return {Response(200, body.dump())};
    }
    if (line.rfind("GET ", 0) == 0) return {Response(200, ListBody({}))};
    if (line.rfind("POST ", 0) == 0) return {Response(201, RequestBody(request))};
    return {Response(404, R"({"kind":"Status","reason":"NotFound","code":404})")};
  }

  std::vector<std::pair<Clock::time_point, json>> Puts() {
    std::lock_guard<std::mutex> lock(mu);
    return puts;
  }

  std::mutex mu;
  json job;                                              // guarded by mu
  std::vector<std::pair<Clock::time_point, json>> puts;  // guarded by mu
  TestServer server;
};

// The chief's metrics endpoint: its step goes up by 100 a read.
struct Chief {
  Chief()
      : server([this](const std::string&) -> std::vector<std::string> {
          const int n = reads.fetch_add(1) + 1;
          return {Response(200, "taas_global_step " + std::to_string(100 * n) +
                                    "\ntaas_max_steps 1000\ntaas_loss 0.5\n")};
        }) {}
  std::atomic<int> reads{0};
  TestServer server;
};

taas::controller::ControllerOptions Options(const Chief& chief) {
  taas::controller::ControllerOptions options;
  options.namespaces = {"ns"};
  options.workers = 1;
  options.progress.interval = std::chrono::seconds(1);
  options.progress.targets = {
      {"ns/j-worker-0", "127.0.0.1:" + std::to_string(chief.server.port())}};
  return options;
}

void RunFor(Cluster& cluster, const Chief& chief, std::chrono::milliseconds how_long) {
  taas::kube::ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(cluster.server.port());
  auto client = taas::kube::Client::Create(config);
  REQUIRE(client.ok());
  std::FILE* devnull = std::fopen("/dev/null", "w");
  {
    taas::controller::Controller controller(client->get(), Options(chief), taas::Logger(devnull));
    REQUIRE(controller.Start(std::chrono::seconds(20)));
    std::this_thread::sleep_for(how_long);
    controller.Stop();
  }
  std::fclose(devnull);
}

TEST_CASE("controller: a running job's progress reaches its status, once an interval at most") {
  Cluster cluster(false);
  Chief chief;
  RunFor(cluster, chief, std::chrono::milliseconds(4500));
  REQUIRE(chief.reads.load() >= 2);

  std::vector<std::pair<Clock::time_point, json>> with_progress;
  for (const auto& [at, body] : cluster.Puts()) {
    const json& status = body["status"];
    // Kubeflow's fields are the operator's as always; the progress is one field beside them.
    CHECK(status["conditions"].size() == 2);
    CHECK(status["conditions"][1]["type"] == "Running");
    if (!status.contains("progress")) continue;
    if (!with_progress.empty() &&
        with_progress.back().second["globalStep"] == status["progress"]["globalStep"])
      continue;
    with_progress.emplace_back(at, status["progress"]);
  }
  REQUIRE(with_progress.size() >= 2);
  const json& first = with_progress.front().second;
  CHECK(first["globalStep"].get<int>() % 100 == 0);
  CHECK(first["maxSteps"] == 1000);
  CHECK(first["metrics"]["loss"] == 0.5);
  CHECK(first.contains("lastUpdateTime"));
  CHECK(with_progress.back().second.contains("eta"));  // two reads: a step rate
  for (std::size_t i = 1; i < with_progress.size(); ++i) {
    CAPTURE(i);
    CHECK(with_progress[i].first - with_progress[i - 1].first >= std::chrono::milliseconds(900));
  }
}

TEST_CASE("controller: a finished job's chief is not read and its progress never written") {
  Cluster cluster(true);
  Chief chief;
  RunFor(cluster, chief, std::chrono::milliseconds(2500));
  CHECK(chief.reads.load() == 0);
  for (const auto& [at, body] : cluster.Puts()) CHECK_FALSE(body["status"].contains("progress"));
}

}  // namespace
