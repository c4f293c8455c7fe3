#include "taas/controller/progress.h"

#include <algorithm>
#include <cmath>

#include "taas/base/ascii.h"
#include "taas/base/json_fields.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/contract/ports.h"
#include "taas/tfjob/defaults.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/status.h"

namespace taas::controller {
namespace {

namespace tf = taas::tfjob;
namespace jf = taas::json_fields;

std::optional<double> Finite(double value) {
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

// A gauge holding a step: a whole number of 0..2^53 (a fraction is cut, as the trainer never
// exports one).
std::optional<std::int64_t> Step(double value) {
  if (!std::isfinite(value) || value < 0 || value > static_cast<double>(tf::kMaxProgressStep))
    return std::nullopt;
  return static_cast<std::int64_t>(value);
}

std::string LabelValue(const prometheus::PrometheusSample& sample, std::string_view label) {
  for (const auto& [name, value] : sample.labels) {
    if (name == label) return value;
  }
  return "";
}

// The first valid value of each gauge wins: a page that repeats one cannot override itself.
template <typename T>
void SetOnce(std::optional<T>& field, std::optional<T> value) {
  if (!field) field = value;
}

void ReadFinalMetric(const prometheus::PrometheusSample& sample, TrainerReport& report) {
  const std::string name = LabelValue(sample, contract::kFinalMetricLabel);
  const std::optional<double> value = Finite(sample.value);
  if (!value || !tf::IsProgressMetricName(name) ||
      report.final_metrics.size() == tf::kMaxProgressMetrics) {
    return;
  }
  report.final_metrics.emplace(name, *value);
}

// The replica of the job whose pod is the master role (Chief/Master, else Worker 0).
std::optional<tf::ReplicaType> ChiefType(const tf::TFJobSpec& spec) {
  for (const auto& [type, replica] : spec.replica_specs) {
    if (replica.replicas > 0 && tf::IsMasterRole(spec, type, 0)) return type;
  }
  return std::nullopt;
}

std::string Address(const tf::TFJob& job, tf::ReplicaType type, int index,
                    const tf::ServiceAddressing& addressing,
                    const std::map<std::string, std::string>& overrides) {
  const std::string replica = tf::ReplicaName(job.metadata.name, type, index);
  if (auto it = overrides.find(job.metadata.namespace_name + "/" + replica);
      it != overrides.end()) {
    return it->second;
  }
  std::string host = replica + "." + job.metadata.namespace_name + ".svc";
  if (!addressing.cluster_domain.empty()) host += "." + addressing.cluster_domain;
  const int port = tf::DeclaredContainerPort(job.spec.replica_specs.at(type).pod_template,
                                             contract::kMetricsPortName)
                       .value_or(contract::kDefaultMetricsPort);
  return host + ":" + std::to_string(port);
}

}  // namespace

TrainerReport ReadTrainerReport(const std::vector<prometheus::PrometheusSample>& samples) {
  TrainerReport report;
  for (const prometheus::PrometheusSample& sample : samples) {
    if (sample.name == contract::kGlobalStepMetric) {
      SetOnce(report.global_step, Step(sample.value));
    } else if (sample.name == contract::kMaxStepsMetric) {
      const std::optional<std::int64_t> steps = Step(sample.value);
      if (steps && *steps > 0) SetOnce(report.max_steps, steps);
    } else if (sample.name == contract::kExamplesPerSecondMetric) {
      if (sample.value >= 0) SetOnce(report.examples_per_second, Finite(sample.value));
    } else if (sample.name == contract::kLossMetric) {
      SetOnce(report.loss, Finite(sample.value));
    } else if (sample.name == contract::kEvalAccuracyMetric) {
      SetOnce(report.eval_accuracy, Finite(sample.value));
    } else if (sample.name == contract::kFinalMetric) {
      ReadFinalMetric(sample, report);
    }
  }
  report.stall = tf::ReplicaStall(samples);
  return report;
}

TrainerReport MergeReports(const std::optional<TrainerReport>& chief,
                           const std::optional<TrainerReport>& evaluator,
                           const std::vector<TrainerReport>& trainers) {
  TrainerReport merged = chief.value_or(TrainerReport{});
  tf::JobExamplesRate rate;
  rate.Add(merged.examples_per_second);
  for (const TrainerReport& trainer : trainers) rate.Add(trainer.examples_per_second);
  merged.examples_per_second = rate.PerSecond();
  tf::JobStall stall;
  stall.Add(merged.stall);
  for (const TrainerReport& trainer : trainers) stall.Add(trainer.stall);
  merged.stall = stall.Longest();
  if (!evaluator) return merged;
  SetOnce(merged.eval_accuracy, evaluator->eval_accuracy);
  if (merged.final_metrics.empty()) merged.final_metrics = evaluator->final_metrics;
  return merged;
}

ScrapeTargets ProgressTargets(const tf::TFJob& job, const tf::ServiceAddressing& addressing,
                              const std::map<std::string, std::string>& overrides) {
  ScrapeTargets targets;
  if (const auto chief = ChiefType(job.spec))
    targets.chief = Address(job, *chief, 0, addressing, overrides);
  if (const auto it = job.spec.replica_specs.find(tf::ReplicaType::kEvaluator);
      it != job.spec.replica_specs.end() && it->second.replicas > 0) {
    targets.evaluator = Address(job, tf::ReplicaType::kEvaluator, 0, addressing, overrides);
  }
  for (const auto& [type, replica] : job.spec.replica_specs) {
    if (!tf::TrainsExamples(type)) continue;
    const std::int64_t count = std::min<std::int64_t>(replica.replicas, kMaxRateTargets);
    for (int index = 0; index < count; ++index) {
      if (!tf::IsMasterRole(job.spec, type, index)) {
        targets.trainers.push_back(Address(job, type, index, addressing, overrides));
      }
    }
  }
  return targets;
}

std::optional<std::int64_t> MaxStepsFromSpec(const tf::TFJobSpec& spec) {
  const auto chief = ChiefType(spec);
  if (!chief) return std::nullopt;
  const nlohmann::json* container =
      tf::FindDefaultContainer(spec.replica_specs.at(*chief).pod_template);
  const nlohmann::json* env = container ? jf::Array(*container, "env") : nullptr;
  if (env == nullptr) return std::nullopt;
  for (const nlohmann::json& var : *env) {
    if (jf::StringOr(var, "name") != contract::kMaxStepsEnv) continue;
    const std::optional<std::string> text = jf::String(var, "value");
    if (!text || text->empty() || text->size() > 16) return std::nullopt;
    std::int64_t steps = 0;
    for (char c : *text) {
      if (c < '0' || c > '9') return std::nullopt;
      steps = steps * 10 + (c - '0');
    }
    if (steps <= 0 || steps > tf::kMaxProgressStep) return std::nullopt;
    return steps;
  }
  return std::nullopt;
}

tf::JobProgress ProgressEstimator::Add(const TrainerReport& report,
                                       std::optional<std::int64_t> spec_max_steps,
                                       Clock::time_point at, tf::Time now) {
  tf::JobProgress& p = progress_;
  p.update_time = now;
  if (report.global_step) {
    p.global_step = report.global_step;
    rate_.Add(at, *report.global_step);
  }
  if (report.max_steps) {
    p.max_steps = report.max_steps;
  } else if (!p.max_steps) {
    p.max_steps = spec_max_steps;
  }
  if (report.examples_per_second) p.examples_per_second = report.examples_per_second;
  if (report.loss) p.metrics[std::string(tf::kLossMetricName)] = *report.loss;
  if (report.eval_accuracy) p.metrics[std::string(tf::kAccuracyMetricName)] = *report.eval_accuracy;
  if (!report.final_metrics.empty()) p.final_metrics = report.final_metrics;
  p.eta_seconds.reset();
  if (p.global_step && p.max_steps)
    p.eta_seconds = tf::EtaSeconds(*p.global_step, *p.max_steps, rate_.PerSecond());
  tf::ApplyStall(p, report.stall);
  return p;
}

bool ProgressEstimator::Finishing() const {
  return progress_.global_step && progress_.max_steps &&
         *progress_.global_step >= *progress_.max_steps && progress_.final_metrics.empty();
}

std::chrono::seconds ReadAgainIn(const std::optional<tf::JobProgress>& latest, bool finishing,
                                 std::chrono::seconds interval) {
  const std::chrono::seconds soonest = std::min(kFinishingScrapeInterval, interval);
  if (finishing) return soonest;
  if (latest && latest->eta_seconds && *latest->eta_seconds < interval.count())
    return std::max(soonest, std::chrono::seconds(*latest->eta_seconds));
  return interval;
}

bool ProgressWriteDue(const std::optional<tf::JobProgress>& written, const tf::JobProgress& latest,
                      std::optional<std::chrono::steady_clock::time_point> last_write,
                      std::chrono::steady_clock::time_point now, std::chrono::seconds interval) {
  if (!tf::ProgressChanged(written, latest)) return false;
  const bool new_final =
      !latest.final_metrics.empty() && (!written || written->final_metrics != latest.final_metrics);
  return new_final || !last_write || now - *last_write >= interval;
}

tf::JobProgress FinishedProgress(tf::JobProgress progress, const tf::JobStatus& status) {
  progress.eta_seconds.reset();
  progress.stall.reset();
  if (tf::IsSucceeded(status) && progress.max_steps) progress.global_step = progress.max_steps;
  return progress;
}

tf::JobProgress WithJobReport(tf::JobProgress progress, const job_report::JobReport& report,
                              tf::Time at) {
  if (report.global_step <= tf::kMaxProgressStep) progress.global_step = report.global_step;
  std::map<std::string, double> final_metrics;
  for (const auto& [name, value] : report.final_metrics) {
    if (tf::IsProgressMetricName(name) && final_metrics.size() < tf::kMaxProgressMetrics)
      final_metrics.emplace(name, value);
  }
  if (!final_metrics.empty()) progress.final_metrics = std::move(final_metrics);
  // A chief whose evaluation failed: the status says why the job has no result.
  progress.final_error = Utf8Prefix(report.error, tf::kMaxProgressErrorBytes);
  progress.eta_seconds.reset();
  progress.stall.reset();
  progress.update_time = at;
  return progress;
}

}  // namespace taas::controller
