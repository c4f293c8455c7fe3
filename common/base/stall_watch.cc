#include "taas/base/stall_watch.h"

#include <algorithm>
#include <ctime>

#include "taas/base/ascii.h"

namespace taas {
namespace {

// "2026-12-01T10:00:00Z": when the stall began, as a person compares it with other logs.
std::string UtcText(std::chrono::system_clock::time_point at) {
  const std::time_t t = std::chrono::system_clock::to_time_t(at);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

struct StallWatch::Entry {
  std::function<std::string()> whom;
  Clock::time_point since;
  std::chrono::system_clock::time_point since_wall;
  int reports = 0;  // lines logged of this stall
  // Whom the last line named: once the peer answered, `whom` may name nobody still awaited.
  std::string reported_peer;
};

std::chrono::milliseconds StallReportDue(const StallSchedule& schedule, int reports_made) {
  std::chrono::milliseconds due = schedule.threshold;
  for (int i = 0; i < reports_made; ++i) {
    due += std::min(due, schedule.max_interval);
  }
  return due;
}

double StalledSeconds(const StallSchedule& schedule, std::chrono::duration<double> waited) {
  return waited >= schedule.threshold ? waited.count() : 0.0;
}

std::string PeerName(std::string_view type, int index) {
  return AsciiLower(type) + "-" + std::to_string(index);
}

StallWatch::StallWatch(Logger logger, StallSchedule schedule, Reporter report,
                       const std::atomic<std::int64_t>* global_step)
    : logger_(std::move(logger)),
      schedule_(schedule),
      report_(std::move(report)),
      global_step_(global_step),
      thread_([this] { Run(); }) {}

StallWatch::~StallWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

StallWatch::Wait StallWatch::Begin(std::function<std::string()> whom) {
  Wait wait;
  std::lock_guard<std::mutex> lock(mu_);
  wait.watch_ = this;
  wait.entry_ = waits_.insert(
      waits_.end(), Entry{std::move(whom), Clock::now(), std::chrono::system_clock::now(), 0, ""});
  return wait;
}

void StallWatch::Finish(std::list<Entry>::iterator entry) {
  const std::chrono::duration<double> waited = Clock::now() - entry->since;
  ended_stalled_ += StalledSeconds(schedule_, waited);
  if (entry->reports > 0) {
    logger_.Info("the peer answered: the stall is over",
                 {{"peer", entry->reported_peer},
                  {"waited_secs", waited.count()},
                  {"global_step", global_step_ ? global_step_->load() : std::int64_t{0}}});
  }
}

void StallWatch::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, kTick, [this] { return stopping_; });
    if (stopping_) break;
    Tick(Clock::now());
    if (!report_) continue;
    StallState state;
    state.stalled_seconds_total = ended_stalled_;
    for (const Entry& e : waits_) {
      const std::chrono::duration<double> waited = Clock::now() - e.since;
      const double stalled = StalledSeconds(schedule_, waited);
      state.stalled_seconds_total += stalled;
      if (stalled > 0 && (!state.current || stalled > state.current->seconds))
        state.current = StallState::Current{e.whom(), stalled};
    }
    // The reporter sets gauges (their own lock): never a Wait, so holding ours is safe.
    report_(state);
  }
}

void StallWatch::Tick(Clock::time_point now) {
  for (Entry& e : waits_) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - e.since);
    if (waited < StallReportDue(schedule_, e.reports)) continue;
    ++e.reports;
    e.reported_peer = e.whom();
    logger_.Warning("waiting on a peer",
                    {{"peer", e.reported_peer},
                     {"since", UtcText(e.since_wall)},
                     {"waited_secs", std::chrono::duration<double>(waited).count()},
                     {"next_report_secs",
                      std::chrono::duration<double>(StallReportDue(schedule_, e.reports)).count()},
                     {"global_step", global_step_ ? global_step_->load() : std::int64_t{0}}});
  }
}

StallWatch::Wait::Wait(Wait&& other) noexcept : watch_(other.watch_), entry_(other.entry_) {
  other.watch_ = nullptr;
}

StallWatch::Wait& StallWatch::Wait::operator=(Wait&& other) noexcept {
  if (this != &other) {
    End();
    watch_ = other.watch_;
    entry_ = other.entry_;
    other.watch_ = nullptr;
  }
  return *this;
}

void StallWatch::Wait::Progressed() {
  if (watch_ == nullptr) return;
  std::lock_guard<std::mutex> lock(watch_->mu_);
  watch_->Finish(entry_);
  entry_->since = Clock::now();
  entry_->since_wall = std::chrono::system_clock::now();
  entry_->reports = 0;
}

void StallWatch::Wait::End() {
  if (watch_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(watch_->mu_);
    watch_->Finish(entry_);
    watch_->waits_.erase(entry_);
  }
  watch_ = nullptr;
}

}  // namespace taas
