// Makes a replica's long waits on a peer visible (issue 37, "Stalls are visible"). A call that
// blocks on a peer (a parameter server's reply, a ring neighbour's bytes, the chief's
// initialisation) holds a StallWatch::Wait while it waits; a wait that lasts longer than the
// schedule's threshold is a stall: the watch's own thread logs whom it waits for and since when,
// again with backoff while it lasts, once more when the peer answers, and hands every tick's
// state to a reporter (the runtime's Prometheus gauges), so a scraper sees the stall while the
// waiting thread is still blocked. Begin and ending a wait cost a lock each: cheap next to the
// call they watch. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "taas/base/log.h"

namespace taas {

// When the log lines of one stall are due. Pure.
struct StallSchedule {
  // A wait on a peer becomes a stall once it has lasted this long (its first line).
  std::chrono::milliseconds threshold{std::chrono::seconds(30)};
  // The lines after the first come each after twice the wait before it (30 s, 60 s, 120 s ...),
  // at most this far apart, so a long stall keeps saying so without flooding the log.
  std::chrono::milliseconds max_interval{std::chrono::minutes(5)};
};

// How long a wait has lasted when its line number `reports_made` (0: the first) is due: the
// threshold, then each time the double of the last, at most max_interval after it.
std::chrono::milliseconds StallReportDue(const StallSchedule& schedule, int reports_made);

// The seconds a finished or running wait of `waited` adds to the replica's stalled seconds: all
// of it once it reached the threshold (a stall counts from the wait's start), else none.
double StalledSeconds(const StallSchedule& schedule, std::chrono::duration<double> waited);

// What the watch reports on every tick: the longest wait that is a stall now, if any, and the
// replica's stalled seconds so far (StalledSeconds of every wait, ended or running).
struct StallState {
  struct Current {
    std::string peer;  // whom it waits for: "ps-0", "worker-1"; several joined by ", "
    double seconds = 0;
  };
  std::optional<Current> current;
  double stalled_seconds_total = 0;
};

class StallWatch {
 public:
  using Reporter = std::function<void(const StallState&)>;
  // How often the watch's thread looks at the waits: the lateness of a line and of the gauges.
  static constexpr std::chrono::milliseconds kTick{250};

  // Logs through `logger` (with the replica's job, role and index), adding the global step
  // `global_step` holds when given (not owned; must outlive the watch). `report` runs on the
  // watch's thread on every tick (may be empty).
  StallWatch(Logger logger, StallSchedule schedule, Reporter report,
             const std::atomic<std::int64_t>* global_step = nullptr);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  const StallSchedule& schedule() const { return schedule_; }

  struct Entry;
  // A wait in progress; ends when destroyed. Movable, not copyable.
  class Wait {
   public:
    Wait() = default;
    Wait(Wait&& other) noexcept;
    Wait& operator=(Wait&& other) noexcept;
    Wait(const Wait&) = delete;
    Wait& operator=(const Wait&) = delete;
    ~Wait() { End(); }
    // The peer gave a sign of life (bytes moved): the wait starts over from now.
    void Progressed();
    void End();

   private:
    friend class StallWatch;
    StallWatch* watch_ = nullptr;
    std::list<Entry>::iterator entry_;
  };

  // Starts a wait on the peer(s) `whom` names (called on the watch's thread when a line is due,
  // so it may name only the peers still awaited; it must stay callable until the Wait ends).
  [[nodiscard]] Wait Begin(std::function<std::string()> whom);

 private:
  using Clock = std::chrono::steady_clock;
  void Run();
  void Tick(Clock::time_point now);
  void Finish(std::list<Entry>::iterator entry);

  const Logger logger_;
  const StallSchedule schedule_;
  const Reporter report_;
  const std::atomic<std::int64_t>* global_step_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::list<Entry> waits_;    // guarded by mu_
  double ended_stalled_ = 0;  // guarded by mu_: the stalled seconds of waits that ended
  bool stopping_ = false;     // guarded by mu_
  std::thread thread_;
};

// A peer as the stall lines name it: a replica's lower-case type and index, "ps-0", the shape of
// the `{job}-{type}-{index}` replica names without the job (tfjob::ReplicaName).
std::string PeerName(std::string_view type, int index);

}  // namespace taas
