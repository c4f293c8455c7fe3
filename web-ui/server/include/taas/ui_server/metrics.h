// Training progress for the job-detail charts: the server scrapes each running job's chief (or
// worker 0) and evaluator Prometheus endpoints and keeps a bounded history per job.
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
#include "taas/ui_server/job_source.h"

namespace taas::ui_server {

// The samples of a Prometheus text exposition, by metric name (labels ignored; the first sample
// of a name wins). Comments, malformed lines and non-numeric values are skipped.
std::map<std::string, double> ParsePrometheusText(std::string_view text);

// One scrape of a job: time in Unix milliseconds; a metric the replicas did not expose is absent.
struct MetricsPoint {
  std::int64_t time_ms = 0;
  std::optional<double> global_step;
  std::optional<double> loss;
  std::optional<double> examples_per_second;
  std::optional<double> learning_rate;
  std::optional<double> eval_accuracy;
};

// Bounded history per job ("namespace/name"): at most `points_per_job` points (oldest dropped)
// for at most `max_jobs` jobs (the least recently updated dropped). Thread-safe.
class MetricsStore {
 public:
  explicit MetricsStore(std::size_t points_per_job = 2000, std::size_t max_jobs = 100);

  void Add(const std::string& job_key, const MetricsPoint& point);
  std::vector<MetricsPoint> History(const std::string& job_key) const;
  // {"points": [{"time": ms, "step":..., "loss":..., ...}], "latest": {...} or null}
  nlohmann::json HistoryJson(const std::string& job_key) const;

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
// through one bounded GET (taas::http::Get, at most contract::kMaxMetricsPageBytes).
class MetricsScraper {
 public:
  // `source` and `store` are not owned and must outlive the scraper.
  MetricsScraper(JobSource* source, std::vector<std::string> namespaces, MetricsStore* store,
                 ScraperOptions options, Logger logger);
  ~MetricsScraper();
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  void Start();
  void Stop();
  // One round over all jobs, on the calling thread.
  void ScrapeOnce();
  // The replicas scraped for a job: its chief (Chief/Master, else Worker 0) and evaluator, as
  // {replica name, "host:port"}.
  std::vector<std::pair<std::string, std::string>> Targets(const nlohmann::json& tfjob) const;

 private:
  // One point from the job's targets; nullopt when none answered with a known metric.
  std::optional<MetricsPoint> Scrape(const nlohmann::json& job) const;

  JobSource* source_;
  const std::vector<std::string> namespaces_;
  MetricsStore* store_;
  const ScraperOptions options_;
  Logger logger_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace taas::ui_server
