#include "taas/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace taas::metrics {
namespace {

// A label value as the text format writes it: backslash, double quote and newline escaped.
std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void Gauges::Describe(std::string_view name, std::string_view help) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_[std::string(name)] = {std::string(help), std::nan(""), false};
}

void Gauges::DescribeCounter(std::string_view name, std::string_view help) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_[std::string(name)] = {std::string(help), std::nan(""), true};
}

void Gauges::Set(std::string_view name, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  gauges_[std::string(name)].value = value;
}

void Gauges::SetInfo(std::string_view name, std::string_view help,
                     const std::vector<Labels>& sets) {
  std::vector<Sample> samples;
  for (const Labels& labels : sets) samples.emplace_back(labels, 1.0);
  SetLabeled(name, help, samples);
}

void Gauges::SetLabeled(std::string_view name, std::string_view help,
                        const std::vector<Sample>& samples) {
  std::vector<Sample> unique;
  for (const Sample& sample : samples) {
    const auto same = [&](const Sample& kept) { return kept.first == sample.first; };
    if (std::none_of(unique.begin(), unique.end(), same)) unique.push_back(sample);
  }
  std::lock_guard<std::mutex> lock(mu_);
  labeled_[std::string(name)] = {std::string(help), std::move(unique)};
}

std::string Gauges::Render() const {
  std::ostringstream out;
  out.precision(10);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, g] : gauges_) {
    if (std::isnan(g.value)) continue;  // never set yet
    if (!g.help.empty()) out << "# HELP " << name << " " << g.help << "\n";
    out << "# TYPE " << name << (g.counter ? " counter\n" : " gauge\n") << name << " " << g.value
        << "\n";
  }
  for (const auto& [name, metric] : labeled_) {
    if (!metric.first.empty()) out << "# HELP " << name << " " << metric.first << "\n";
    out << "# TYPE " << name << " gauge\n";
    for (const auto& [labels, value] : metric.second) {
      out << name << "{";
      for (std::size_t i = 0; i < labels.size(); ++i) {
        out << (i ? "," : "") << labels[i].first << "=\"" << EscapeLabelValue(labels[i].second)
            << "\"";
      }
      out << "} " << value << "\n";
    }
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
