// Job-level settings, end to end through the HTTP client against the kube tests' loopback
// server: a job whose Chief and Worker specs disagree on TF_MAX_STEPS gets one Warning event
// (tfjob::DisagreeingSettings' message) however often it is reconciled, and one more when its
// spec changes (a new generation); a job whose specs agree gets none.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csignal>
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
namespace scripted = taas::controller::testing;
namespace kt = taas::kube::testing;

// A job with a Chief and `workers` workers whose specs set TF_MAX_STEPS to `chief_steps` and
// `worker_steps`, at `generation`.
json Job(const std::string& name, const std::string& chief_steps, const std::string& worker_steps,
         int generation) {
  json job = scripted::TFJobObject(name, "uid-" + name, 2, std::to_string(4 + generation));
  job["metadata"]["generation"] = generation;
  json& specs = job["spec"]["tfReplicaSpecs"];
  specs["Chief"] = specs["Worker"];
  specs["Chief"]["replicas"] = 1;
  specs["Chief"]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "TF_MAX_STEPS"}, {"value", chief_steps}}};
  specs["Worker"]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "TF_MAX_STEPS"}, {"value", worker_steps}}};
  return job;
}

}  // namespace

TEST_CASE("controller: a Warning event once per generation when replica specs disagree") {
  // The scripted server writes with write(2): one to a connection the informer already closed
  // (it drops a watch once told its version expired) must fail, not end the test by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::atomic<int> generation{1};
  std::mutex mu;
  std::vector<std::string> event_writes;  // every POST or PATCH of an Event, head and body
  kt::TestServer server([&](const std::string& request) -> std::vector<std::string> {
    const std::string line = request.substr(0, request.find("\r\n"));
    if (line.find("watch=1") != std::string::npos) {
      // Once the spec changed, the jobs' watch says its version expired: the informer lists
      // the jobs again and sees the new generation.
      if (generation.load() == 1 || line.find("/tfjobs") == std::string::npos)
        return scripted::EndedWatch();
      const json expired = {
          {"type", "ERROR"},
          {"object", {{"kind", "Status"}, {"code", 410}, {"message", "too old"}}}};
      return {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
              kt::Chunk(expired.dump() + "\n"), "CLOSE"};
    }
    if (line.rfind("GET /apis/kubeflow.org/v1/namespaces/ns/tfjobs", 0) == 0) {
      const int g = generation.load();
      return {kt::Response(200, scripted::ListBody({Job("disagree", "20", g == 1 ? "30" : "40", g),
                                                    Job("agree", "20", "20", 1)}))};
    }
    if (line.rfind("GET ", 0) == 0) return {kt::Response(200, scripted::ListBody({}))};
    if (line.find("/events") != std::string::npos) {
      std::lock_guard<std::mutex> lock(mu);
      event_writes.push_back(request);
    }
    if (line.rfind("POST ", 0) == 0 || line.rfind("PUT ", 0) == 0 || line.rfind("PATCH ", 0) == 0) {
      return {
          kt::Response(line.rfind("POST ", 0) == 0 ? 201 : 200, scripted::RequestBody(request))};
    }
    return {kt::Response(404, R"({"kind":"Status","reason":"NotFound","code":404})")};
  });
  // The settings warnings written so far: {about the disagreeing job, about the agreeing one}.
  const auto warnings = [&] {
    std::lock_guard<std::mutex> lock(mu);
    std::pair<std::vector<std::string>, int> found;
    for (const std::string& request : event_writes) {
      if (request.find("SettingsDisagree") == std::string::npos) continue;
      if (request.find("uid-agree") != std::string::npos) ++found.second;
      if (request.find("uid-disagree") != std::string::npos) found.first.push_back(request);
    }
    return found;
  };
  taas::kube::ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  auto client = taas::kube::Client::Create(config);
  REQUIRE(client.ok());
  std::FILE* devnull = std::fopen("/dev/null", "w");
  taas::controller::ControllerOptions options;
  options.namespaces = {"ns"};
  options.workers = 1;
  options.resync_period = std::chrono::seconds(1);  // every job reconciled again every second
  {
    taas::controller::Controller controller(client->get(), options, taas::Logger(devnull));
    REQUIRE(controller.Start(std::chrono::seconds(20)));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (warnings().first.empty()) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Each job is reconciled again and again (every resync): one event.
    const std::uint64_t reconciled = controller.metrics().reconciles.load();
    while (controller.metrics().reconciles.load() < reconciled + 4) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the recorder's linger
    auto [about_disagree, about_agree] = warnings();
    REQUIRE(about_disagree.size() == 1);
    CHECK(about_disagree[0].find("\"type\":\"Warning\"") != std::string::npos);
    CHECK(about_disagree[0].find("TF_MAX_STEPS (Chief \\\"20\\\", Worker \\\"30\\\")") !=
          std::string::npos);
    CHECK(about_agree == 0);

    // The spec changes (generation 2): judged again, and warned again.
    generation = 2;
    while (warnings().first.size() < 2) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(warnings().first.back().find("Worker \\\"40\\\"") != std::string::npos);
    controller.Stop();
  }
  std::fclose(devnull);
  CHECK(warnings().first.size() == 2);
  CHECK(warnings().second == 0);
}
