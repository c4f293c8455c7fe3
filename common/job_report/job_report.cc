#include "taas/job_report/job_report.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "taas/base/ascii.h"
#include "taas/base/json_fields.h"

namespace taas::job_report {
namespace {

constexpr std::string_view kGlobalStepKey = "globalStep";
constexpr std::string_view kFinalMetricsKey = "finalMetrics";
constexpr std::string_view kErrorKey = "error";

bool NameCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == '-';
}

}  // namespace

absl::Status CheckMetric(std::string_view name, double value) {
  if (name.empty() || name.size() > kMaxMetricName ||
      !std::all_of(name.begin(), name.end(), NameCharacter)) {
    return absl::InvalidArgumentError(
        "final metric name \"" + std::string(name.substr(0, kMaxMetricName)) + "\": must be 1 to " +
        std::to_string(kMaxMetricName) + " characters of letters, digits, _ . / -");
  }
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError("final metric " + std::string(name) +
                                      ": must be a finite number, got " + std::to_string(value));
  }
  return absl::OkStatus();
}

std::string Format(const JobReport& report) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : report.final_metrics) metrics[name] = value;
  nlohmann::json text = {{std::string(kGlobalStepKey), report.global_step},
                         {std::string(kFinalMetricsKey), std::move(metrics)}};
  if (!report.error.empty())
    text[std::string(kErrorKey)] = std::string(Utf8Prefix(report.error, kMaxError));
  // A message holding bytes that are not UTF-8 (a path) must not throw.
  return text.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<JobReport> Parse(std::string_view text) {
  if (text.size() > kMaxReportBytes) {
    return absl::InvalidArgumentError("job report: " + std::to_string(text.size()) +
                                      " bytes, more than the " + std::to_string(kMaxReportBytes) +
                                      " a report may hold");
  }
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError("job report: not a JSON object");
  }
  JobReport report;
  const nlohmann::json& step = json_fields::MemberOrNull(json, kGlobalStepKey);
  if (!step.is_number_unsigned()) {
    return absl::InvalidArgumentError("job report: globalStep must be an integer >= 0, got " +
                                      std::string(json_fields::TypeName(step)));
  }
  report.global_step =
      static_cast<std::int64_t>(std::min<std::uint64_t>(step.get<std::uint64_t>(), INT64_MAX));
  const nlohmann::json& metrics = json_fields::MemberOrNull(json, kFinalMetricsKey);
  if (!metrics.is_object() || metrics.size() > kMaxMetrics) {
    return absl::InvalidArgumentError("job report: finalMetrics must be an object of at most " +
                                      std::to_string(kMaxMetrics) + " numbers");
  }
  for (const auto& [name, value] : metrics.items()) {
    if (!value.is_number()) {
      return absl::InvalidArgumentError("job report: final metric " + name.substr(0, 64) +
                                        " must be a number, got " +
                                        std::string(json_fields::TypeName(value)));
    }
    TAAS_RETURN_IF_ERROR(CheckMetric(name, value.get<double>()));
    report.final_metrics[name] = value.get<double>();
  }
  const nlohmann::json& error = json_fields::MemberOrNull(json, kErrorKey);
  if (!error.is_null() && !error.is_string()) {
    return absl::InvalidArgumentError("job report: error must be a string, got " +
                                      std::string(json_fields::TypeName(error)));
  }
  if (error.is_string()) report.error = error.get<std::string>();
  return report;
}

std::optional<JobReport> JobResult(const std::optional<JobReport>& chief,
                                   const std::optional<JobReport>& evaluator) {
  if (chief && (!chief->final_metrics.empty() || !chief->error.empty())) return chief;
  const bool evaluator_scored_the_end = evaluator && !evaluator->final_metrics.empty() &&
                                        (!chief || evaluator->global_step >= chief->global_step);
  return evaluator_scored_the_end ? evaluator : chief;
}

}  // namespace taas::job_report
