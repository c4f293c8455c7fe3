#include "taas/metrics/metrics.h"

#include <cmath>
#include <sstream>

namespace taas::metrics {

void Gauges::Describe(std::string_view name, std::string_view help) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& g = gauges_[std::string(name)];
  g.first = help;
  g.second = std::nan("");
}

void Gauges::Set(std::string_view name, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_[std::string(name)].second = value;
}

std::string Gauges::Render() const {
  std::ostringstream out;
  out.precision(10);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, g] : gauges_) {
    if (std::isnan(g.second)) continue;  // never set yet
    if (!g.first.empty()) out << "# HELP " << name << " " << g.first << "\n";
    out << "# TYPE " << name << " gauge\n" << name << " " << g.second << "\n";
  }
  return out.str();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& host,
                                                                    int port,
                                                                    const Gauges* gauges) {
  http::ServerOptions options;
  options.host = host;
  options.port = port;
  options.connection_deadline = kConnectionDeadline;
  auto server = http::Server::Start(options, [gauges](const http::Request&) {
    return http::Response{200, std::string(http::kPrometheusContentType), gauges->Render()};
  });
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        "metrics endpoint: " + std::string(server.status().message()));
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(*server)));
}

}  // namespace taas::metrics
