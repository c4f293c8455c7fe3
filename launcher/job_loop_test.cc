// The job loop's decisions over a fake process table: no process is started, time is the test's.
#include "job_loop.h"

#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "taas/tfjob/validation.h"

namespace taas::launcher {
namespace {

using tfjob::ExitAction;
using tfjob::ReplicaPhase;
using tfjob::ReplicaType;
using tfjob::RestartPolicy;
using namespace std::chrono_literals;

// Processes that run until the test says they exited.
class FakeProcesses final : public ProcessTable {
 public:
  struct Process {
    ProcessSpec spec;
    std::optional<int> exit_code;
    bool terminated = false;
  };

  absl::StatusOr<int> Start(ProcessSpec spec) override {
    if (refuse_starts) return absl::UnavailableError("fork: no more processes");
    const int id = next_id_++;
    running[id].spec = std::move(spec);
    ++started;
    return id;
  }
  std::optional<int> Reap(int id) override {
    auto it = running.find(id);
    if (it == running.end() || !it->second.exit_code) return std::nullopt;
    const int code = *it->second.exit_code;
    running.erase(it);
    return code;
  }
  void Terminate(int id) override {
    auto it = running.find(id);
    if (it == running.end()) return;
    it->second.terminated = true;
    if (!ignores_sigterm) it->second.exit_code = 143;
  }
  std::optional<int> Kill(int id) override {
    if (running.erase(id) == 0) return std::nullopt;
    ++killed;
    killed_ids.push_back(id);
    return 137;
  }

  void Exit(int id, int code) {
    REQUIRE(running.contains(id));
    running.at(id).exit_code = code;
  }

  std::map<int, Process> running;
  int started = 0;
  int killed = 0;
  std::vector<int> killed_ids;  // in the order they were killed
  bool refuse_starts = false;
  bool ignores_sigterm = false;

 private:
  int next_id_ = 100;
};

class RecordingReporter final : public LoopReporter {
 public:
  struct Recorded {
    bool warning;
    std::string reason, message, object;
  };
  void Say(const std::string& line) override { said.push_back(line); }
  void Event(bool warning, std::string reason, std::string message,
             const Replica* replica) override {
    events.push_back(
        {warning, std::move(reason), std::move(message), replica ? replica->name : ""});
  }
  void ReplicaNote(const Replica& replica, std::string_view line) override {
    notes.push_back(replica.name + ": " + std::string(line));
  }
  void ReplicaOutput(const std::string&, std::string_view) override {}

  bool Said(const std::string& line) const {
    return std::find(said.begin(), said.end(), line) != said.end();
  }
  int Count(const std::string& reason) const {
    return static_cast<int>(std::count_if(events.begin(), events.end(),
                                          [&](const Recorded& e) { return e.reason == reason; }));
  }

  std::vector<std::string> said, notes;
  std::vector<Recorded> events;
};

// A job `linear` with the given replica types, counts and restart policies, its replicas
// Pending and due at the fixture's start, a loop over fake processes and clocks.
struct Fixture {
  explicit Fixture(const std::vector<std::tuple<std::string, int, std::string>>& types) {
    nlohmann::json specs = nlohmann::json::object();
    for (const auto& [type, count, policy] : types) {
      specs[type] = {
          {"replicas", count},
          {"restartPolicy", policy},
          {"template",
           {{"spec",
             {{"containers",
               {{{"name", "tensorflow"}, {"image", "x"}, {"command", {"/bin/true"}}}}}}}}}};
    }
    auto loaded = tfjob::LoadTFJob({{"apiVersion", "kubeflow.org/v1"},
                                    {"kind", "TFJob"},
                                    {"metadata", {{"name", "linear"}, {"namespace", "default"}}},
                                    {"spec", {{"tfReplicaSpecs", specs}}}});
    REQUIRE(loaded.ok());
    job = *loaded;
    for (ReplicaType type : tfjob::kStatusOrder) {
      auto it = job.spec.replica_specs.find(type);
      if (it == job.spec.replica_specs.end()) continue;
      for (int i = 0; i < it->second.replicas; ++i) {
        ReplicaLaunch launch;
        launch.type = type;
        launch.index = i;
        launch.name = tfjob::ReplicaName("linear", type, i);
        launch.policy = it->second.restart_policy;
        launch.argv = {"/bin/true"};
        launch.env = {{"TF_CONFIG", "{}"}};
        replicas.push_back(PendingReplica(std::move(launch), now));
      }
    }
  }

