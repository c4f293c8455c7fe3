// The launcher's job loop, a local controller: each turn it starts the replicas that are due,
// takes in the processes that exited, and lets the TFJob rules library decide, as the operator's
// controller does for pods: tfjob::DecideOnExit and the kubelet's in-place restart
// (tfjob::RestartsInPlace) for an exit, tfjob::ComputeJobStatus for the job's conditions and the
// replicas to run again. It acts only through a ProcessTable and reports through a LoopReporter,
// so every decision is tested over a fake process table (job_loop_test.cc).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "processes.h"
#include "replica_env.h"
#include "taas/base/status.h"
#include "taas/tfjob/restart.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/tfjob.h"

namespace taas::launcher {

using Clock = std::chrono::steady_clock;

// Now on the wall clock, to the second, as the TFJob status records times.
tfjob::Time SystemNow();

// A replica started again (in place, or because the job status asked for it) waits this long.
inline constexpr std::chrono::seconds kRestartDelay{1};

// One replica under the loop: what it runs (ReplicaLaunch) and where it stands.
struct Replica : ReplicaLaunch {
  int pid = -1;                     // its process's id in the ProcessTable; -1 while none runs
  tfjob::ObservedReplica observed;  // what the TFJob rules see of it
  std::optional<Clock::time_point> start_at;  // a (re)start is due then
  int starts = 0;                             // processes started so far
  // What the web UI shows beyond `observed` (see ReplicaProcess).
  std::optional<int> last_exit_code;
  std::optional<tfjob::Time> started_at, finished_at;
  bool stopped = false;  // stopped by StopAll rather than exiting by itself
};

// A replica named and set up by `launch`, Pending, to be started at `start_at`.
Replica PendingReplica(ReplicaLaunch launch, Clock::time_point start_at);

// What becomes of a replica whose process exited with `exit_code` under `policy`.
struct ExitDecision {
  tfjob::ExitAction action;  // the TFJob rule, tfjob::DecideOnExit (what the launcher prints)
  // The launcher plays kubelet: it restarts the process in place, the replica staying Running,
  // when the pod's restartPolicy restarts the container (tfjob::RestartsInPlace: under Always,
  // OnFailure). Otherwise the replica ends Succeeded or Failed, and the job status decides whether
  // it runs again (under ExitCode, as the operator recreates the pod).
  bool in_place = false;

  bool operator==(const ExitDecision&) const = default;
};
ExitDecision DecideExit(tfjob::RestartPolicy policy, int exit_code);

// Where the loop says what it did. Say, Event and ReplicaNote are called from the loop's thread;
// ReplicaOutput from a process table's reader threads.
class LoopReporter {
 public:
  virtual ~LoopReporter() = default;
  // A line of the launcher's own ("[taas] ..." on the console).
  virtual void Say(const std::string& line) = 0;
  // An event of the job (`replica` null) or of a replica.
  virtual void Event(bool warning, std::string reason, std::string message,
                     const Replica* replica) = 0;
  // A line of the launcher's for the replica's log only (where a restart begins).
  virtual void ReplicaNote(const Replica& replica, std::string_view line) = 0;
  // A line of the replica's own output.
  virtual void ReplicaOutput(const std::string& replica, std::string_view line) = 0;
};

struct LoopClocks {
  std::function<Clock::time_point()> steady = [] { return Clock::now(); };
  std::function<tfjob::Time()> wall = SystemNow;
};

class JobLoop {
 public:
  // `job` and `replicas` belong to the caller, who may read them between calls; each must outlive
  // the loop, as must `processes` and `reporter`.
  // `status_options` go to every tfjob::ComputeJobStatus (the evaluator's grace:
  // --evaluator-grace-seconds).
  JobLoop(tfjob::TFJob& job, std::deque<Replica>& replicas, ProcessTable& processes,
          LoopReporter& reporter, LoopClocks clocks = {}, tfjob::StatusOptions status_options = {});
  JobLoop(const JobLoop&) = delete;
  JobLoop& operator=(const JobLoop&) = delete;

  // One turn: starts every replica whose start is due, takes in the exits (DecideExit; a replica
  // that ended is observed with its exit's wall time as finished_at), computes the job status
  // (tfjob::ComputeJobStatus, into job.status; its events are said and reported, and once, that
  // the job waits for its evaluator) and schedules the restarts it lists. An error ("cannot start
  // NAME: ...") when a process could not be started; the caller then stops the others. Never
  // blocks on a process.
  absl::Status Turn();

  // Stops every process (SIGTERM to its group; SIGKILL after the grace) and cancels every
  // scheduled start; each stopped replica ends with the code its process ended with. Blocks until
  // all are gone, with what they started in their groups, and what a replica that had ended left
  // running there (ProcessTable::Reap). `grace`: kStopGrace once the job is over; each replica's
  // termination_grace when the job is interrupted, so that its chief saves the job's state as
  // under the kubelet. Once `hurry` says so (a second Ctrl-C), what still runs is killed at once.
  enum class Grace { kJobOver, kReplicas };
  void StopAll(const std::string& why, Grace grace = Grace::kJobOver,
               const std::function<bool()>& hurry = nullptr);

 private:
  absl::Status Start(Replica& r);
  void TakeExits(Clock::time_point now);
  void Stopped(Replica& r, std::optional<int> exit_code);
  // Says once that the job's success waits for its evaluator, until `until` at most.
  void SayAwaitingEvaluator(tfjob::Time until);

  tfjob::TFJob& job_;
  std::deque<Replica>& replicas_;
  ProcessTable& processes_;
  LoopReporter& reporter_;
  const LoopClocks clocks_;
  const tfjob::StatusOptions status_options_;
  bool said_awaiting_evaluator_ = false;
};

}  // namespace taas::launcher
