// Private to the runtime: when the chief's periodic work is due. Checkpoints and summaries follow
// the one rule below, as TensorFlow's CheckpointSaverHook and SummarySaverHook share its
// SecondOrStepTimer; unlike that timer, both periods may be set at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace taas::runtime {

// Every `steps` global steps and/or every `secs` seconds, each 0 = off (both 0: never). Due when
// either count, since the last time it happened, reached its period: whichever comes first wins,
// and each time it happens, for either reason, both counts restart. Never twice at one global
// step. Before it first happened (and no Happened gave a starting point) it is due at once.
// Not thread-safe: one training loop owns it.
class StepsOrSecsSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  StepsOrSecsSchedule(std::int64_t steps, double secs) : steps_(steps), secs_(secs) {}

  bool Due(std::int64_t global_step, Clock::time_point now = Clock::now()) const;
  // It happened at `global_step`, `now` (or training starts there: both counts start from it).
  void Happened(std::int64_t global_step, Clock::time_point now = Clock::now());
  // An attempt failed: the seconds count restarts from `now`, so a schedule by time retries a
  // whole period later instead of at every step; the step count keeps running.
  void RestartSeconds(Clock::time_point now = Clock::now()) { last_time_ = now; }

 private:
  std::int64_t steps_;
  double secs_;
  std::optional<std::int64_t> last_step_;
  Clock::time_point last_time_{};
};

}  // namespace taas::runtime
