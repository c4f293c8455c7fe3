// The local run's JobSource (LocalJobSource over LocalJobState), checked through the UI server's
// own API handlers with fake process states: no processes, no sockets.
#include "local_job_source.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "job_result.h"
#include "taas/tfjob/rfc3339.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_server/api.h"
#include "taas/ui_server/metrics.h"

namespace taas::launcher {
namespace {

using nlohmann::json;
using tfjob::ReplicaPhase;
using tfjob::ReplicaType;

constexpr char kToken[] = "local-token";
const tfjob::Time kT0 = tfjob::ParseRfc3339("2026-11-22T03:00:00Z").value();

tfjob::TFJob LinearJob() {
  auto docs = tfjob::YamlToJson(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: linear}
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      restartPolicy: ExitCode
      template: {spec: {containers: [{name: tensorflow, image: taas/trainer:1, command: [/opt/taas/bin/linear-regression]}]}}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: tensorflow
              image: taas/trainer:1
              command: [/opt/taas/bin/linear-regression]
              resources: {limits: {nvidia.com/gpu: 1}}
)");
  REQUIRE(docs.ok());
  auto job = tfjob::LoadTFJob(docs->front());
  REQUIRE(job.ok());
  job->metadata.creation_timestamp = kT0;
  return *job;
}

ReplicaProcess Process(ReplicaType type, int index, ReplicaPhase phase, bool running) {
  ReplicaProcess p;
  p.type = type;
  p.index = index;
  p.name = tfjob::ReplicaName("linear", type, index);
  p.phase = phase;
  p.running = running;
  p.starts = phase == ReplicaPhase::kPending ? 0 : 1;
  p.started_at = kT0 + std::chrono::seconds(1);
  p.metrics_port = 40000 + index;
  return p;
}

tfjob::ObservedReplica Observed(const ReplicaProcess& p) {
  tfjob::ObservedReplica o;
  o.type = p.type;
  o.index = p.index;
  o.phase = p.phase;
  o.exit_code = p.phase == ReplicaPhase::kRunning ? std::nullopt : p.exit_code;
  o.restarts = std::max(0, p.starts - 1);
  return o;
}

// Publishes the replicas with the job status the launcher would compute for them.
void Publish(LocalJobState& state, tfjob::TFJob& job, const std::vector<ReplicaProcess>& replicas,
             tfjob::Time now) {
  std::vector<tfjob::ObservedReplica> observed;
  for (const auto& r : replicas) observed.push_back(Observed(r));
  job.status = tfjob::ComputeJobStatus(job, observed, now).status;
  state.Publish(job, replicas);
}

struct Fixture {
  // The replicas' files (ReplicaFilesDir), where the chief leaves its report.
  const std::filesystem::path files = std::filesystem::temp_directory_path() /
                                      ("taas-local-source-test-" + std::to_string(::getpid()));
  LocalJobState state;
  LocalMachine machine{"localhost", 2, 8.0 * (1 << 30), 0};
  LocalJobSource source{&state, machine, files.string()};
  ui_server::MetricsStore metrics;
  ui_server::Api api{
      {{"default"}, kToken, false, true}, &source, &metrics, Logger(stderr, LogLevel::kError), [] {
        return (kT0 + std::chrono::seconds(60)).time_since_epoch().count();
      }};
  tfjob::TFJob job = LinearJob();

  Fixture() { std::filesystem::create_directories(files); }
  ~Fixture() { std::filesystem::remove_all(files); }

  void WriteReport(const std::string& replica, const std::string& text) const {
    std::ofstream(TerminationMessagePath(files.string(), replica), std::ios::binary) << text;
  }

