// Process supervision for the launcher: starting a replica's process with its output captured
// line by line, noticing its exit, stopping it. ProcessTable is the seam the job loop acts
// through, so the loop's decisions are tested over a fake table (job_loop_test.cc); LocalProcesses
// is the real one, over fork/exec and process groups.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
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
  // The exit code once the process has ended and all its output was delivered; std::nullopt
  // while it runs. After an exit code was returned the id is unknown to the table.
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
  LocalProcesses() = default;
  ~LocalProcesses() override;
  LocalProcesses(const LocalProcesses&) = delete;
  LocalProcesses& operator=(const LocalProcesses&) = delete;

  absl::StatusOr<int> Start(ProcessSpec spec) override;
  std::optional<int> Reap(int id) override;
  void Terminate(int id) override;
  std::optional<int> Kill(int id) override;

 private:
  // Joins the reader of a process that has exited and forgets the process.
  void Forget(pid_t pid);

  std::map<pid_t, std::thread> readers_;  // one per known process
};

}  // namespace taas::launcher
