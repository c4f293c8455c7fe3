#include "taas/tfjob/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "taas/base/ascii.h"
#include "taas/base/json_fields.h"
#include "taas/contract/metric_names.h"
#include "taas/tfjob/rfc3339.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;
namespace jf = taas::json_fields;

bool IsStep(std::int64_t step) { return step >= 0 && step <= kMaxProgressStep; }

std::optional<std::int64_t> StepField(const json& object, std::string_view key) {
  const std::optional<std::int64_t> step = jf::Int(object, key);
  return step && IsStep(*step) ? step : std::nullopt;
}

std::optional<double> FiniteField(const json& object, std::string_view key) {
  const json* member = jf::Find(object, key);
  if (member == nullptr || !member->is_number()) return std::nullopt;
  const double value = member->get<double>();
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

// A map of metric names to finite numbers, at most kMaxProgressMetrics of them (in name order).
std::map<std::string, double> MetricsField(const json& object, std::string_view key) {
  std::map<std::string, double> metrics;
  const json* map = jf::Object(object, key);
  if (map == nullptr) return metrics;
  for (const auto& [name, value] : map->items()) {
    if (metrics.size() == kMaxProgressMetrics) break;
    if (!IsProgressMetricName(name) || !value.is_number()) continue;
    const double number = value.get<double>();
    if (std::isfinite(number)) metrics.emplace(name, number);
  }
  return metrics;
}

}  // namespace

std::optional<int> ProgressPercent(const JobProgress& progress) {
  if (!progress.global_step || !progress.max_steps || *progress.max_steps <= 0 ||
      !IsStep(*progress.global_step) || !IsStep(*progress.max_steps)) {
    return std::nullopt;
  }
  // Both are at most 2^53: the product cannot overflow.
  const std::int64_t percent = *progress.global_step * 100 / *progress.max_steps;
  return static_cast<int>(std::clamp<std::int64_t>(percent, 0, 100));
}

std::optional<double> ProgressAccuracy(const JobProgress& progress) {
  const std::string accuracy(kAccuracyMetricName);
  if (auto it = progress.final_metrics.find(accuracy); it != progress.final_metrics.end())
    return it->second;
  if (auto it = progress.metrics.find(accuracy); it != progress.metrics.end()) return it->second;
  return std::nullopt;
}

std::string FormatEta(std::chrono::seconds eta) {
  const long long total = std::max<long long>(0, eta.count());
  const long long days = total / 86400, hours = total % 86400 / 3600;
  const long long minutes = total % 3600 / 60, seconds = total % 60;
  char text[48];
  if (days > 0) {
    std::snprintf(text, sizeof(text), "%lldd%02lldh", days, hours);
  } else if (hours > 0) {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", hours, minutes);
  } else if (minutes > 0) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", minutes, seconds);
  } else {
    std::snprintf(text, sizeof(text), "%llds", seconds);
  }
  return text;
}

bool ProgressChanged(const std::optional<JobProgress>& before,
                     const std::optional<JobProgress>& after) {
  if (!before || !after) return before.has_value() != after.has_value();
  JobProgress a = *before;
  a.update_time = after->update_time;
  return a != *after;
}