  ui_server::HttpResponse Call(const std::string& method, const std::string& target,
                               const std::string& token = kToken, const std::string& body = "") {
    return api.Handle({method, "/api/v1/" + target, token.empty() ? "" : "Bearer " + token, body});
  }
  json CallJson(const std::string& method, const std::string& target, int expect = 200) {
    const auto response = Call(method, target);
    CHECK_MESSAGE(response.status == expect, response.body);
    return json::parse(response.body);
  }
};

TEST_CASE_FIXTURE(Fixture, "a running job: its TFJob row, pods, events and the local node") {
  auto ps = Process(ReplicaType::kPS, 0, ReplicaPhase::kRunning, true);
  auto w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true);
  // Worker 1 exited with 137 and waits for its in-place restart (OnFailure).
  auto w1 = Process(ReplicaType::kWorker, 1, ReplicaPhase::kRunning, false);
  w1.restart_pending = true;
  w1.exit_code = 137;
  w1.finished_at = kT0 + std::chrono::seconds(20);
  Publish(state, job, {ps, w0, w1}, kT0 + std::chrono::seconds(2));
  state.AddEvent({kT0 + std::chrono::seconds(1), false, "Started", "started pid=10", "Pod",
                  "linear-worker-0"});
  state.AddEvent({kT0 + std::chrono::seconds(20), true, "Exited", "exited with code 137", "Pod",
                  "linear-worker-1"});
  state.AddEvent(
      {kT0 + std::chrono::seconds(2), false, "TFJobRunning", "running", "TFJob", "linear"});

  const json list = CallJson("GET", "tfjobs");
  REQUIRE(list["items"].size() == 1);
  const json& row = list["items"][0];
  CHECK(row["name"] == "linear");
  CHECK(row["namespace"] == "default");
  CHECK(row["state"] == "Running");
  CHECK(row["replicasText"] == "PS 1/1 \u00b7 Worker 2/2");
  CHECK(row["gpus"] == 2);
  CHECK(row["ageSeconds"] == 60);
  // The restart the job-level "Running" would hide is named.
  CHECK(row["severity"] == "warning");
  CHECK(row["reason"].get<std::string>().find("worker-1: CrashLoopBackOff (last: Error)") !=
        std::string::npos);

  const json detail = CallJson("GET", "namespaces/default/tfjobs/linear");
  const json& pods = detail["job"]["pods"];
  REQUIRE(pods.size() == 3);
  CHECK(pods[0]["name"] == "linear-ps-0");
  CHECK(pods[1]["name"] == "linear-worker-0");
  CHECK(pods[2]["name"] == "linear-worker-1");
  for (const json& p : pods) CHECK(p["node"] == "localhost");
  CHECK(pods[0]["phase"] == "Running");
  CHECK(pods[0]["ready"] == true);
  CHECK(pods[0]["startTime"] == "2026-11-22T03:00:01Z");
  CHECK(pods[1]["gpus"] == 1);
  CHECK(pods[2]["ready"] == false);
  CHECK(pods[2]["exitCode"] == 137);
  CHECK(pods[2]["reason"] == "CrashLoopBackOff (last: Error)");
  // The conditions are the tfjob rules' own.
  bool running = false;
  for (const json& c : detail["conditions"]) {
    running |= c["type"] == "Running" && c["status"] == "True" && c["reason"] == "TFJobRunning";
  }
  CHECK(running);
  // Events of the job and its pods, oldest first.
  const json& events = detail["events"];
  REQUIRE(events.size() == 3);
  CHECK(events[0]["reason"] == "Started");
  CHECK(events[0]["object"] == "Pod/linear-worker-0");
  CHECK(events[1]["object"] == "TFJob/linear");
  CHECK(events[2]["type"] == "Warning");
  CHECK(events[2]["time"] == "2026-11-22T03:00:20Z");

  // The cluster page: this machine, no GPUs, and nothing pending.
  const json cluster = CallJson("GET", "cluster");
  REQUIRE(cluster["nodes"].size() == 1);
  CHECK(cluster["nodes"][0]["name"] == "localhost");
  CHECK(cluster["nodes"][0]["ready"] == true);
  CHECK(cluster["nodes"][0]["capacity"]["cpu"] == 2);
  CHECK(cluster["nodes"][0]["capacity"]["memory"] == 8.0 * (1 << 30));
  CHECK(cluster["totals"]["allocatable"]["gpu"] == 0);
  CHECK(cluster["nodes"][0]["pods"] == 3);
  CHECK(cluster["pending"].empty());

