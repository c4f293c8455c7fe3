// Process supervision for the launcher: starting a replica's process with its output captured
// line by line, noticing its exit, stopping it, and ending what it left running (a container's
// end takes all its processes with it; a replica's takes its process group). ProcessTable is the
// seam the job loop acts through, so the loop's decisions are tested over a fake table
// (job_loop_test.cc); LocalProcesses is the real one, over fork/exec and process groups.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "taas/base/status.h"

namespace taas::launcher {

// How long a process group asked to stop (SIGTERM) has before SIGKILL: when the launcher stops a
// replica, and when a replica's process ended and left others of its group running.
inline constexpr std::chrono::seconds kStopGrace{5};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in the PATH of `env`
  std::vector<std::string> env;   // the whole environment, KEY=VALUE each
  // Each line of the process's stdout and stderr (without its newline; a last line without one
  // too). Called from a reader thread of the table, never after Reap or Kill returned for it.
  std::function<void(std::string_view)> on_line;
};

// Processes by id (a positive number, unique while the process is known to the table). Not
// thread-safe: one caller, the job loop.
class ProcessTable {
 public:
  virtual ~ProcessTable() = default;

  // Starts `spec`; its id.
  virtual absl::StatusOr<int> Start(ProcessSpec spec) = 0;
  // The exit code once the process has ended, every other process of its group too, and its
  // output was delivered (what arrives within kOutputDrain of its exit: a descendant that left its
  // group may hold the pipe open for ever); std::nullopt while it or any of its group runs. When
  // the process ends, what it left running in its group gets SIGTERM, and SIGKILL once the
  // table's grace is over. After an exit code was returned the id is unknown to the table.
  virtual std::optional<int> Reap(int id) = 0;
  // Asks the process (and what it started) to stop: SIGTERM. Does not wait.
  virtual void Terminate(int id) = 0;
  // Kills the process (and what it started): SIGKILL, waits for it and, for a bounded time, for
  // the rest of its group; returns its exit code, as Reap would have; std::nullopt for an id the
  // table does not know. The id is unknown to the table afterwards.
  virtual std::optional<int> Kill(int id) = 0;
};

// A wait status as an exit code, the way a shell and the kubelet report it: the process's own
// code when it exited, 128 + the signal number when a signal ended it (137 for SIGKILL).
int ExitCodeOf(int wait_status);

// What /proc/<pid>/stat says of a process (proc(5)): its state ('R', 'S', 'Z' for a zombie...)
// and its process group.
struct ProcStat {
  char state = '?';
  pid_t group = 0;
};
// The fields of the text of /proc/<pid>/stat; std::nullopt when it is not such a text.
std::optional<ProcStat> ParseProcStat(std::string_view text);

// Child processes of this one, each in a process group of its own (so that stopping a replica
// stops what it started too, and its end ends what it left behind), with no descriptor of this
// process but its stdout/stderr pipe. The id is the pid. A process that leaves its group (setsid)
// is not followed. Destroying the table kills and reaps every process it still knows.
//
// A process that has ended stays a zombie until the rest of its group is gone: its pid, the
// group's id, cannot be reused meanwhile, so a signal to the group never reaches another's. A
// group is gone when none of its processes runs (zombies, which hold nothing, do not count).
class LocalProcesses final : public ProcessTable {
 public:
  // How long output is still read after the process exited, while something else holds its pipe.
  static constexpr std::chrono::milliseconds kOutputDrain{2000};
  // How long Kill waits for the rest of a group after SIGKILL (a process in uninterruptible I/O
  // dies only when the I/O ends).
  static constexpr std::chrono::milliseconds kKilledGroupWait{2000};

  // `grace`: how long what a process leaves running in its group has between SIGTERM and SIGKILL.
  explicit LocalProcesses(std::chrono::milliseconds grace = kStopGrace) : grace_(grace) {}
  ~LocalProcesses() override;
  LocalProcesses(const LocalProcesses&) = delete;
  LocalProcesses& operator=(const LocalProcesses&) = delete;

  absl::StatusOr<int> Start(ProcessSpec spec) override;
  std::optional<int> Reap(int id) override;
  void Terminate(int id) override;
  std::optional<int> Kill(int id) override;

 private:
  // A known process: its output reader, where `drain_until` (steady-clock nanoseconds, 0 = not
  // set) is when it stops reading whether or not the pipe was closed; and, once the process has
  // ended (a zombie not yet reaped), when the rest of its group gets SIGKILL.
  struct Known {
    std::thread reader;
    std::shared_ptr<std::atomic<std::int64_t>> drain_until;
    std::optional<std::chrono::steady_clock::time_point> group_kill_at;
  };
  // Reaps the ended process `pid` (whose group is gone), lets its reader drain for at most
  // kOutputDrain, joins it and forgets the process; its exit code.
  int Forget(pid_t pid);

  const std::chrono::milliseconds grace_;
  std::map<pid_t, Known> known_;  // one per known process
};

}  // namespace taas::launcher
