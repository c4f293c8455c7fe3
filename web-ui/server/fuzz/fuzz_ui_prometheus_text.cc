// libFuzzer target: the Prometheus text exposition the UI server's scraper reads from a replica
// (web-ui/server/metrics.cc). Every sample kept has a non-empty name and a value that is a
// number (never NaN), its labels stay within their bounds, the devices read from it stay within
// theirs; nothing throws or aborts.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taas/ui_server/metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taas::ui_server;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto by_name = ParsePrometheusText(text);
  for (const auto& [name, value] : by_name) {
    if (name.empty() || std::isnan(value) || name.size() > size) std::abort();
  }
  const auto samples = ParsePrometheusSamples(text);
  if (samples.size() > kMaxPrometheusSamples) std::abort();
  for (const PrometheusSample& s : samples) {
    if (s.name.empty() || s.name.size() > kMaxPrometheusNameBytes || std::isnan(s.value) ||
        s.labels.size() > kMaxPrometheusLabels) {
      std::abort();
    }
    for (const auto& [label, value] : s.labels) {
      if (label.empty() || label.size() > kMaxPrometheusNameBytes ||
          value.size() > kMaxPrometheusLabelBytes) {
        std::abort();
      }
    }
  }
  const auto devices = ReportedDevices(samples);
  if (devices.size() > kMaxReportedDevices) std::abort();
  for (const auto& d : devices) {
    if (d.empty()) std::abort();
  }
  return 0;
}
