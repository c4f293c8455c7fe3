// The launcher's one progress view of a local job: what the chief and the evaluator report on
// their metrics endpoints, as a line per interval ("step 2520/6000 (42%) loss 0.412 ...") or, on a
// terminal, as a bar redrawn in place. Pure: the caller scrapes, keeps time and writes.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "taas/tfjob/tfjob.h"

namespace taas::launcher {

// What is known of the job at one moment; a value the replicas have not reported yet is empty.
struct ProgressSample {
  std::chrono::steady_clock::time_point at;
  std::optional<std::int64_t> global_step;  // the chief's (or worker 0's)
  std::optional<double> loss;
  std::optional<double> examples_per_sec;
  std::optional<double> eval_accuracy;  // the evaluator's latest score
  // A training replica waits on a peer too long (tfjob::JobStall): the line says so instead of
  // the rate and the time left. Never kept from an earlier sample: a stall lasts until a read
  // finds none.
  std::optional<tfjob::ProgressStall> stall;
  int replicas_running = 0;
  int replicas_total = 0;
};

// "42s", "3m05s", "1h02m": what a person reads at a glance.
std::string FormatDuration(std::chrono::seconds duration);

class ProgressView {
 public:
  // The step rate behind the estimate of the time left is measured over about this long, so it
  // follows the job's current pace (an evaluator starting, a replica restarting) within a minute.
  static constexpr std::chrono::seconds kRateWindow{60};

  // `max_steps`: the global step at which training ends (TF_MAX_STEPS), when the job says.
  explicit ProgressView(std::optional<std::int64_t> max_steps) : max_steps_(max_steps) {}

  // Takes in the newest sample; samples arrive in time order. A value the sample lacks keeps the
  // last one reported (a replica between two processes, an evaluator that has stopped).
  void Add(const ProgressSample& sample);

  // The time until the global step reaches max_steps at the step rate of the last kRateWindow;
  // empty without max_steps, before the step has moved, and once it reached max_steps.
  std::optional<std::chrono::seconds> TimeLeft() const;

  // The newest sample as one line, what matters most first (a bar cuts the end off): "step
  // 2520/6000 (42%)  about 1m05s left  loss 0.4120  3310 examples/s  eval accuracy 0.8840  4/4
  // replicas running"; while stalled "step 2520/6000 (42%)  stalled 12s, waiting on ps-0  loss
  // ..." (tfjob::DescribeStall) in place of the time left and the rate.
  std::string Line() const;

  // The same, behind a bar "[#####-----] ", cut to `columns` characters (a terminal's width).
  std::string Bar(int columns) const;

 private:
  std::optional<double> Fraction() const;

  std::optional<std::int64_t> max_steps_;
  std::optional<ProgressSample> latest_;
  // (time, global step) of the samples in the rate window, oldest first.
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::int64_t>> steps_;
};

}  // namespace taas::launcher
