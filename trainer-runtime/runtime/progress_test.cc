#include "progress.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

namespace taas::runtime {
namespace {

using Clock = ProgressWindow::Clock;

StepTimes Step(double comm, double wait, double train, double train_cpu, std::int64_t examples) {
  StepTimes step;
  step.comm_secs = comm;
  step.wait_secs = wait;
  step.train_secs = train;
  step.train_cpu_secs = train_cpu;
  step.examples = examples;
  return step;
}

TEST_CASE("a window's figures are shares of its wall time and means per step") {
  const Clock::time_point t0{};
  ProgressWindow window(t0);
  window.Add(Step(0.2, 0.1, 0.7, 0.5, 100));
  window.Add(Step(0.2, 0.3, 0.9, 0.7, 100));
  const auto s = window.Close(t0 + std::chrono::seconds(2));
  CHECK(s.steps == 2);
  CHECK(s.secs == doctest::Approx(2.0));
  CHECK(s.sec_per_batch == doctest::Approx(1.0));
  CHECK(s.comm_fraction == doctest::Approx(0.2));
  CHECK(s.wait_fraction == doctest::Approx(0.2));
  CHECK(s.examples_per_sec == doctest::Approx(100.0));
  CHECK(s.train_secs == doctest::Approx(0.8));
  CHECK(s.train_cpu_secs == doctest::Approx(0.6));

  // The next window starts empty where the last one closed.
  window.Add(Step(0.5, 0.0, 0.5, 0.5, 10));
  const auto next = window.Close(t0 + std::chrono::seconds(3));
  CHECK(next.steps == 1);
  CHECK(next.secs == doctest::Approx(1.0));
  CHECK(next.comm_fraction == doctest::Approx(0.5));
  CHECK(next.wait_fraction == doctest::Approx(0.0));
  CHECK(next.train_secs == doctest::Approx(0.5));
}

TEST_CASE("an empty window reports zeros, not NaN") {
  const Clock::time_point t0{};
  ProgressWindow window(t0);
  const auto s = window.Close(t0 + std::chrono::seconds(1));
  CHECK(s.steps == 0);
  CHECK(s.sec_per_batch == 0.0);
  CHECK(s.train_secs == 0.0);
  CHECK(s.train_cpu_secs == 0.0);
}

TEST_CASE("a window not closed yet counts its steps: the last, partial one is logged") {
  const Clock::time_point t0{};
  ProgressWindow window(t0);
  CHECK(window.steps() == 0);
  window.Add(Step(0, 0, 0.1, 0.1, 10));
  window.Add(Step(0, 0, 0.1, 0.1, 10));
  CHECK(window.steps() == 2);
  CHECK(window.Close(t0 + std::chrono::seconds(1)).sec_per_batch == doctest::Approx(0.5));
  CHECK(window.steps() == 0);
}

TEST_CASE("the run summary: local steps, and means after the first kWarmupSteps") {
  const Clock::time_point t0{};
  RunSummary run(t0);
  // Ten slow warm-up steps of 1 s, then 20 steps of 0.1 s with 100 examples each.
  Clock::time_point t = t0;
  for (int i = 0; i < kWarmupSteps; ++i) run.Add(100, t += std::chrono::seconds(1));
  for (int i = 0; i < 20; ++i) run.Add(100, t += std::chrono::milliseconds(100));
  const RunSummary::Figures f = run.Get();
  CHECK(f.local_steps == 30);
  CHECK(f.warmup_steps == kWarmupSteps);
  CHECK(f.secs == doctest::Approx(2.0));
  CHECK(f.sec_per_batch == doctest::Approx(0.1));
  CHECK(f.examples_per_sec == doctest::Approx(1000.0));
}

TEST_CASE("a run of at most kWarmupSteps steps has no warm-up; none has zeros") {
  const Clock::time_point t0{};
  RunSummary empty(t0);
  const RunSummary::Figures none = empty.Get();
  CHECK(none.local_steps == 0);
  CHECK(none.sec_per_batch == 0.0);
  CHECK(none.examples_per_sec == 0.0);
  RunSummary brief(t0);
  for (int i = 1; i <= 4; ++i) brief.Add(10, t0 + std::chrono::milliseconds(500 * i));
  const RunSummary::Figures f = brief.Get();
  CHECK(f.local_steps == 4);
  CHECK(f.warmup_steps == 0);
  CHECK(f.sec_per_batch == doctest::Approx(0.5));
  CHECK(f.examples_per_sec == doctest::Approx(20.0));
}

TEST_CASE("thread CPU time grows while computing, not while sleeping") {
  const double slept_from = ThreadCpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double slept = ThreadCpuSeconds() - slept_from;
  CHECK(slept >= 0.0);
  CHECK(slept < 0.1);

  const double busy_from = ThreadCpuSeconds();
  volatile double sink = 0;
  while (ThreadCpuSeconds() - busy_from < 0.05) sink = sink + 1.0;
  CHECK(ThreadCpuSeconds() - busy_from >= 0.05);
}

}  // namespace
}  // namespace taas::runtime
