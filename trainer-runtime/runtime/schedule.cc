#include "schedule.h"

namespace taas::runtime {

bool StepsOrSecsSchedule::Due(std::int64_t global_step, Clock::time_point now) const {
  if (steps_ <= 0 && secs_ <= 0) return false;
  if (!last_step_) return true;
  if (global_step == *last_step_) return false;
  const bool by_steps = steps_ > 0 && global_step - *last_step_ >= steps_;
  const bool by_secs =
      secs_ > 0 && std::chrono::duration<double>(now - last_time_).count() >= secs_;
  return by_steps || by_secs;
}

void StepsOrSecsSchedule::Happened(std::int64_t global_step, Clock::time_point now) {
  last_step_ = global_step;
  last_time_ = now;
}

}  // namespace taas::runtime
