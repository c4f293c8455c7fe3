#include "local_job_state.h"

#include <algorithm>
#include <chrono>

namespace taas::launcher {
namespace {

// The number of the first of the last `lines` lines (all when `lines` <= 0).
std::uint64_t FirstOfLast(const ui_server::LogWindow& log, int lines) {
  return lines <= 0 ? 0 : log.lines_ended() - std::min<std::uint64_t>(log.lines_ended(), lines);
}

}  // namespace

LocalJobState::LocalJobState(std::size_t max_log_bytes, std::size_t max_events)
    : max_log_bytes_(max_log_bytes), max_events_(max_events) {}

void LocalJobState::Publish(const tfjob::TFJob& job, std::vector<ReplicaProcess> replicas) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot_.published = true;
    snapshot_.job = job;
    snapshot_.replicas = std::move(replicas);
  }
  changed_.notify_all();
}

void LocalJobState::AddEvent(LocalEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_.events.push_back(std::move(event));
  if (snapshot_.events.size() > max_events_) snapshot_.events.erase(snapshot_.events.begin());
}

void LocalJobState::AppendLog(const std::string& replica, std::string_view line) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ui_server::LogWindow& log = logs_.try_emplace(replica, max_log_bytes_).first->second;
    log.Feed(line);
    log.Feed("\n");
  }
  changed_.notify_all();
}

void LocalJobState::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
}

LocalJobState::Snapshot LocalJobState::Get() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

bool LocalJobState::KnownLocked(const std::string& replica) const {
  return std::any_of(snapshot_.replicas.begin(), snapshot_.replicas.end(),
                     [&](const ReplicaProcess& r) { return r.name == replica; });
}

bool LocalJobState::LiveLocked(const std::string& replica) const {
  for (const ReplicaProcess& r : snapshot_.replicas) {
    if (r.name == replica) return r.running || r.restart_pending;
  }
  return false;
}

absl::StatusOr<std::string> LocalJobState::LogTail(const std::string& replica, int lines,
                                                   std::size_t window_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!KnownLocked(replica)) return absl::NotFoundError("pods \"" + replica + "\" not found");
  auto it = logs_.find(replica);
  if (it == logs_.end()) return std::string();
  return it->second.Text(FirstOfLast(it->second, lines), window_bytes);
}

absl::Status LocalJobState::FollowLog(const std::string& replica, int lines,
                                      const std::function<bool(std::string_view)>& on_chunk,
                                      std::size_t window_bytes) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (!KnownLocked(replica)) return absl::NotFoundError("pods \"" + replica + "\" not found");
  std::uint64_t next = 0;
  if (auto it = logs_.find(replica); it != logs_.end()) next = FirstOfLast(it->second, lines);
  for (;;) {
    std::string chunk;
    if (auto it = logs_.find(replica); it != logs_.end()) {
      chunk = it->second.Text(next, window_bytes);
      next = it->second.lines_ended();
    }
    const bool done = closed_ || !LiveLocked(replica);
    if (!chunk.empty()) {
      lock.unlock();
      if (!on_chunk(chunk)) return absl::OkStatus();
      lock.lock();
      continue;  // more may have come meanwhile
    }
    if (done) return absl::OkStatus();
    // Every change notifies; the timeout is only a safety net.
    changed_.wait_for(lock, std::chrono::seconds(1));
  }
}

}  // namespace taas::launcher
