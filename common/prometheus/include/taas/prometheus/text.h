// The Prometheus text exposition a replica serves on its metrics port (taas/contract/ports.h), as
// every scraper reads it: the UI server (charts, devices), `taas run` (its progress line) and the
// operator (the TFJob's status.progress). The page comes from a process the reader does not
// trust, so parsing is bounded and never throws. Pure: no I/O.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taas::prometheus {

// One sample of a Prometheus text exposition: `name{label="value",...} value [timestamp]`.
struct PrometheusSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // values unescaped (\\, \", \n)
  double value = 0;
};

// What a replica's page may hold; a sample (line) beyond a bound is skipped, not cut.
inline constexpr std::size_t kMaxPrometheusNameBytes = 256;    // metric and label names
inline constexpr std::size_t kMaxPrometheusLabels = 16;        // per sample
inline constexpr std::size_t kMaxPrometheusLabelBytes = 1024;  // per label value, escaped
inline constexpr std::size_t kMaxPrometheusSamples = 10000;    // per page; the rest is ignored

// The samples of a Prometheus text exposition in page order. Comments, malformed lines (a bad
// name, an unterminated or unknown escape, a missing quote or brace, a duplicate label), samples
// over the bounds above and non-numeric or NaN values are skipped.
std::vector<PrometheusSample> ParsePrometheusSamples(std::string_view text);

// The samples by metric name (labels ignored; the first sample of a name wins).
std::map<std::string, double> ParsePrometheusText(std::string_view text);

}  // namespace taas::prometheus
