// Port names and numbers that the runtime, the operator and the UI server agree on.
#pragma once

#include <cstddef>
#include <string_view>

namespace taas::contract {

// A replica's Prometheus endpoint: the container port of this name, else this number (the
// runtime's TAAS_METRICS_PORT in Kubernetes). The UI server scrapes it; the job's NetworkPolicy
// admits the operator's namespace to it.
inline constexpr std::string_view kMetricsPortName = "metrics";
inline constexpr int kDefaultMetricsPort = 9090;
// The most a scraper (the UI server, `taas run`'s progress line) reads of one replica's page: a
// trainer's few gauges are far less; a bigger answer is refused, not held in memory.
inline constexpr std::size_t kMaxMetricsPageBytes = std::size_t{4} << 20;

}  // namespace taas::contract
