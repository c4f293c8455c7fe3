// Process supervision for the launcher: starting a replica's process with its output captured
// line by line, noticing its exit, stopping it. ProcessTable is the seam the job loop acts
// through, so the loop's decisions are tested over a fake table (job_loop_test.cc); LocalProcesses
// is the real one, over fork/exec and process groups.
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
  // The exit code once the process has ended and its output was delivered (what arrives within
  // kOutputDrain of its exit: a descendant that left its group may hold the pipe open for ever);
  // std::nullopt while it runs. After an exit code was returned the id is unknown to the table.
  virtual std::optional<int> Reap(int id) = 0;
  // Asks the process (and what it started) to stop: SIGTERM. Does not wait.
  virtual void Terminate(int id) = 0;
  // Kills the process (and what it started): SIGKILL, waits for it, returns its exit code, as
  // Reap would have; std::nullopt for an id the table does not know. The id is unknown to the
  // table afterwards.
  virtual std::optional<int> Kill(int id) = 0;
};

// A wait status as an exit code, the way a shell and the kubelet report it: the process's own
// code when it exited, 128 + the signal number when a signal ended it (137 for SIGKILL).
int ExitCodeOf(int wait_status);

// Child processes of this one, each in a process group of its own (so that stopping a replica
// stops what it started too), with no descriptor of this process but its stdout/stderr pipe.
// The id is the pid. Destroying the table kills and reaps every process it still knows.
class LocalProcesses final : public ProcessTable {
 public:
  // How long output is still read after the process exited, while something else holds its pipe.
  static constexpr std::chrono::milliseconds kOutputDrain{2000};

  LocalProcesses() = default;
  ~LocalProcesses() override;
  LocalProcesses(const LocalProcesses&) = delete;
  LocalProcesses& operator=(const LocalProcesses&) = delete;

  absl::StatusOr<int> Start(ProcessSpec spec) override;
  std::optional<int> Reap(int id) override;
  void Terminate(int id) override;
  std::optional<int> Kill(int id) override;

 private:
  // A process's output reader; `drain_until` (steady-clock nanoseconds, 0 = not set) is when it
  // stops reading whether or not the pipe was closed.
  struct Reader {
    std::thread thread;
    std::shared_ptr<std::atomic<std::int64_t>> drain_until;
  };
  // Lets the reader of a process that has exited drain for at most kOutputDrain, joins it and
  // forgets the process.
  void Forget(pid_t pid);

  std::map<pid_t, Reader> readers_;  // one per known process
};

}  // namespace taas::launcher