  Replica& Get(const std::string& name) {
    for (Replica& r : replicas) {
      if (r.name == name) return r;
    }
    FAIL("no replica " << name);
    return replicas.front();
  }
  // A turn at now + `after`.
  void TurnAt(Clock::duration after) {
    now += after;
    wall += std::chrono::duration_cast<std::chrono::seconds>(after);
    REQUIRE(loop.Turn().ok());
  }
  const tfjob::ReplicaStatus& Status(ReplicaType type) {
    return job.status.replica_statuses.at(type);
  }

  Clock::time_point now = Clock::time_point() + 1000s;
  Clock::duration tick{};  // how far the steady clock moves at each reading
  tfjob::Time wall = tfjob::Time(std::chrono::seconds(1'700'000'000));
  tfjob::TFJob job;
  std::deque<Replica> replicas;
  FakeProcesses processes;
  RecordingReporter reporter;
  JobLoop loop{job, replicas, processes, reporter,
               LoopClocks{[this] { return now += tick; }, [this] { return wall; }}};
};

TEST_CASE("an exit: the TFJob rule decides, the pod's restartPolicy restarts in place") {
  struct Case {
    RestartPolicy policy;
    int code;
    ExitDecision want;
  };
  const Case cases[] = {
      {RestartPolicy::kNever, 0, {ExitAction::kSucceed, false}},
      {RestartPolicy::kNever, 1, {ExitAction::kFail, false}},
      {RestartPolicy::kNever, 137, {ExitAction::kFail, false}},
      {RestartPolicy::kOnFailure, 0, {ExitAction::kSucceed, false}},
      {RestartPolicy::kOnFailure, 1, {ExitAction::kRestart, true}},
      {RestartPolicy::kOnFailure, 137, {ExitAction::kRestart, true}},
      {RestartPolicy::kAlways, 0, {ExitAction::kRestart, true}},
      {RestartPolicy::kAlways, 1, {ExitAction::kRestart, true}},
      // ExitCode: the pod says Never; a retryable code is the job's to restart (recreated).
      {RestartPolicy::kExitCode, 0, {ExitAction::kSucceed, false}},
      {RestartPolicy::kExitCode, 1, {ExitAction::kFail, false}},
      {RestartPolicy::kExitCode, 137, {ExitAction::kRestart, false}},
      {RestartPolicy::kExitCode, 150, {ExitAction::kRestart, false}},
  };
  for (const Case& c : cases) {
    CAPTURE(tfjob::ToString(c.policy));
    CAPTURE(c.code);
    CHECK(DecideExit(c.policy, c.code) == c.want);
  }
}

TEST_CASE("the first turn starts every replica with its command and environment") {
  Fixture f({{"PS", 1, "Never"}, {"Worker", 2, "OnFailure"}});
  f.TurnAt(0s);
  CHECK(f.processes.started == 3);
  for (const Replica& r : f.replicas) {
    CAPTURE(r.name);
    CHECK(r.pid > 0);
    CHECK(r.starts == 1);
    CHECK_FALSE(r.start_at);
    CHECK(r.observed.phase == ReplicaPhase::kRunning);
    CHECK(r.started_at == f.wall);
    const ProcessSpec& spec = f.processes.running.at(r.pid).spec;
    CHECK(spec.argv == std::vector<std::string>{"/bin/true"});
    CHECK(std::count(spec.env.begin(), spec.env.end(), "TF_CONFIG={}") == 1);
    CHECK(std::count(spec.env.begin(), spec.env.end(), "TAAS_REPLICA_INCARNATION=1") == 1);
  }
  CHECK(f.reporter.Count("Started") == 3);
  CHECK(f.reporter.Said("started linear-worker-1 pid=" +
                        std::to_string(f.Get("linear-worker-1").pid) + " port=0 metrics_port=0"));
  CHECK(tfjob::IsRunning(f.job.status));
}

TEST_CASE("OnFailure: a failed process is restarted in place after a second, the pod Running") {
  Fixture f({{"PS", 1, "Never"}, {"Worker", 2, "OnFailure"}});
  f.TurnAt(0s);
  Replica& w1 = f.Get("linear-worker-1");
  f.processes.Exit(w1.pid, 1);
  f.TurnAt(100ms);
  CHECK(f.reporter.Said("linear-worker-1 exited with code 1 (restartPolicy OnFailure: restart)"));
  // The in-place branch: the replica stays Running with its restart count up, as the kubelet's
  // container; it is not handed back to the job status as Failed to be recreated.
  CHECK(w1.pid == -1);
  CHECK(w1.observed.phase == ReplicaPhase::kRunning);
  CHECK(w1.observed.restarts == 1);
  CHECK(w1.observed.exit_code == 1);
  CHECK(w1.last_exit_code == 1);
  REQUIRE(w1.start_at);
  CHECK(*w1.start_at == f.now + kRestartDelay);
  // The job status counts the in-place restart once, and says the job is restarting.
  CHECK(f.Status(ReplicaType::kWorker).restarts == 1);
  CHECK(f.Status(ReplicaType::kWorker).container_restarts.at(1) == 1);
  CHECK(f.Status(ReplicaType::kWorker).failed == 0);
  CHECK(tfjob::HasTrueCondition(f.job.status, tfjob::ConditionType::kRestarting));
  CHECK(f.reporter.Count("Exited") == 1);

  f.TurnAt(500ms);  // not due yet
  CHECK(w1.starts == 1);
  CHECK(f.processes.started == 3);
  f.TurnAt(500ms);
  CHECK(w1.starts == 2);
  CHECK(w1.pid > 0);
  CHECK(f.processes.started == 4);
  CHECK(f.reporter.Count("Restarted") == 1);
  REQUIRE(f.reporter.notes.size() == 1);
  CHECK(f.reporter.notes[0].rfind("linear-worker-1: [taas] restart 1: pid=", 0) == 0);
  CHECK(f.Status(ReplicaType::kWorker).restarts == 1);  // counted once, not again
  CHECK_FALSE(tfjob::IsFinished(f.job.status));
}

TEST_CASE("Always: even a replica that exits 0 is restarted in place and never succeeds") {
  Fixture f({{"Worker", 1, "Always"}});
  f.TurnAt(0s);
  Replica& w0 = f.Get("linear-worker-0");
  f.processes.Exit(w0.pid, 0);
  f.TurnAt(100ms);
  CHECK(f.reporter.Said("linear-worker-0 exited with code 0 (restartPolicy Always: restart)"));
  CHECK(w0.observed.phase == ReplicaPhase::kRunning);
  CHECK(w0.observed.restarts == 1);
  CHECK_FALSE(tfjob::IsFinished(f.job.status));
  f.TurnAt(1s);
  CHECK(w0.starts == 2);
}

TEST_CASE("ExitCode: a retryable code is restarted by the job status, a permanent one fails it") {
  Fixture f({{"PS", 1, "ExitCode"}, {"Worker", 2, "ExitCode"}});
  f.TurnAt(0s);
  Replica& w1 = f.Get("linear-worker-1");
  f.processes.Exit(w1.pid, 137);
  f.TurnAt(100ms);
  CHECK(f.reporter.Said("linear-worker-1 exited with code 137 (restartPolicy ExitCode: restart)"));
  // Not in place: the replica failed, and ComputeJobStatus lists it to run again.
  CHECK(w1.observed.restarts == 0);
  CHECK(w1.observed.phase == ReplicaPhase::kPending);
  CHECK_FALSE(w1.observed.exit_code);
  REQUIRE(w1.start_at);
  CHECK(*w1.start_at == f.now + kRestartDelay);
  CHECK(f.Status(ReplicaType::kWorker).restarts == 1);
  CHECK(tfjob::HasTrueCondition(f.job.status, tfjob::ConditionType::kRestarting));
  f.TurnAt(1s);
  CHECK(w1.starts == 2);
  CHECK(w1.observed.phase == ReplicaPhase::kRunning);
  // A new incarnation, so that its peers would refuse the old process (taas/base/fence.h).
  const std::vector<std::string>& env = f.processes.running.at(w1.pid).spec.env;
  CHECK(std::count(env.begin(), env.end(), "TAAS_REPLICA_INCARNATION=2") == 1);
  CHECK(std::count(env.begin(), env.end(), "TAAS_REPLICA_INCARNATION=1") == 0);

  f.processes.Exit(w1.pid, 1);
  f.TurnAt(100ms);
  CHECK(f.reporter.Said("linear-worker-1 exited with code 1 (restartPolicy ExitCode: fail)"));
  CHECK(w1.observed.phase == ReplicaPhase::kFailed);
  CHECK_FALSE(w1.start_at);
  CHECK(tfjob::IsFailed(f.job.status));
  CHECK(f.reporter.Count("TFJobFailed") == 1);
}

TEST_CASE("the job succeeds with its chief; StopAll stops the rest, SIGKILL after the grace") {
  Fixture f({{"Chief", 1, "ExitCode"}, {"PS", 1, "ExitCode"}, {"Worker", 2, "ExitCode"}});
  f.TurnAt(0s);
  Replica& chief = f.Get("linear-chief-0");
  Replica& w0 = f.Get("linear-worker-0");
  f.processes.Exit(w0.pid, 0);  // worker 0 is not the master role here: nothing finishes
  f.TurnAt(100ms);
  CHECK_FALSE(tfjob::IsFinished(f.job.status));
  f.processes.Exit(chief.pid, 0);
  f.TurnAt(100ms);
  REQUIRE(tfjob::IsSucceeded(f.job.status));
  CHECK(chief.observed.phase == ReplicaPhase::kSucceeded);
  CHECK(f.reporter.Count("TFJobSucceeded") == 1);

  SUBCASE("stopped by SIGTERM") {
    f.loop.StopAll("the job succeeded");
    CHECK(f.processes.running.empty());
    CHECK(f.processes.killed == 0);
    for (const char* name : {"linear-ps-0", "linear-worker-1"}) {
      Replica& r = f.Get(name);
      CHECK(r.pid == -1);
      CHECK(r.stopped);
      CHECK(r.last_exit_code == 143);
      CHECK(r.observed.phase == ReplicaPhase::kFailed);
    }
    CHECK_FALSE(chief.stopped);
    CHECK(f.reporter.Count("Killing") == 2);
  }
  SUBCASE("a process that ignores SIGTERM is killed once the grace is over") {
    f.processes.ignores_sigterm = true;
    f.tick = 1s;  // the steady clock moves: the grace ends after a few readings
    f.loop.StopAll("the job succeeded");
    CHECK(f.processes.running.empty());
    CHECK(f.processes.killed == 2);
    CHECK(f.Get("linear-ps-0").last_exit_code == 137);
    CHECK(f.Get("linear-worker-1").observed.phase == ReplicaPhase::kFailed);
  }
}

TEST_CASE("a job with an evaluator waits for it after the chief's success, within the grace") {
  Fixture f({{"Chief", 1, "ExitCode"},
             {"PS", 1, "ExitCode"},
             {"Worker", 1, "ExitCode"},
             {"Evaluator", 1, "ExitCode"}});
  f.TurnAt(0s);
  Replica& chief = f.Get("linear-chief-0");
  Replica& evaluator = f.Get("linear-evaluator-0");
  f.processes.Exit(f.Get("linear-worker-0").pid, 0);
  f.processes.Exit(chief.pid, 0);
  f.TurnAt(1s);
  // The chief's exit is its finish time; the evaluator still scores the final checkpoint.
  CHECK(chief.observed.phase == ReplicaPhase::kSucceeded);
  CHECK(chief.observed.finished_at == f.wall);
  const tfjob::Time chief_done = f.wall;
  CHECK_FALSE(tfjob::IsFinished(f.job.status));
  CHECK(evaluator.pid > 0);
  CHECK(f.reporter.Said(
      "training succeeded; the job waits for its evaluator to score the final checkpoint, "
      "2m00s at most (--evaluator-grace-seconds)"));
  CHECK(f.reporter.Count("AwaitingEvaluator") == 1);
  f.TurnAt(30s);
  CHECK_FALSE(tfjob::IsFinished(f.job.status));
  CHECK(f.reporter.Count("AwaitingEvaluator") == 1);  // said once

  SUBCASE("the evaluator exits 0 once it scored the final checkpoint: the job succeeds then") {
    f.processes.Exit(evaluator.pid, 0);
    f.TurnAt(1s);
    REQUIRE(tfjob::IsSucceeded(f.job.status));
    CHECK(evaluator.observed.phase == ReplicaPhase::kSucceeded);
    CHECK(f.job.status.completion_time == chief_done + 31s);
  }
  SUBCASE("the grace passes: the job succeeds, StopAll stops the evaluator") {
    f.TurnAt(89s);
    CHECK_FALSE(tfjob::IsFinished(f.job.status));
    f.TurnAt(1s);
    REQUIRE(tfjob::IsSucceeded(f.job.status));
    CHECK(f.job.status.completion_time == chief_done + 120s);
    f.loop.StopAll("the job succeeded");
    CHECK(evaluator.stopped);
    CHECK(evaluator.last_exit_code == 143);
  }
}

TEST_CASE("the evaluator's grace is the loop's status option; 0 succeeds with the chief") {
  Fixture f({{"Chief", 1, "ExitCode"}, {"Evaluator", 1, "ExitCode"}});
  tfjob::StatusOptions options;
  options.evaluator_grace = 0s;
  JobLoop loop{f.job,
               f.replicas,
               f.processes,
               f.reporter,
               LoopClocks{[&f] { return f.now; }, [&f] { return f.wall; }},
               options};
  REQUIRE(loop.Turn().ok());
  f.processes.Exit(f.Get("linear-chief-0").pid, 0);
  f.now += 1s;
  f.wall += 1s;
  REQUIRE(loop.Turn().ok());
  CHECK(tfjob::IsSucceeded(f.job.status));
  CHECK(f.reporter.Count("AwaitingEvaluator") == 0);
}

TEST_CASE("interrupted, each replica has its pod's grace period before SIGKILL, not kStopGrace") {
  Fixture f({{"PS", 1, "ExitCode"}, {"Worker", 1, "ExitCode"}});
  f.TurnAt(0s);
  Replica& ps = f.Get("linear-ps-0");
  Replica& worker = f.Get("linear-worker-0");
  CHECK(worker.termination_grace == 30s);  // Kubernetes' default
  ps.termination_grace = 40s;
  const int ps_id = ps.pid, worker_id = worker.pid;
  f.processes.ignores_sigterm = true;  // as a replica still saving
  f.tick = 1s;
  const Clock::time_point start = f.now;
  SUBCASE("the grace of each") {
    f.loop.StopAll("interrupted", JobLoop::Grace::kReplicas);
    CHECK(f.processes.killed_ids == std::vector<int>{worker_id, ps_id});
    CHECK(f.now - start >= 40s);
    CHECK(f.now - start < 45s);
    CHECK(ps.last_exit_code == 137);
  }
  SUBCASE("a replica that exits within its grace keeps its own code") {
    f.processes.Exit(worker_id, 150);
    f.loop.StopAll("interrupted", JobLoop::Grace::kReplicas);
    CHECK(worker.last_exit_code == 150);
    CHECK(f.processes.killed_ids == std::vector<int>{ps_id});
    CHECK(f.reporter.Said("linear-worker-0 exited with code 150 after 1000 ms of its 30 s grace"));
    CHECK(f.reporter.Said("linear-ps-0 killed: its grace of 40 s is over"));
  }
  SUBCASE("hurried (a second Ctrl-C): killed at once") {
    f.loop.StopAll("interrupted", JobLoop::Grace::kReplicas, [] { return true; });
    CHECK(f.processes.killed == 2);
    CHECK(f.now - start < 5s);
  }
  SUBCASE("the job over: kStopGrace") {
    f.loop.StopAll("the job succeeded");
    CHECK(f.processes.killed == 2);
    CHECK(f.now - start < kStopGrace + 2s);
  }
}

TEST_CASE("StopAll cancels a scheduled restart") {
  Fixture f({{"Worker", 1, "OnFailure"}});
  f.TurnAt(0s);
  Replica& w0 = f.Get("linear-worker-0");
  f.processes.Exit(w0.pid, 1);
  f.TurnAt(100ms);
  REQUIRE(w0.start_at);
  f.loop.StopAll("interrupted");
  CHECK_FALSE(w0.start_at);
  f.TurnAt(2s);
  CHECK(w0.starts == 1);
}

TEST_CASE("a process that cannot be started is an error naming the replica") {
  Fixture f({{"Worker", 1, "Never"}});
  f.processes.refuse_starts = true;
  const absl::Status s = f.loop.Turn();
  CHECK(s.code() == absl::StatusCode::kUnavailable);
  CHECK(s.message() == "cannot start linear-worker-0: fork: no more processes");
  CHECK(f.Get("linear-worker-0").starts == 0);
}

}  // namespace
}  // namespace taas::launcher
