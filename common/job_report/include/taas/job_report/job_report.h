// A training job's result as its chief leaves it in its container's termination message: the
// runtime writes it when training ended (the file TAAS_TERMINATION_MESSAGE_PATH names, else
// Kubernetes' /dev/termination-log), and the operator (from the pod's status, where the kubelet
// copies the file) and `taas run` (from the file) read it, for the TFJob's status, the console's
// last line and the web UI. Kubernetes keeps at most 4096 bytes of it; this format stays well
// inside that: {"globalStep":6000,"finalMetrics":{"accuracy":0.9087,"loss":0.2571}}. A chief
// whose evaluation failed (DistModel::evaluate returned or threw an error) leaves the error in
// its place, and exits with the model's failure: {"globalStep":6000,"finalMetrics":{},
// "error":"evaluate() failed: no test set in /data"}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas::job_report {

struct JobReport {
  std::int64_t global_step = 0;
  std::map<std::string, double> final_metrics;  // "accuracy" -> 0.9087
  // Why the replica has no result (its evaluation failed); empty when it has one. What a report
  // may hold of it is bounded by kMaxError.
  std::string error = {};
  bool operator==(const JobReport&) const = default;
};

// What a report holds at most: metrics, a name's length, the text's length.
inline constexpr std::size_t kMaxMetrics = 16;
inline constexpr std::size_t kMaxMetricName = 64;
inline constexpr std::size_t kMaxReportBytes = 2048;
// An error's bytes at most, enough for a status message that names a path and the fix; longer
// ones are cut by Format. With JSON's escapes and no metrics it stays inside kMaxReportBytes.
inline constexpr std::size_t kMaxError = 320;

// OK when `name` (1 to kMaxMetricName characters of A-Z a-z 0-9 _ . / -) may name a final metric
// holding `value` (finite); else InvalidArgument naming both and the rule.
absl::Status CheckMetric(std::string_view name, double value);

// The report's JSON text; its metrics must pass CheckMetric and number at most kMaxMetrics. An
// error is cut to kMaxError bytes (bytes that are not UTF-8 become U+FFFD), and "error" is
// written only when there is one.
std::string Format(const JobReport& report);

// Reads a report from text a container wrote (hostile: any size, any JSON, any type in any
// field). InvalidArgument naming what is wrong: text over kMaxReportBytes, not a JSON object,
// globalStep not a non-negative integer, finalMetrics not an object of at most kMaxMetrics
// numbers whose names pass CheckMetric, an error that is not a string. Unknown members are
// ignored (a newer writer).
absl::StatusOr<JobReport> Parse(std::string_view text);

// The job's result from its chief's report and its evaluator's (each absent when that replica
// left none or the job has none), as TensorFlow's train_and_evaluate has it: the chief's when it
// names final metrics (its after_train's, or its own evaluation at the end) or an error (its
// evaluation failed: that is the job's result, whatever the evaluator scored); else the
// evaluator's when it scored a checkpoint at least as far as the chief trained (the evaluator
// reports only once it scored the final one); else the chief's as it is, or nothing.
std::optional<JobReport> JobResult(const std::optional<JobReport>& chief,
                                   const std::optional<JobReport>& evaluator);

}  // namespace taas::job_report