  // Other namespaces and names are not there.
  CHECK(Call("GET", "namespaces/default/tfjobs/other").status == 404);
  CHECK(source.ListJobObjects("team-a")->empty());
  CHECK(source.ListJobs("team-a")->empty());
  CHECK(source.FindReplica("default", "linear", "linear-ps-0").ok());
  CHECK(source.FindReplica("default", "linear", "linear-ps-9").code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE_FIXTURE(Fixture, "the token, and writes answer a clear error") {
  Publish(state, job, {Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true)}, kT0);
  CHECK(Call("GET", "tfjobs", "").status == 401);
  CHECK(Call("GET", "tfjobs", "wrong").status == 401);
  CHECK(Call("GET", "namespaces/kube-system/tfjobs").status == 403);
  CHECK(CallJson("GET", "config")["localRun"] == true);

  const json form = {{"name", "another"}, {"image", "taas/trainer:1"}, {"psReplicas", 0}};
  const auto created = Call("POST", "namespaces/default/tfjobs", kToken, form.dump());
  CHECK(created.status == 405);
  CHECK(json::parse(created.body)["error"].get<std::string>().find(
            "creating a TFJob is not supported in a local run") == 0);
  // A dry run (the form's preview) carries the same message as its error.
  const auto preview = Call("POST", "namespaces/default/tfjobs?dryRun=true", kToken, form.dump());
  CHECK(preview.status == 200);
  CHECK(json::parse(preview.body)["errors"][0]["message"].get<std::string>().find(
            "not supported in a local run") != std::string::npos);
  const auto deleted = Call("DELETE", "namespaces/default/tfjobs/linear");
  CHECK(deleted.status == 405);
  CHECK(json::parse(deleted.body)["error"].get<std::string>().find(
            "deleting the TFJob is not supported in a local run") == 0);
  const auto cloned = Call("POST", "namespaces/default/tfjobs/linear/clone", kToken, "{}");
  CHECK(cloned.status == 405);
  CHECK(json::parse(cloned.body)["error"].get<std::string>().find("creating a TFJob") == 0);
}

TEST_CASE_FIXTURE(Fixture, "logs: the tail of a replica's output, and only of the job's replicas") {
  Publish(state, job,
          {Process(ReplicaType::kPS, 0, ReplicaPhase::kRunning, true),
           Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true)},
          kT0);
  for (int i = 1; i <= 5; ++i) state.AppendLog("linear-worker-0", "step=" + std::to_string(i));
  const auto tail =
      Call("GET", "namespaces/default/tfjobs/linear/pods/linear-worker-0/logs?tailLines=2");
  CHECK(tail.status == 200);
  CHECK(tail.content_type.rfind("text/plain", 0) == 0);
  CHECK(tail.body == "step=4\nstep=5\n");
  CHECK(Call("GET", "namespaces/default/tfjobs/linear/pods/linear-worker-0/logs").body ==
        "step=1\nstep=2\nstep=3\nstep=4\nstep=5\n");
  // A replica with no output yet has an empty log; an unknown one is 404.
  CHECK(Call("GET", "namespaces/default/tfjobs/linear/pods/linear-ps-0/logs").body.empty());
  CHECK(Call("GET", "namespaces/default/tfjobs/linear/pods/linear-ps-3/logs").status == 404);
  CHECK(Call("GET", "namespaces/default/tfjobs/other/pods/linear-ps-0/logs").status == 404);
}

