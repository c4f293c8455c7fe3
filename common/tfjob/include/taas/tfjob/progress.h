// A job's training progress as its TFJob's status says it: `status.progress`, a taas extension
// beside Kubeflow's status fields (docs/operator.md, "Progress"). The operator fills it from what
// the job's chief (and evaluator) report on their metrics endpoints; `kubectl get tfjobs` shows
// it (PROGRESS, ETA, ACCURACY) and the UI reads it. Pure: no I/O, `now` is passed in.
//
//   status:
//     progress:
//       globalStep: 2520          # the chief's global step
//       maxSteps: 6000            # where training ends (the trainer's taas_max_steps, else the
//                                 #   chief's TF_MAX_STEPS in the spec)
//       percent: 42               # derived: globalStep / maxSteps, rounded down, 0-100
//       examplesPerSecond: 3310.5 # the job's: every training replica's rate (JobExamplesRate)
//       etaSeconds: 65            # time left at the step rate of the last few minutes
//       eta: 1m05s                # derived: etaSeconds as a person reads it (the ETA column)
//       metrics: {loss: 0.412, accuracy: 0.884}   # the latest: the chief's loss, the last
//                                                 #   evaluation's accuracy
//       stall:                    # while a training replica waits on a peer too long
//         seconds: 12             #   the longest such wait so far
//         waitingOn: ps-0         #   whom it waits for
//         message: "stalled 12s, waiting on ps-0"   # derived: what the views show instead of
//                                                   #   the rate (DescribeStall)
//       finalMetrics: {accuracy: 0.9087}          # the job's result, once training ended
//       accuracy: 0.9087          # derived: final accuracy, else the latest (the ACCURACY column)
//       lastUpdateTime: "2026-11-27T10:00:00Z"    # when these were read from the trainer
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "taas/prometheus/text.h"
#include "taas/tfjob/tfjob.h"  // JobProgress

namespace taas::tfjob {

// The names `metrics` and `finalMetrics` use for what the columns and the UI show: the names a
// model's evaluate() returns them under (taas/runtime/dist_model.h).
inline constexpr std::string_view kLossMetricName = "loss";
inline constexpr std::string_view kAccuracyMetricName = "accuracy";

// What a progress may hold: its metrics come from a trainer's page, which is outside input.
inline constexpr std::size_t kMaxProgressMetrics = 16;          // per map; the rest is dropped
inline constexpr std::size_t kMaxProgressMetricNameBytes = 63;  // [A-Za-z0-9_.-], a letter first
inline constexpr std::int64_t kMaxProgressStep = std::int64_t{1} << 53;  // exact in a double
// finalError's bytes at most (the CRD's maxLength): a job report's error fits (job_report.h).
inline constexpr std::size_t kMaxProgressErrorBytes = 512;
// stall.waitingOn's bytes at most (the CRD's maxLength); a longer peer label is cut.
inline constexpr std::size_t kMaxProgressPeerBytes = 128;

// globalStep / maxSteps in percent, rounded down and held to 0-100; nullopt without both (or
// with maxSteps <= 0).
std::optional<int> ProgressPercent(const JobProgress& progress);
// The ACCURACY column's value: the final accuracy once known, else the latest.
std::optional<double> ProgressAccuracy(const JobProgress& progress);
// "42s", "3m05s", "1h02m", "3d04h": what a person reads at a glance (negative counts as 0).
std::string FormatEta(std::chrono::seconds eta);

// Whether two progresses differ in what they say of the job (lastUpdateTime is not compared: a
// read that found the same values is not worth a write).
bool ProgressChanged(const std::optional<JobProgress>& before,
                     const std::optional<JobProgress>& after);

// True for a metric name a progress may hold (see kMaxProgressMetricNameBytes).
bool IsProgressMetricName(std::string_view name);

// status.progress: the fields above plus the derived percent, eta and accuracy.
nlohmann::json ProgressToJson(const JobProgress& progress);
// Reads status.progress as the operator wrote it; any other JSON type in any field, a value out
// of range, a metric name IsProgressMetricName refuses or a non-finite number drops that field
// alone (a finalError longer than kMaxProgressErrorBytes is cut at a character's start) (whoever
// may write the status may write anything there, and the operator rewrites it). The derived fields
// are not read. nullopt when `value` is not an object.
std::optional<JobProgress> ProgressFromJson(const nlohmann::json& value);

// The global step's rate over about the last `window`: the samples inside it and one before, so
// the rate spans at least the window once there are enough. A step lower than the last (a
// restore from an older checkpoint) starts over.
class StepRate {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StepRate(std::chrono::seconds window) : window_(window) {}

  void Add(Clock::time_point at, std::int64_t step);
  // Steps per second; nullopt until two samples with a rising step.
  std::optional<double> PerSecond() const;

 private:
  std::chrono::seconds window_;
  std::deque<std::pair<Clock::time_point, std::int64_t>> samples_;  // oldest first
};

// Whether a replica of `type` trains, so that its rate (contract::kExamplesPerSecondMetric: the
// examples it trained per second) adds to the job's: the Chief or Master and the workers; a
// parameter server or an evaluator trains none.
bool TrainsExamples(ReplicaType type);

// A job's examples per second: the sum of its training replicas' (TrainsExamples) own rates. The
// one definition of examples/s wherever a job's rate is shown: `taas run`'s progress line, the UI
// (jobs list, job page), status.progress.examplesPerSecond and so `kubectl get`. One replica's
// rate is that replica's, and is labelled so where it is shown.
class JobExamplesRate {
 public:
  // A training replica's rate as its page says it: an unknown rate, or one that is negative or
  // not finite (a hostile page), adds nothing.
  void Add(std::optional<double> rate);
  // The sum; nullopt until a training replica gave a rate.
  std::optional<double> PerSecond() const;

 private:
  std::optional<double> sum_;
};

// One replica's stall as its metrics page says it (contract::kStallSecondsMetric): the longest
// sample with a finite, non-negative value (seconds rounded down) and a non-empty peer label (cut
// to kMaxProgressPeerBytes at a character's start); nullopt when the page has none: no stall.
std::optional<ProgressStall> ReplicaStall(const std::vector<prometheus::PrometheusSample>& samples);

// A job's stall: the longest of its training replicas' (the one definition for `taas run`'s
// progress line, the UI and status.progress).
class JobStall {
 public:
  void Add(const std::optional<ProgressStall>& stall);
  const std::optional<ProgressStall>& Longest() const { return longest_; }

 private:
  std::optional<ProgressStall> longest_;
};

// "stalled 12s, waiting on ps-0": what every view of the job shows instead of the rate.
std::string DescribeStall(const ProgressStall& stall);

// `progress` with `stall`: a stalled job says so, and its last rate and an ETA at that rate are
// dropped (they describe the job before the stall, not now); without a stall only the field is
// cleared (the next read brings the rate back).
void ApplyStall(JobProgress& progress, const std::optional<ProgressStall>& stall);

// Seconds until `step` reaches `max_steps` at `steps_per_second`, rounded up; nullopt without a
// positive rate or once the step reached max_steps; at most kMaxProgressStep.
std::optional<std::int64_t> EtaSeconds(std::int64_t step, std::int64_t max_steps,
                                       std::optional<double> steps_per_second);

}  // namespace taas::tfjob