bool IsProgressMetricName(std::string_view name) {
  if (name.empty() || name.size() > kMaxProgressMetricNameBytes) return false;
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!letter(name.front())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

json ProgressToJson(const JobProgress& progress) {
  json out = json::object();
  if (progress.global_step) out["globalStep"] = *progress.global_step;
  if (progress.max_steps) out["maxSteps"] = *progress.max_steps;
  if (auto percent = ProgressPercent(progress)) out["percent"] = *percent;
  if (progress.examples_per_second) out["examplesPerSecond"] = *progress.examples_per_second;
  if (progress.eta_seconds) {
    out["etaSeconds"] = *progress.eta_seconds;
    out["eta"] = FormatEta(std::chrono::seconds(*progress.eta_seconds));
  }
  if (!progress.metrics.empty()) out["metrics"] = progress.metrics;
  if (!progress.final_metrics.empty()) out["finalMetrics"] = progress.final_metrics;
  if (!progress.final_error.empty()) out["finalError"] = progress.final_error;
  if (progress.stall) {
    out["stall"] = {{"seconds", progress.stall->seconds},
                    {"waitingOn", progress.stall->waiting_on},
                    {"message", DescribeStall(*progress.stall)}};
  }
  if (auto accuracy = ProgressAccuracy(progress)) out["accuracy"] = *accuracy;
  if (progress.update_time) out["lastUpdateTime"] = FormatRfc3339(*progress.update_time);
  return out;
}

std::optional<JobProgress> ProgressFromJson(const json& value) {
  if (!value.is_object()) return std::nullopt;
  JobProgress progress;
  progress.global_step = StepField(value, "globalStep");
  progress.max_steps = StepField(value, "maxSteps");
  progress.examples_per_second = FiniteField(value, "examplesPerSecond");
  progress.eta_seconds = StepField(value, "etaSeconds");
  progress.metrics = MetricsField(value, "metrics");
  progress.final_metrics = MetricsField(value, "finalMetrics");
  progress.final_error = Utf8Prefix(jf::StringOr(value, "finalError", ""), kMaxProgressErrorBytes);
  if (const json* stall = jf::Object(value, "stall")) {
    const std::optional<std::int64_t> seconds = StepField(*stall, "seconds");
    const std::string peer(
        Utf8Prefix(jf::StringOr(*stall, "waitingOn", ""), kMaxProgressPeerBytes));
    if (seconds && !peer.empty()) progress.stall = ProgressStall{*seconds, peer};
  }
  if (auto time = jf::String(value, "lastUpdateTime")) {
    if (auto parsed = ParseRfc3339(*time); parsed.ok()) progress.update_time = *parsed;
  }
  return progress;
}

void StepRate::Add(Clock::time_point at, std::int64_t step) {
  if (!samples_.empty() && step < samples_.back().second) samples_.clear();
  samples_.emplace_back(at, step);
  // Keep one sample older than the window, so the rate spans at least the window.
  while (samples_.size() > 2 && at - samples_[1].first >= window_) samples_.pop_front();
}

std::optional<double> StepRate::PerSecond() const {
  if (samples_.size() < 2) return std::nullopt;
  const auto& [first_at, first_step] = samples_.front();
  const auto& [last_at, last_step] = samples_.back();
  const double seconds = std::chrono::duration<double>(last_at - first_at).count();
  if (last_step <= first_step || seconds <= 0) return std::nullopt;
  return static_cast<double>(last_step - first_step) / seconds;
}

std::optional<std::int64_t> EtaSeconds(std::int64_t step, std::int64_t max_steps,
                                       std::optional<double> steps_per_second) {
  if (!steps_per_second || !(*steps_per_second > 0) || !IsStep(step) || !IsStep(max_steps) ||
      step >= max_steps) {
    return std::nullopt;
  }
  const double left = std::ceil(static_cast<double>(max_steps - step) / *steps_per_second);
  if (!(left <= static_cast<double>(kMaxProgressStep))) return kMaxProgressStep;
  return static_cast<std::int64_t>(left);
}

std::optional<ProgressStall> ReplicaStall(
    const std::vector<prometheus::PrometheusSample>& samples) {
  JobStall longest;
  for (const prometheus::PrometheusSample& sample : samples) {
    if (sample.name != contract::kStallSecondsMetric || !std::isfinite(sample.value) ||
        sample.value < 0 || sample.value > static_cast<double>(kMaxProgressStep)) {
      continue;
    }
    for (const auto& [label, value] : sample.labels) {
      if (label != contract::kStallPeerLabel || value.empty()) continue;
      longest.Add(ProgressStall{static_cast<std::int64_t>(sample.value),
                                std::string(Utf8Prefix(value, kMaxProgressPeerBytes))});
    }
  }
  return longest.Longest();
}

void JobStall::Add(const std::optional<ProgressStall>& stall) {
  if (stall && (!longest_ || stall->seconds > longest_->seconds)) longest_ = stall;
}

std::string DescribeStall(const ProgressStall& stall) {
  return "stalled " + FormatEta(std::chrono::seconds(stall.seconds)) + ", waiting on " +
         stall.waiting_on;
}

void ApplyStall(JobProgress& progress, const std::optional<ProgressStall>& stall) {
  progress.stall = stall;
  if (!stall) return;
  progress.examples_per_second.reset();
  progress.eta_seconds.reset();
}

bool TrainsExamples(ReplicaType type) {
  return type == ReplicaType::kChief || type == ReplicaType::kMaster ||
         type == ReplicaType::kWorker;
}

void JobExamplesRate::Add(std::optional<double> rate) {
  if (!rate || !std::isfinite(*rate) || *rate < 0) return;
  sum_ = sum_.value_or(0) + *rate;
}

std::optional<double> JobExamplesRate::PerSecond() const { return sum_; }

}  // namespace taas::tfjob
