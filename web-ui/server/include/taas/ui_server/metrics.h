// Training progress for the job-detail charts: the server scrapes each running job's chief (or
// worker 0) and evaluator Prometheus endpoints and keeps a bounded history per job. And the
// devices each replica reported (contract::kReplicaDeviceInfoMetric), for the job page's replica
// table: read once per replica run, when the job page shows it Running (DeviceBook).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/contract/ports.h"
#include "taas/prometheus/text.h"
#include "taas/tfjob/tfjob.h"
#include "taas/ui_server/job_source.h"
#include "taas/ui_server/rows.h"
#include "taas/ui_server/schema.h"

namespace taas::ui_server {

// The page parser is common/prometheus (one copy for every scraper); its names are the UI's too.
using prometheus::kMaxPrometheusLabelBytes;
using prometheus::kMaxPrometheusLabels;
using prometheus::kMaxPrometheusNameBytes;
using prometheus::kMaxPrometheusSamples;
using prometheus::ParsePrometheusSamples;
using prometheus::ParsePrometheusText;
using prometheus::PrometheusSample;

// The devices a replica reported: per kReplicaDeviceInfoMetric sample of value 1 with a non-empty
// device label, "DEVICE NAME" ("cuda:0 NVIDIA H100 80GB HBM3") or "DEVICE" ("cpu"), in page order,
// at most kMaxReportedDevices. Empty when the replica exposes no such metric.
inline constexpr std::size_t kMaxReportedDevices = 64;
std::vector<std::string> ReportedDevices(const std::vector<PrometheusSample>& samples);

// A replica whose devices the job page wants: the scraper reads its metrics endpoint once.
struct DeviceRequest {
  std::string namespace_name;
  std::string replica;  // the pod / process name, "mnist-worker-1"
  std::string start;    // the replica run's startTime: a restarted replica asks anew
  nlohmann::json pod_template = nullptr;  // its replica type's, for the metrics port
};

// The devices each replica run reported, keyed "namespace/replica" plus the run's startTime, for at
// most `max_replicas` replicas (the oldest answer dropped), and the replicas waiting to be read, at
// most `max_wanted` (more wait for a later view). Thread-safe.
class DeviceBook {
 public:
  explicit DeviceBook(std::size_t max_replicas = 2000, std::size_t max_wanted = 256);

  // What the replica's run that started at `start` reported; nullopt while unknown.
  std::optional<std::vector<std::string>> Devices(const std::string& key,
                                                  const std::string& start) const;
  void Put(const std::string& key, const std::string& start, std::vector<std::string> devices);
  // Asks for the replica's devices, unless it is known, already asked for, or the queue is full.
  void Want(DeviceRequest request);
  // Up to `max` requests, oldest first, removed from the queue.
  std::vector<DeviceRequest> TakeWanted(std::size_t max);

  // Sets the devices of each replica row (JobRecord's rows) of `job` that reported them, and
  // asks for those of the Running replicas not known yet.
  void Annotate(const tfjob::TFJob& job, std::vector<ReplicaRow>* replicas);

 private:
  struct Entry {
    std::string start;
    std::vector<std::string> devices;
  };
  const std::size_t max_replicas_;
  const std::size_t max_wanted_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> known_;   // guarded by mu_
  std::deque<std::string> known_order_;  // guarded by mu_; front: oldest answer
  std::deque<DeviceRequest> wanted_;     // guarded by mu_
};

// One scrape of a job: time in Unix milliseconds; a metric the replicas did not expose is absent.
struct MetricsPoint {
  std::int64_t time_ms = 0;
  std::optional<double> global_step;
  std::optional<double> loss;
  std::optional<double> examples_per_second;
  std::optional<double> learning_rate;
  std::optional<double> eval_accuracy;
  std::optional<double> max_steps;  // where training ends (the chief's taas_max_steps)
  // The longest stall of the training replicas (tfjob::JobStall): for Progress, not charted.
  std::optional<tfjob::ProgressStall> stall;
};

// A job's history as the API answers it; `latest` is the last point.
struct MetricsAnswer {
  std::vector<MetricsPoint> points;
  std::optional<MetricsPoint> latest;
};

}  // namespace taas::ui_server

namespace taas::ui_server::schema {
TAAS_SCHEMA_ROW(MetricsPoint, Field("time", &MetricsPoint::time_ms),
                Field("step", &MetricsPoint::global_step), Field("loss", &MetricsPoint::loss),
                Field("examplesPerSecond", &MetricsPoint::examples_per_second),
                Field("learningRate", &MetricsPoint::learning_rate),
                Field("evalAccuracy", &MetricsPoint::eval_accuracy),
                Field("maxSteps", &MetricsPoint::max_steps));
TAAS_SCHEMA_ROW(MetricsAnswer, Field("points", &MetricsAnswer::points),
                Field("latest", &MetricsAnswer::latest));
}  // namespace taas::ui_server::schema

