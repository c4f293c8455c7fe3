#include "progress.h"

#include <time.h>

#include <algorithm>

namespace taas::runtime {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void ProgressWindow::Add(const StepTimes& step) {
  ++steps_;
  sum_.comm_secs += step.comm_secs;
  sum_.wait_secs += step.wait_secs;
  sum_.train_secs += step.train_secs;
  sum_.train_cpu_secs += step.train_cpu_secs;
  sum_.examples += step.examples;
}

ProgressWindow::Summary ProgressWindow::Close(Clock::time_point now) {
  Summary s;
  s.steps = steps_;
  s.secs = std::max(std::chrono::duration<double>(now - start_).count(), 1e-9);
  const double steps = static_cast<double>(std::max<std::int64_t>(steps_, 1));
  s.sec_per_batch = steps_ > 0 ? s.secs / steps : 0.0;
  s.comm_fraction = sum_.comm_secs / s.secs;
  s.wait_fraction = sum_.wait_secs / s.secs;
  s.examples_per_sec = static_cast<double>(sum_.examples) / s.secs;
  s.train_secs = sum_.train_secs / steps;
  s.train_cpu_secs = sum_.train_cpu_secs / steps;
  start_ = now;
  steps_ = 0;
  sum_ = StepTimes{};
  return s;
}

void RunSummary::Add(std::int64_t examples, Clock::time_point now) {
  ++steps_;
  examples_ += examples;
  last_ = now;
  if (steps_ == kWarmupSteps) {
    warm_ = now;
    warm_examples_ = examples_;
  }
}

RunSummary::Figures RunSummary::Get() const {
  Figures f;
  f.local_steps = steps_;
  if (steps_ == 0) return f;
  const bool warmed = steps_ > kWarmupSteps;
  f.warmup_steps = warmed ? kWarmupSteps : 0;
  f.secs = std::max(std::chrono::duration<double>(last_ - (warmed ? warm_ : start_)).count(), 1e-9);
  f.sec_per_batch = f.secs / static_cast<double>(steps_ - f.warmup_steps);
  f.examples_per_sec = static_cast<double>(examples_ - (warmed ? warm_examples_ : 0)) / f.secs;
  return f;
}

}  // namespace taas::runtime
