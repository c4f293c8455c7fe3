// What the local launcher knows about its one job, shared with the web UI: the TFJob with the
// status the launcher computed (taas::tfjob rules), each replica process, the launcher's
// happenings as events, and each replica's captured output.
//
// The launcher writes, the UI server's threads read. Every call holds one mutex only for a copy,
// so the launcher's loop and the replicas' output readers are never slowed by a reader; a log
// follower waits on a condition variable and writes to its socket without holding the lock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/tfjob.h"
#include "taas/ui_server/log_window.h"

namespace taas::launcher {

// One replica process, as a Kubernetes pod would describe it.
struct ReplicaProcess {
  tfjob::ReplicaType type = tfjob::ReplicaType::kWorker;
  int index = 0;
  std::string name;  // {job}-{type}-{index}
  tfjob::ReplicaPhase phase = tfjob::ReplicaPhase::kPending;
  bool running = false;          // a process is alive
  bool restart_pending = false;  // it will be started (again) shortly
  int starts = 0;                // processes started so far
  std::optional<int> exit_code;  // of the most recent exit
  // Stopped by the launcher (the job ended or was interrupted) rather than exiting by itself.
  bool stopped = false;
  std::optional<tfjob::Time> started_at;   // of the current or last process
  std::optional<tfjob::Time> finished_at;  // of the most recent exit
  int metrics_port = 0;
};

// Something the launcher did or saw, shown as a Kubernetes Event of the job or of a replica.
struct LocalEvent {
  tfjob::Time time;
  bool warning = false;
  std::string reason;  // "Started", "Exited", "Restarting", "TFJobRunning", ...
  std::string message;
  std::string object_kind;  // "TFJob" or "Pod"
  std::string object_name;  // the job's or the replica's name
};

class LocalJobState {
 public:
  // Each replica keeps its latest `max_log_bytes` of output (a log window, ui_server/log_window.h:
  // a longer line keeps its end); at most `max_events` events are kept.
  explicit LocalJobState(std::size_t max_log_bytes = 4 << 20, std::size_t max_events = 2000);
  LocalJobState(const LocalJobState&) = delete;
  LocalJobState& operator=(const LocalJobState&) = delete;

  // ---- the launcher's side
  void Publish(const tfjob::TFJob& job, std::vector<ReplicaProcess> replicas);
  void AddEvent(LocalEvent event);
  // One line of a replica's output (without its newline).
  void AppendLog(const std::string& replica, std::string_view line);
  // Ends every log follower and makes new ones return at once (call before stopping the UI).
  void Close();

  // ---- the readers' side
  struct Snapshot {
    bool published = false;  // false until the first Publish
    tfjob::TFJob job;
    std::vector<ReplicaProcess> replicas;
    std::vector<LocalEvent> events;  // oldest first
  };
  Snapshot Get() const;

  // The last `lines` lines of the replica's output, each ending in '\n' (all kept lines when
  // `lines` <= 0), within `window_bytes`: the oldest shown that does not fit whole shows its end
  // behind ui_server::CutMarker. NotFound for an unknown replica.
  absl::StatusOr<std::string> LogTail(
      const std::string& replica, int lines,
      std::size_t window_bytes = std::numeric_limits<std::size_t>::max()) const;

  // Sends the tail as LogTail does, then each new line (each chunk within `window_bytes` too),
  // until the replica has no process and none coming (it finished), Close() is called, or
  // `on_chunk` returns false. Blocks.
  absl::Status FollowLog(const std::string& replica, int lines,
                         const std::function<bool(std::string_view)>& on_chunk,
                         std::size_t window_bytes = std::numeric_limits<std::size_t>::max()) const;

 private:
  bool LiveLocked(const std::string& replica) const;
  bool KnownLocked(const std::string& replica) const;

  const std::size_t max_log_bytes_;
  const std::size_t max_events_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  Snapshot snapshot_;                                 // guarded by mu_
  std::map<std::string, ui_server::LogWindow> logs_;  // guarded by mu_
  bool closed_ = false;                               // guarded by mu_
};

}  // namespace taas::launcher