TEST_CASE_FIXTURE(Fixture,
                  "a 10 MiB line: the log API returns its last bytes behind the cut "
                  "marker, then the lines after it, answered or followed") {
  auto w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true);
  state.Publish(job, {w0});
  state.AppendLog("linear-worker-0", "before");
  const std::string line = std::string(10 << 20, 'x') + " the end";
  state.AppendLog("linear-worker-0", line);
  state.AppendLog("linear-worker-0", "after");
  // What the state keeps (4 MiB by default), or less when the request asks less.
  const auto check_cut = [&](const std::string& text, std::size_t window) {
    CAPTURE(window);
    REQUIRE(text.rfind("[taas: ", 0) == 0);
    CHECK(text.size() <= window);
    CHECK(text.size() > window - 64);
    CHECK(text.compare(text.size() - 14, 14, "the end\nafter\n") == 0);
    const std::size_t marker_end =
        text.find(" bytes cut] xxx") + std::string(" bytes cut] ").size();
    const std::size_t shown = text.size() - marker_end - std::string("\nafter\n").size();
    CHECK(std::stoul(text.substr(7)) + shown == line.size());
  };
  const std::string logs = "namespaces/default/tfjobs/linear/pods/linear-worker-0/logs";
  for (const std::string query : {"?tailLines=5", "", "?tailLines=2"}) {
    CAPTURE(query);
    const auto r = Call("GET", logs + query);
    REQUIRE(r.status == 200);
    check_cut(r.body, 4 << 20);
  }
  check_cut(Call("GET", logs + "?limitBytes=1000").body, 1000);
  CHECK(Call("GET", logs + "?tailLines=1").body == "after\n");

  // Followed: the same tail, then the process ends and so does the stream.
  w0.running = false;
  w0.phase = ReplicaPhase::kSucceeded;
  state.Publish(job, {w0});
  std::string followed;
  ui_server::LogRequest log;
  log.namespace_name = "default";
  log.job = "linear";
  log.replica = "linear-worker-0";
  log.tail_lines = 5;
  log.window_bytes = 1 << 20;
  CHECK(source
            .FollowLogs(
                log,
                [&](std::string_view chunk) {
                  followed += chunk;
                  return true;
                },
                nullptr)
            .ok());
  check_cut(followed, 1 << 20);
}

TEST_CASE("the log ring keeps the newest output within its byte budget") {
  LocalJobState state(/*max_log_bytes=*/20);
  tfjob::TFJob job = LinearJob();
  state.Publish(job, {Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true)});
  for (int i = 0; i < 10; ++i) state.AppendLog("linear-worker-0", "line-" + std::to_string(i));
  CHECK(*state.LogTail("linear-worker-0", 0) == "line-8\nline-9\n");
  CHECK(*state.LogTail("linear-worker-0", 1) == "line-9\n");
  CHECK(state.LogTail("nobody", 1).status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE_FIXTURE(Fixture, "following a log: the tail, new lines, and the end with the process") {
  auto w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true);
  state.Publish(job, {w0});
  state.AppendLog("linear-worker-0", "old");
  state.AppendLog("linear-worker-0", "tail");
  std::mutex mu;
  std::string received;
  std::atomic<bool> done{false};
  absl::Status result;
  std::thread follower([&] {
    ui_server::LogRequest log;
    log.namespace_name = "default";
    log.job = "linear";
    log.replica = "linear-worker-0";
    log.tail_lines = 1;
    result = source.FollowLogs(
        log,
        [&](std::string_view chunk) {
          std::lock_guard<std::mutex> lock(mu);
          received += chunk;
          return true;
        },
        nullptr);
    done = true;
  });
  auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (received == text) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  CHECK(wait_for("tail\n"));
  state.AppendLog("linear-worker-0", "new");
  CHECK(wait_for("tail\nnew\n"));
  CHECK_FALSE(done.load());
  // The process exited for good: the stream ends.
  w0.running = false;
  w0.phase = ReplicaPhase::kSucceeded;
  w0.exit_code = 0;
  state.Publish(job, {w0});
  follower.join();
  CHECK(result.ok());
  CHECK(received == "tail\nnew\n");

  // Close() ends a follower of a live replica, and a follower that stops writing ends too.
  w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true);
  state.Publish(job, {w0});
  int calls = 0;
  CHECK(state.FollowLog("linear-worker-0", 1, [&](std::string_view) { return ++calls < 1; }).ok());
  CHECK(calls == 1);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    state.Close();
  });
  CHECK(state.FollowLog("linear-worker-0", 1, [](std::string_view) { return true; }).ok());
  closer.join();
}