namespace taas::ui_server {

// Bounded history per job ("namespace/name"): at most `points_per_job` points (oldest dropped)
// for at most `max_jobs` jobs (the least recently updated dropped). Thread-safe.
class MetricsStore {
 public:
  explicit MetricsStore(std::size_t points_per_job = 2000, std::size_t max_jobs = 100);

  void Add(const std::string& job_key, const MetricsPoint& point);
  std::vector<MetricsPoint> History(const std::string& job_key) const;
  MetricsAnswer HistoryAnswer(const std::string& job_key) const;
  // The job's progress as scraped: the latest point's figures, and the time left at the step
  // rate of its last kProgressRateWindow of points; nullopt without points. For what a TFJob's
  // status.progress lacks (MergeProgress, views.h).
  std::optional<tfjob::JobProgress> Progress(const std::string& job_key) const;
  // As the operator's estimate and the launcher's progress view: the pace of the last minute.
  static constexpr std::chrono::seconds kProgressRateWindow{60};

 private:
  const std::size_t points_per_job_;
  const std::size_t max_jobs_;
  mutable std::mutex mu_;
  std::map<std::string, std::deque<MetricsPoint>> history_;  // guarded by mu_
  std::list<std::string> recency_;                           // guarded by mu_; front: newest
};

struct ScraperOptions {
  std::chrono::milliseconds interval{std::chrono::seconds(5)};
  std::chrono::milliseconds timeout{std::chrono::seconds(2)};
  // When the container has no port named contract::kMetricsPortName.
  int default_port = contract::kDefaultMetricsPort;
  // Addresses that replace `{replica}.{namespace}.svc:{port}`, keyed "namespace/replica"
  // (e.g. "default/mnist-chief-0" -> "127.0.0.1:39123"), for local runs and tests.
  std::map<std::string, std::string> overrides;
};

// Scrapes every running TFJob of `namespaces` each interval on its own thread, each endpoint
// through one bounded GET (taas::http::Get, at most contract::kMaxMetricsPageBytes). Each round
// also reads the devices of at most kDeviceScrapesPerRound replicas the DeviceBook wants, once
// each; one that does not answer, or reports no devices yet, is asked for again when the job page
// next shows it.
class MetricsScraper {
 public:
  static constexpr std::size_t kDeviceScrapesPerRound = 8;
  // Training replicas of one type read for the job's rate: a round stays short (each scrape is
  // one bounded GET); a larger job's rate is the sum of its first ones.
  static constexpr std::int64_t kMaxRateTargets = 64;

  // `source`, `store` and `devices` (may be null: no devices) are not owned and must outlive the
  // scraper.
  MetricsScraper(JobSource* source, std::vector<std::string> namespaces, MetricsStore* store,
                 ScraperOptions options, Logger logger, DeviceBook* devices = nullptr);
  ~MetricsScraper();
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  void Start();
  void Stop();
  // One round over all jobs, on the calling thread.
  void ScrapeOnce();
  // The replicas scraped for a TFJob object (any JSON): its chief (tfjob::IsMasterRole: the
  // Chief or Master, else worker 0) and evaluator, then its other training replicas (at most
  // kMaxRateTargets of a type) for their rates, whose sum is the job's (tfjob::JobExamplesRate),
  // as {replica name, "host:port"}; none for a job the TFJob rules cannot read.
  std::vector<std::pair<std::string, std::string>> Targets(const nlohmann::json& tfjob) const;
  // "host:port" of a replica's metrics endpoint: the override, else its headless service on the
  // port its pod template names contract::kMetricsPortName (else the default port).
  std::string Address(const std::string& namespace_name, const std::string& replica,
                      const nlohmann::json& pod_template) const;
  // Reads the devices of the replicas the DeviceBook wants (at most kDeviceScrapesPerRound).
  void ScrapeDevices();

 private:
  struct Target {
    std::string replica;
    std::string address;  // "host:port"
    tfjob::ReplicaType type;
    bool rate_only;  // a training replica other than the chief: only its rate is read
  };
  std::vector<Target> TargetsOf(const tfjob::TFJob& job) const;
  // One point from the job's targets; nullopt when none answered with a known metric.
  std::optional<MetricsPoint> Scrape(const tfjob::TFJob& job) const;

  JobSource* source_;
  const std::vector<std::string> namespaces_;
  MetricsStore* store_;
  const ScraperOptions options_;
  Logger logger_;
  DeviceBook* devices_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace taas::ui_server
