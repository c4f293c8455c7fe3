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
  // Steps added since the last Close: a window not logged yet (the last, partial one).
  std::int64_t steps() const { return steps_; }

 private:
  Clock::time_point start_;
  std::int64_t steps_ = 0;
  StepTimes sum_;
};

// Local steps a replica's run summary leaves out of its means: the first steps create the
// layers' primitives and buffers and wait for the other replicas to start, so they say nothing
// of the speed of training.
inline constexpr std::int64_t kWarmupSteps = 10;

// A replica's whole run, for the summary "training finished" logs: its local steps, and its mean
// wall time per batch and examples per second after the warm-up (the first kWarmupSteps local
// steps when it ran more than that, else none). Not thread-safe: one training loop owns it.
class RunSummary {
 public:
  using Clock = std::chrono::steady_clock;

  struct Figures {
    std::int64_t local_steps = 0;
    std::int64_t warmup_steps = 0;  // kWarmupSteps, or 0 for a run of at most that many steps
    double secs = 0;                // wall time of the steps after the warm-up
    double sec_per_batch = 0;       // secs / (local_steps - warmup_steps); 0 without steps
    double examples_per_sec = 0;    // their examples / secs
  };

  // `start`: when the first step began.
  explicit RunSummary(Clock::time_point start = Clock::now()) : start_(start) {}

  // A step that ended at `now` with `examples`.
  void Add(std::int64_t examples, Clock::time_point now = Clock::now());
  Figures Get() const;

 private:
  Clock::time_point start_, warm_, last_;
  std::int64_t steps_ = 0;
  std::int64_t examples_ = 0;       // of every step
  std::int64_t warm_examples_ = 0;  // of the warm-up steps
};

}  // namespace taas::runtime
