// A Prometheus text-format endpoint (GET /metrics, any path answers) serving gauges the trainer
// updates (their names: taas/contract/metric_names.h), on the shared small HTTP server
// (taas/http/server.h: one background thread, deadlines and limits). Set() is thread-safe and
// cheap.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"
#include "taas/http/server.h"

namespace taas::metrics {

class Gauges {
 public:
  // Declares a gauge with its help text; undeclared names are served without HELP.
  void Describe(std::string_view name, std::string_view help);
  // Declares a counter (a value that only grows, named `..._total` by Prometheus's convention):
  // served as `# TYPE name counter`, so rate() and increase() may be applied to it. Set() still
  // sets it; the caller keeps it monotonic.
  void DescribeCounter(std::string_view name, std::string_view help);
  void Set(std::string_view name, double value);
  // An info metric (Prometheus's way of stating facts): one sample of value 1 per label set,
  // e.g. taas_replica_device_info{device="cuda:0",name="NVIDIA H100 80GB HBM3"} 1. Replaces the
  // metric's earlier sets; a label set equal to an earlier one is served once.
  using Labels = std::vector<std::pair<std::string, std::string>>;
  void SetInfo(std::string_view name, std::string_view help, const std::vector<Labels>& sets);
  // A gauge with one sample per label set, e.g. taas_final_metric{metric="accuracy"} 0.9087.
  // Replaces the metric's earlier samples; of equal label sets the first is served.
  using Sample = std::pair<Labels, double>;
  void SetLabeled(std::string_view name, std::string_view help, const std::vector<Sample>& samples);
  // The exposition text: gauges in name order, then labelled ones in name order.
  std::string Render() const;

 private:
  struct Scalar {
    std::string help;
    double value = 0;
    bool counter = false;
  };
  mutable std::mutex mu_;
  std::map<std::string, Scalar> gauges_;                                        // guarded by mu_
  std::map<std::string, std::pair<std::string, std::vector<Sample>>> labeled_;  // guarded by mu_
};

class MetricsServer {
 public:
  // Serves `gauges` (not owned; must outlive the server) on host:port; port 0 picks a free one.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& host, int port,
                                                              const Gauges* gauges);

  int port() const { return server_->port(); }

  // How long one scrape may take, reading the request and writing the answer together.
  static constexpr std::chrono::milliseconds kConnectionDeadline{2000};

 private:
  explicit MetricsServer(std::unique_ptr<http::Server> server) : server_(std::move(server)) {}
  std::unique_ptr<http::Server> server_;
};

}  // namespace taas::metrics