TEST_CASE_FIXTURE(Fixture, "a finished job: stopped replicas, exit codes and the success") {
  auto ps = Process(ReplicaType::kPS, 0, ReplicaPhase::kFailed, false);
  ps.exit_code = 143;
  ps.stopped = true;
  auto w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kSucceeded, false);
  w0.exit_code = 0;
  w0.finished_at = kT0 + std::chrono::seconds(30);
  auto w1 = Process(ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded, false);
  w1.exit_code = 0;
  w1.starts = 3;
  // The status is computed before the launcher stops the parameter server.
  std::vector<tfjob::ObservedReplica> observed = {Observed(w0), Observed(w1)};
  observed.push_back(Observed(Process(ReplicaType::kPS, 0, ReplicaPhase::kRunning, true)));
  job.status = tfjob::ComputeJobStatus(job, observed, kT0 + std::chrono::seconds(30)).status;
  state.Publish(job, {ps, w0, w1});

  const json detail = CallJson("GET", "namespaces/default/tfjobs/linear");
  CHECK(detail["job"]["state"] == "Succeeded");
  const json& pods = detail["job"]["pods"];
  CHECK(pods[0]["phase"] == "Failed");
  CHECK(pods[0]["reason"] == "Stopped");
  CHECK(pods[0]["exitCode"] == 143);
  CHECK(pods[1]["phase"] == "Succeeded");
  CHECK(pods[1]["reason"] == "Completed");
  CHECK(pods[1]["exitCode"] == 0);
  CHECK(pods[2]["restarts"] == 2);
  // Finished replicas occupy the machine no more, and none waits for it.
  const auto cluster = source.Cluster({"default"});
  REQUIRE(cluster.ok());
  CHECK(cluster->nodes.at(0).pods == 0);
  CHECK(cluster->pending.empty());
}

TEST_CASE_FIXTURE(Fixture,
                  "a finished job's final metrics: the chief's report, read once it ended") {
  auto w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true);  // the chief
  auto w1 = Process(ReplicaType::kWorker, 1, ReplicaPhase::kRunning, true);
  auto ps = Process(ReplicaType::kPS, 0, ReplicaPhase::kRunning, true);
  WriteReport("linear-worker-0",
              R"({"globalStep":200,"finalMetrics":{"accuracy":0.875,"loss":0.03}})");
  // The scraper's last point: the step before the end, where training ends, the latest figures.
  metrics.Add("default/linear", {(kT0 + std::chrono::seconds(50)).time_since_epoch().count() * 1000,
                                 190, 0.05, 400, 0.01, 0.8, 200, std::nullopt});
  Publish(state, job, {ps, w0, w1}, kT0 + std::chrono::seconds(50));
  // A running chief may still be writing its report: not read yet, the scraped figures only.
  json row = CallJson("GET", "tfjobs")["items"][0];
  CHECK(row["progress"]["step"] == 190);
  CHECK(row["progress"]["percent"] == 95);
  CHECK(row["progress"]["finalMetrics"].empty());

  w0.phase = w1.phase = ReplicaPhase::kSucceeded;
  w0.running = w1.running = false;
  w0.exit_code = w1.exit_code = 0;
  Publish(state, job, {ps, w0, w1}, kT0 + std::chrono::seconds(55));
  for (const json& answer : {CallJson("GET", "tfjobs")["items"][0],
                             CallJson("GET", "namespaces/default/tfjobs/linear")["job"]}) {
    const json& progress = answer["progress"];
    CHECK(answer["state"] == "Succeeded");
    CHECK(progress["step"] == 200);
    CHECK(progress["maxSteps"] == 200);
    CHECK(progress["percent"] == 100);
    CHECK(progress["finalMetrics"] ==
          json::parse(R"([{"name":"accuracy","value":0.875},{"name":"loss","value":0.03}])"));
    // Training ended: the last scrape's rate and time left are not the job's any more.
    CHECK(progress["examplesPerSecond"].is_null());
    CHECK(progress["eta"] == "");
  }
  // The report is also the status the UI serves, as the operator's status.progress would be.
  const json tfjob = source.ListJobObjects("default")->at(0);
  CHECK(tfjob["status"]["progress"]["finalMetrics"]["accuracy"] == 0.875);
}

