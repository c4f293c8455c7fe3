// A running job's progress, read from what its chief (and evaluator) report on their metrics
// endpoints, the way the UI server reads them: through each replica's headless service, on the
// port its template names `metrics` (contract/ports.h); training pods get no API access. The
// operator writes it to the TFJob's status.progress (taas/tfjob/progress.h). Everything here is
// pure and unit tested; the scrapes themselves run on the ProgressTracker's own threads
// (progress_tracker.h), never on a reconcile worker.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "taas/job_report/job_report.h"
#include "taas/prometheus/text.h"
#include "taas/tfjob/progress.h"
#include "taas/tfjob/tf_config.h"
#include "taas/tfjob/tfjob.h"

namespace taas::controller {

struct ProgressOptions {
  // A running job's chief is read this often and its progress written at most this often
  // (sooner only once: with the final metrics, or with a status write that happens anyway).
  // Zero turns progress off: no scrape, no status.progress.
  std::chrono::seconds interval{30};
  // Scrapes in flight at once, over every job: a slow or hostile chief holds one of these for at
  // most `timeout`, never a reconcile.
  int parallelism = 4;
  std::chrono::milliseconds timeout{2000};
  // Addresses that replace `{replica}.{namespace}.svc:{port}`, keyed "namespace/replica", for an
  // operator outside the cluster (tests, benchmarks), as taas-ui's --metrics-target.
  std::map<std::string, std::string> targets;
};

// The most the operator reads of one metrics page: a trainer's page is a few KB of gauges.
inline constexpr std::size_t kMaxProgressPageBytes = std::size_t{256} << 10;
// Training replicas of one type read for the job's rate: a read of a job stays short; a larger
// job's rate is the sum of its first ones.
inline constexpr std::int64_t kMaxRateTargets = 64;
// Near its end a job is read more often than `interval`: its chief serves its final metrics
// only for a short while before it exits (ReadAgainIn).
inline constexpr std::chrono::seconds kFinishingScrapeInterval{2};
// The step rate behind the ETA is measured over about this long.
inline constexpr std::chrono::seconds kProgressRateWindow{120};

// What one replica's page says (contract/metric_names.h); a value the page lacks, or one out of
// range (a step outside 0..2^53, a non-finite number), is absent.
struct TrainerReport {
  std::optional<std::int64_t> global_step;
  std::optional<std::int64_t> max_steps;  // > 0
  std::optional<double> examples_per_second;
  std::optional<double> loss;
  std::optional<double> eval_accuracy;
  // taas_final_metric{metric="accuracy"}: at most tfjob::kMaxProgressMetrics, names that
  // tfjob::IsProgressMetricName accepts; the first valid sample of a name wins.
  std::map<std::string, double> final_metrics;
  // The replica waits on a peer beyond its stall threshold (tfjob::ReplicaStall).
  std::optional<tfjob::ProgressStall> stall;

  bool operator==(const TrainerReport&) const = default;
};

TrainerReport ReadTrainerReport(const std::vector<prometheus::PrometheusSample>& samples);

// The job's report from its chief's and its evaluator's: the chief's word on the step, max steps
// and loss (an evaluator's step is the checkpoint it scored, behind the chief's); the accuracy and
// the final metrics from the chief, else the evaluator; the rate is the job's
// (tfjob::JobExamplesRate): the chief's and its other training replicas' (`trainers`, those that
// answered) added; the stall is the longest of theirs (tfjob::JobStall).
TrainerReport MergeReports(const std::optional<TrainerReport>& chief,
                           const std::optional<TrainerReport>& evaluator,
                           const std::vector<TrainerReport>& trainers = {});

// Where a job's progress is read.
struct ScrapeTargets {
  std::string chief;      // "host:port": the Chief/Master, else Worker 0
  std::string evaluator;  // "host:port" of Evaluator 0; empty without one
  // "host:port" of every other training replica (tfjob::TrainsExamples), read for its rate only;
  // at most kMaxRateTargets of a type.
  std::vector<std::string> trainers;

  bool operator==(const ScrapeTargets&) const = default;
};

// Each replica's headless service `{job}-{type}-0.{namespace}.svc[.{domain}]` (the hosts
// TF_CONFIG names) on the port its template names contract::kMetricsPortName, else
// contract::kDefaultMetricsPort; `overrides` ("namespace/replica" -> "host:port") win.
ScrapeTargets ProgressTargets(const tfjob::TFJob& job, const tfjob::ServiceAddressing& addressing,
                              const std::map<std::string, std::string>& overrides);

// The chief's TF_MAX_STEPS as the spec sets it (a literal `value`; valueFrom is unknown here):
// max steps until the trainer reports its own (taas_max_steps).
std::optional<std::int64_t> MaxStepsFromSpec(const tfjob::TFJobSpec& spec);

// One job's progress from its successive reports: the step rate over kProgressRateWindow for the
// ETA, the last values a report lacks kept (a chief between two processes, an evaluator that has
// stopped); a report's stall is shown as it is, without the rate and the ETA (tfjob::ApplyStall).
class ProgressEstimator {
 public:
  using Clock = std::chrono::steady_clock;

  // The progress after a report read at `at` (`now` on the wall clock); `spec_max_steps` stands
  // in for the trainer's max steps until it reports them.
  tfjob::JobProgress Add(const TrainerReport& report, std::optional<std::int64_t> spec_max_steps,
                         Clock::time_point at, tfjob::Time now);
  // Training reached its last step and no final metrics came yet: read the chief often now.
  bool Finishing() const;

 private:
  tfjob::StepRate rate_{kProgressRateWindow};
  tfjob::JobProgress progress_;
};

// When to read a job again after a read that left it at `latest`: every `interval`; about when
// training should end by the ETA, if that is sooner; every kFinishingScrapeInterval once training
// reached its last step and the final metrics have not come yet (`finishing`). Never sooner than
// kFinishingScrapeInterval, never later than `interval`.
std::chrono::seconds ReadAgainIn(const std::optional<tfjob::JobProgress>& latest, bool finishing,
                                 std::chrono::seconds interval);

// Whether `latest` is worth a status write now: it says something new about the job
// (ProgressChanged against `written`), and either the final metrics are new or no write of it
// happened within `interval` (`last_write`, on the steady clock; nullopt: none since the operator
// started).
bool ProgressWriteDue(const std::optional<tfjob::JobProgress>& written,
                      const tfjob::JobProgress& latest,
                      std::optional<std::chrono::steady_clock::time_point> last_write,
                      std::chrono::steady_clock::time_point now, std::chrono::seconds interval);

// The progress a job keeps once it finished, written with the status that says so: a succeeded
// job trained to its max steps (its chief stops there) and has nothing left; a failed one keeps
// what it reached, without an ETA; neither is stalled.
tfjob::JobProgress FinishedProgress(tfjob::JobProgress progress, const tfjob::JobStatus& status);

// `progress` (the newest a job has; empty when none) once its chief left its result in its
// termination message (`report`, job_report::Parse; `at`: when the chief exited): the report's
// global step and final metrics win over the scraped ones, which a trainer that exited right
// after training seldom served long enough to be read. A metric name tfjob::IsProgressMetricName
// refuses is dropped, a step beyond tfjob::kMaxProgressStep is not taken, a report without final
// metrics keeps the scraped ones; no ETA and no stall: training ended.
tfjob::JobProgress WithJobReport(tfjob::JobProgress progress, const job_report::JobReport& report,
                                 tfjob::Time at);

}  // namespace taas::controller
