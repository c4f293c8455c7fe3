// Private to the runtime: what a training replica's progress line reports over a window of
// steps (sec_per_batch, comm_fraction, wait_fraction, train_secs, train_cpu_secs, ...).
#pragma once

#include <chrono>
#include <cstdint>

namespace taas::runtime {

// CPU seconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID). The difference over a call
// that ran on this thread, against its wall time, tells computing from waiting for a core.
double ThreadCpuSeconds();

// The times of one completed step.
struct StepTimes {
  double comm_secs = 0;       // pull + push, in sync mode including the wait for the others
  double wait_secs = 0;       // the part of it the PS held the push for the other replicas
  double train_secs = 0;      // wall time of the model's train()
  double train_cpu_secs = 0;  // CPU time of the calling thread in train()
  std::int64_t examples = 0;
};

// Sums the steps since the last progress line; Close() gives the window's figures and starts the
// next window. Not thread-safe: one training loop owns it.
class ProgressWindow {
 public:
  using Clock = std::chrono::steady_clock;

  struct Summary {
    std::int64_t steps = 0;
    double secs = 0;              // wall time of the window
    double sec_per_batch = 0;     // secs / steps
    double comm_fraction = 0;     // comm seconds / secs
    double wait_fraction = 0;     // wait seconds / secs
    double examples_per_sec = 0;  // examples / secs
    // Per step, means over the window: train()'s wall and CPU time. train_secs - train_cpu_secs
    // is the time train() was ready to run but had no core (other processes, the host), which
    // in sync mode decides who waits for whom.
    double train_secs = 0;
    double train_cpu_secs = 0;
  };

  explicit ProgressWindow(Clock::time_point start = Clock::now()) : start_(start) {}

  void Add(const StepTimes& step);
  Summary Close(Clock::time_point now = Clock::now());

 private:
  Clock::time_point start_;
  std::int64_t steps_ = 0;
  StepTimes sum_;
};

}  // namespace taas::runtime