TEST_CASE_FIXTURE(Fixture, "a chief whose final evaluation failed: the status names the error") {
  auto w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kFailed, false);  // the chief
  w0.exit_code = 3;
  auto w1 = Process(ReplicaType::kWorker, 1, ReplicaPhase::kSucceeded, false);
  w1.exit_code = 0;
  Publish(state, job, {w0, w1}, kT0 + std::chrono::seconds(30));
  // A failed chief without a report (any other failure): no result.
  CHECK(CallJson("GET", "tfjobs")["items"][0]["progress"].is_null());
  WriteReport("linear-worker-0",
              R"({"globalStep":50,"finalMetrics":{},"error":"evaluate() failed: no test set"})");
  const json row = CallJson("GET", "tfjobs")["items"][0];
  CHECK(row["progress"]["finalError"] == "evaluate() failed: no test set");
  CHECK(row["progress"]["finalMetrics"].empty());
  const json tfjob = source.ListJobObjects("default")->at(0);
  CHECK(tfjob["status"]["progress"]["finalError"] == "evaluate() failed: no test set");
}

TEST_CASE_FIXTURE(Fixture, "a missing or hostile report leaves the job without final metrics") {
  auto w0 = Process(ReplicaType::kWorker, 0, ReplicaPhase::kSucceeded, false);
  w0.exit_code = 0;
  auto w1 = w0;
  w1.index = 1;
  w1.name = "linear-worker-1";
  Publish(state, job, {w0, w1}, kT0 + std::chrono::seconds(30));
  CHECK(CallJson("GET", "tfjobs")["items"][0]["progress"].is_null());
  // Not the chief's: worker 1's report is no result of the job.
  WriteReport("linear-worker-1", R"({"globalStep":5,"finalMetrics":{"accuracy":1}})");
  CHECK(CallJson("GET", "tfjobs")["items"][0]["progress"].is_null());
  for (const std::string& text :
       std::vector<std::string>{"{", R"({"globalStep":-1})", std::string(5000, ' '),
                                R"({"globalStep":1,"finalMetrics":{"accuracy":"high"}})"}) {
    WriteReport("linear-worker-0", text);
    CHECK_MESSAGE(CallJson("GET", "tfjobs")["items"][0]["progress"].is_null(), text);
  }
}

TEST_CASE_FIXTURE(Fixture, "the metrics scraper reaches the chief through the local address") {
  state.Publish(job, {Process(ReplicaType::kWorker, 0, ReplicaPhase::kRunning, true)});
  ui_server::ScraperOptions options;
  options.overrides["default/linear-worker-0"] = "127.0.0.1:40000";
  options.overrides["default/linear-worker-1"] = "127.0.0.1:40001";
  ui_server::MetricsScraper scraper(&source, {"default"}, &metrics, options,
                                    Logger(stderr, LogLevel::kError));
  const json tfjob = source.ListJobObjects("default")->at(0);
  const auto targets = scraper.Targets(tfjob);
  // The chief first; the other worker for its rate (the job's is every worker's).
  REQUIRE(targets.size() == 2);
  CHECK(targets[0].first == "linear-worker-0");
  CHECK(targets[0].second == "127.0.0.1:40000");
  CHECK(targets[1].second == "127.0.0.1:40001");
}

}  // namespace
}  // namespace taas::launcher
