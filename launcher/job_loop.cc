#include "job_loop.h"

#include <algorithm>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "progress_view.h"
#include "taas/contract/env.h"

extern char** environ;

namespace taas::launcher {

tfjob::Time SystemNow() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

Replica PendingReplica(ReplicaLaunch launch, Clock::time_point start_at) {
  Replica r;
  static_cast<ReplicaLaunch&>(r) = std::move(launch);
  r.observed.type = r.type;
  r.observed.index = r.index;
  r.observed.phase = tfjob::ReplicaPhase::kPending;
  r.start_at = start_at;
  return r;
}

ExitDecision DecideExit(tfjob::RestartPolicy policy, int exit_code) {
  ExitDecision decision{tfjob::DecideOnExit(policy, exit_code)};
  decision.in_place = tfjob::RestartsInPlace(policy, exit_code);
  return decision;
}

JobLoop::JobLoop(tfjob::TFJob& job, std::deque<Replica>& replicas, ProcessTable& processes,
                 LoopReporter& reporter, LoopClocks clocks, tfjob::StatusOptions status_options)
    : job_(job),
      replicas_(replicas),
      processes_(processes),
      reporter_(reporter),
      clocks_(std::move(clocks)),
      status_options_(status_options) {}

absl::Status JobLoop::Start(Replica& r) {
  ProcessSpec spec;
  spec.argv = r.argv;
  // Each process of a replica is a new incarnation of it (taas/base/fence.h): its peers refuse
  // an older one, should one outlive its exit (this launcher waits for it before a restart).
  std::map<std::string, std::string> env = r.env;
  env[std::string(contract::kReplicaIncarnationEnv)] = std::to_string(r.starts + 1);
  spec.env = ProcessEnvironment(env, environ);
  spec.on_line = [this, name = r.name](std::string_view line) {
    reporter_.ReplicaOutput(name, line);
  };
  TAAS_ASSIGN_OR_RETURN(r.pid, processes_.Start(std::move(spec)));
  ++r.starts;
  r.observed.phase = tfjob::ReplicaPhase::kRunning;
  r.observed.exit_code.reset();
  r.observed.finished_at.reset();
  r.start_at.reset();
  r.started_at = clocks_.wall();
  r.stopped = false;
  const std::string what = "pid=" + std::to_string(r.pid) + " port=" + std::to_string(r.port) +
                           " metrics_port=" + std::to_string(r.metrics_port);
  if (r.starts > 1) {
    reporter_.ReplicaNote(r, "[taas] restart " + std::to_string(r.starts - 1) + ": " + what);
    reporter_.Event(false, "Restarted",
                    "started again (restart " + std::to_string(r.starts - 1) + "), " + what, &r);
  } else {
    reporter_.Event(false, "Started", "started " + what, &r);
  }
  reporter_.Say("started " + r.name + " " + what +
                (r.starts > 1 ? " (restart " + std::to_string(r.starts - 1) + ")" : ""));
  return absl::OkStatus();
}

void JobLoop::TakeExits(Clock::time_point now) {
  for (Replica& r : replicas_) {
    if (r.pid <= 0) continue;
    const std::optional<int> code = processes_.Reap(r.pid);
    if (!code) continue;
    r.pid = -1;
    const ExitDecision decision = DecideExit(r.policy, *code);
    const std::string said = "exited with code " + std::to_string(*code) + " (restartPolicy " +
                             std::string(tfjob::ToString(r.policy)) + ": " +
                             std::string(tfjob::ToString(decision.action)) + ")";
    reporter_.Say(r.name + " " + said);
    r.last_exit_code = *code;
    r.finished_at = clocks_.wall();
    reporter_.Event(*code != 0, "Exited", said, &r);
    r.observed.exit_code = *code;
    if (decision.in_place) {
      // The pod stays Running; its container's restart count rises.
      ++r.observed.restarts;
      r.start_at = now + kRestartDelay;
    } else {
      r.observed.phase =
          *code == 0 ? tfjob::ReplicaPhase::kSucceeded : tfjob::ReplicaPhase::kFailed;
      r.observed.finished_at = r.finished_at;
    }
  }
}

absl::Status JobLoop::Turn() {
  const Clock::time_point now = clocks_.steady();
  for (Replica& r : replicas_) {
    if (!r.start_at || now < *r.start_at) continue;
    if (absl::Status s = Start(r); !s.ok()) {
      return absl::Status(s.code(), "cannot start " + r.name + ": " + std::string(s.message()));
    }
  }
  TakeExits(now);
  std::vector<tfjob::ObservedReplica> observed;
  for (const Replica& r : replicas_) observed.push_back(r.observed);
  tfjob::StatusUpdate update =
      tfjob::ComputeJobStatus(job_, observed, clocks_.wall(), status_options_);
  job_.status = std::move(update.status);
  for (const tfjob::JobEvent& e : update.events) {
    reporter_.Say(std::string(e.warning ? "warning: " : "") + e.reason + ": " + e.message);
    reporter_.Event(e.warning, e.reason, e.message, nullptr);
  }
  if (update.awaiting_evaluator_until) SayAwaitingEvaluator(*update.awaiting_evaluator_until);
  for (const tfjob::ReplicaRef& ref : update.restart) {
    for (Replica& r : replicas_) {
      if (r.type != ref.type || r.index != ref.index) continue;
      r.observed.phase = tfjob::ReplicaPhase::kPending;
      r.observed.exit_code.reset();
      r.observed.finished_at.reset();
      r.start_at = now + kRestartDelay;
    }
  }
  return absl::OkStatus();
}

void JobLoop::SayAwaitingEvaluator(tfjob::Time until) {
  if (said_awaiting_evaluator_) return;
  said_awaiting_evaluator_ = true;
  const std::string message =
      "training succeeded; the job waits for its evaluator to score the final checkpoint, " +
      FormatDuration(std::max(until - clocks_.wall(), std::chrono::seconds(0))) +
      " at most (--evaluator-grace-seconds)";
  reporter_.Say(message);
  reporter_.Event(false, "AwaitingEvaluator", message, nullptr);
}

void JobLoop::Stopped(Replica& r, std::optional<int> exit_code) {
  r.pid = -1;
  if (!exit_code) return;
  r.last_exit_code = *exit_code;
  r.finished_at = clocks_.wall();
  r.observed.phase =
      *exit_code == 0 ? tfjob::ReplicaPhase::kSucceeded : tfjob::ReplicaPhase::kFailed;
  r.observed.finished_at = r.finished_at;
}

void JobLoop::StopAll(const std::string& why, Grace grace, const std::function<bool()>& hurry) {
  const Clock::time_point start = clocks_.steady();
  std::map<const Replica*, Clock::time_point> kill_at;
  for (Replica& r : replicas_) {
    r.start_at.reset();
    if (r.pid <= 0) continue;
    processes_.Terminate(r.pid);
    r.stopped = true;
    reporter_.Event(false, "Killing", "stopping the process: " + why, &r);
    kill_at[&r] = start + (grace == Grace::kReplicas ? Clock::duration(r.termination_grace)
                                                     : Clock::duration(kStopGrace));
  }
  // A process stopped here ends with the code it exits with (or was killed by).
  while (true) {
    const Clock::time_point now = clocks_.steady();
    const bool hurried = hurry && hurry();
    bool alive = false;
    for (Replica& r : replicas_) {
      if (r.pid <= 0) continue;
      if (const std::optional<int> code = processes_.Reap(r.pid)) {
        Stopped(r, code);
        // Whether an interrupted job's replicas ended as they should (the transient code).
        if (grace == Grace::kReplicas) {
          reporter_.Say(
              r.name + " exited with code " + std::to_string(*code) + " after " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count()) +
              " ms of its " + std::to_string(r.termination_grace.count()) + " s grace");
        }
      } else if (hurried || now >= kill_at[&r]) {
        if (grace == Grace::kReplicas) {
          reporter_.Say(r.name +
                        (hurried ? " killed: interrupted again"
                                 : " killed: its grace of " +
                                       std::to_string(r.termination_grace.count()) + " s is over"));
        }
        Stopped(r, processes_.Kill(r.pid));
      } else {
        alive = true;
      }
    }
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace taas::launcher
