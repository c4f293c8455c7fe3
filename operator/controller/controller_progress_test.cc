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
  // `pod`: the worker's pod as served; null: Child() Running, or Succeeded when `finished`.
  explicit Cluster(bool finished, json pod = nullptr)
      : job(Job(finished)),
        pod(pod.is_null() ? Child(finished ? "Succeeded" : "Running") : std::move(pod)),
        server([this](const std::string& request) { return Respond(request); }) {}

  std::vector<std::string> Respond(const std::string& request) {
    const std::string line = request.substr(0, request.find("\r\n"));
    if (line.find("watch=1") != std::string::npos) return EndedWatch();
    std::lock_guard<std::mutex> lock(mu);
    if (line.rfind("GET /apis/kubeflow.org/v1/namespaces/ns/tfjobs", 0) == 0)
      return {Response(200, ListBody({job}))};
    if (line.rfind("GET /api/v1/namespaces/ns/pods", 0) == 0)
      return {Response(200, ListBody({pod}))};
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
  json job;  // guarded by mu
  const json pod;
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

// Runs a controller against `cluster` for `how_long`; its log goes to `log` (else nowhere).
void RunWith(Cluster& cluster, const taas::controller::ControllerOptions& options,
             std::chrono::milliseconds how_long, std::FILE* log = nullptr) {
  taas::kube::ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(cluster.server.port());
  auto client = taas::kube::Client::Create(config);
  REQUIRE(client.ok());
  std::FILE* devnull = std::fopen("/dev/null", "w");
  {
    taas::controller::Controller controller(client->get(), options,
                                            taas::Logger(log != nullptr ? log : devnull));
    REQUIRE(controller.Start(std::chrono::seconds(20)));
    std::this_thread::sleep_for(how_long);
    controller.Stop();
  }
  std::fclose(devnull);
}

void RunFor(Cluster& cluster, const Chief& chief, std::chrono::milliseconds how_long) {
  RunWith(cluster, Options(chief), how_long);
}

// The worker's pod once its training container exited 0 leaving `message` (any JSON) as its
// termination message, as the kubelet reports it.
json EndedChief(const json& message) {
  json pod = Child("Succeeded");
  pod["status"]["containerStatuses"] = {
      {{"name", "tensorflow"},
       {"state",
        {{"terminated",
          {{"exitCode", 0}, {"finishedAt", "2026-01-01T00:09:00Z"}, {"message", message}}}}}}};
  return pod;
}

// The status PUTs that made the job Succeeded.
std::vector<json> SucceededStatuses(Cluster& cluster) {
  std::vector<json> out;
  for (const auto& [at, body] : cluster.Puts()) {
    for (const json& c : body["status"]["conditions"]) {
      if (c["type"] == "Succeeded" && c["status"] == "True") out.push_back(body["status"]);
    }
  }
  return out;
}

std::string ReadAll(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[4096];
  while (const std::size_t n = std::fread(buffer, 1, sizeof buffer, file)) text.append(buffer, n);
  return text;
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

TEST_CASE("controller: the chief's termination message is the job's result, progress reading off") {
  // The chief (worker 0) exited 0 right after training: no page to read, only its report.
  Cluster cluster(false, EndedChief(R"({"globalStep":990,"finalMetrics":{"accuracy":0.9087,)"
                                    R"("loss":0.25,"eval/x":1}})"));
  Chief chief;
  taas::controller::ControllerOptions options = Options(chief);
  options.progress.interval = std::chrono::seconds(0);
  RunWith(cluster, options, std::chrono::milliseconds(1500));
  CHECK(chief.reads.load() == 0);
  const std::vector<json> succeeded = SucceededStatuses(cluster);
  REQUIRE(succeeded.size() == 1);  // in the write that finishes the job
  const json& progress = succeeded[0]["progress"];
  CHECK(progress["globalStep"] == 990);
  CHECK(progress["finalMetrics"] == json({{"accuracy", 0.9087}, {"loss", 0.25}}));  // no "eval/x"
  CHECK(progress["accuracy"] == 0.9087);
  CHECK(progress["lastUpdateTime"] == "2026-01-01T00:09:00Z");  // the chief's finishedAt
  CHECK_FALSE(progress.contains("etaSeconds"));
}

TEST_CASE("controller: the chief's report wins over the final metrics read from its page") {
  // The chief's page said accuracy 0.5 (Chief serves no final metric: its last read has none);
  // the report says 0.9.
  Cluster cluster(false, EndedChief(R"({"globalStep":1000,"finalMetrics":{"accuracy":0.9}})"));
  Chief chief;
  RunWith(cluster, Options(chief), std::chrono::milliseconds(1500));
  const std::vector<json> succeeded = SucceededStatuses(cluster);
  REQUIRE(succeeded.size() == 1);
  CHECK(succeeded[0]["progress"]["finalMetrics"] == json({{"accuracy", 0.9}}));
  CHECK(succeeded[0]["progress"]["globalStep"] == 1000);
}

TEST_CASE("controller: a termination message that is no report is logged and ignored") {
  for (const json& message : {json("Segmentation fault"), json(std::string(5000, '{')),
                              json(R"({"globalStep":-1,"finalMetrics":{}})"), json(42)}) {
    CAPTURE(message.dump().substr(0, 40));
    Cluster cluster(false, EndedChief(message));
    Chief chief;
    taas::controller::ControllerOptions options = Options(chief);
    options.progress.interval = std::chrono::seconds(0);
    std::FILE* log = std::tmpfile();
    REQUIRE(log != nullptr);
    RunWith(cluster, options, std::chrono::milliseconds(1500), log);
    const std::string logged = ReadAll(log);
    std::fclose(log);
    const std::vector<json> succeeded = SucceededStatuses(cluster);
    REQUIRE(succeeded.size() == 1);  // the job's status does not depend on it
    CHECK_FALSE(succeeded[0].contains("progress"));
    if (message.is_string()) {
      CHECK(logged.find("ignoring a termination message") != std::string::npos);
      CHECK(logged.find("job=ns/j") != std::string::npos);
      CHECK(logged.find("pod=j-worker-0") != std::string::npos);
    }
  }
}

}  // namespace
