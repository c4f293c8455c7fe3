#include "local_job_state.h"

#include <algorithm>
#include <chrono>

namespace taas::launcher {

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
    Log& log = logs_[replica];
    log.lines.emplace_back(line);
    log.bytes += line.size() + 1;
    ++log.appended;
    while (log.bytes > max_log_bytes_ && log.lines.size() > 1) {
      log.bytes -= log.lines.front().size() + 1;
      log.lines.pop_front();
    }
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

std::string LocalJobState::JoinFrom(const Log& log, std::uint64_t first) {
  const std::uint64_t oldest = log.appended - log.lines.size();
  std::string text;
  for (std::uint64_t i = std::max(first, oldest); i < log.appended; ++i) {
    text += log.lines[static_cast<std::size_t>(i - oldest)];
    text += '\n';
  }
  return text;
}

absl::StatusOr<std::string> LocalJobState::LogTail(const std::string& replica, int lines) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!KnownLocked(replica)) return absl::NotFoundError("pods \"" + replica + "\" not found");
  auto it = logs_.find(replica);
  if (it == logs_.end()) return std::string();
  const Log& log = it->second;
  const std::uint64_t first =
      lines <= 0 ? 0 : log.appended - std::min<std::uint64_t>(log.appended, lines);
  return JoinFrom(log, first);
}

absl::Status LocalJobState::FollowLog(const std::string& replica, int lines,
                                      const std::function<bool(std::string_view)>& on_chunk) const {
  std::unique_lock<std::mutex> lock(mu_);
  if (!KnownLocked(replica)) return absl::NotFoundError("pods \"" + replica + "\" not found");
  std::uint64_t next = 0;
  if (auto it = logs_.find(replica); it != logs_.end()) {
    next =
        lines <= 0 ? 0 : it->second.appended - std::min<std::uint64_t>(it->second.appended, lines);
  }
  for (;;) {
    std::string chunk;
    if (auto it = logs_.find(replica); it != logs_.end()) {
      chunk = JoinFrom(it->second, next);
      next = it->second.appended;
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
