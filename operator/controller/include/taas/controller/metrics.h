// Prometheus metrics of the operator, rendered in the text exposition format. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace taas::controller {

// A latency histogram with fixed buckets (seconds).
class Histogram {
 public:
  Histogram();
  void Observe(double seconds);
  // Appends `name_bucket{le=...}`, `name_sum`, `name_count` lines.
  void Render(const std::string& name, std::string& out) const;
  // The q-quantile estimated from the buckets (upper bound of the bucket holding it).
  double Quantile(double q) const;

 private:
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  5,     10,   30};
  mutable std::mutex mu_;
  std::array<std::uint64_t, kBounds.size() + 1> counts_{};  // guarded by mu_; last is +Inf
  double sum_ = 0;                                          // guarded by mu_
  std::uint64_t count_ = 0;                                 // guarded by mu_
};

struct Metrics {
  std::atomic<std::uint64_t> reconciles{0};
  std::atomic<std::uint64_t> reconcile_errors{0};
  std::atomic<std::uint64_t> pods_created{0};
  std::atomic<std::uint64_t> pods_deleted{0};
  std::atomic<std::uint64_t> services_created{0};
  std::atomic<std::uint64_t> services_deleted{0};
  std::atomic<std::uint64_t> status_updates{0};
  std::atomic<std::uint64_t> status_conflicts{0};
  std::atomic<std::uint64_t> jobs_deleted_ttl{0};
  std::atomic<std::uint64_t> progress_writes{0};  // status writes that changed status.progress
  Histogram reconcile_latency;
};

}  // namespace taas::controller
