// libFuzzer target: the Prometheus text exposition the UI server's scraper reads from a replica
// (web-ui/server/metrics.cc). Every sample kept has a non-empty name and a value that is a
// number (never NaN); nothing throws or aborts.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "taas/ui_server/metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto samples = taas::ui_server::ParsePrometheusText(
      std::string_view(reinterpret_cast<const char*>(data), size));
  for (const auto& [name, value] : samples) {
    if (name.empty() || std::isnan(value) || name.size() > size) std::abort();
  }
  return 0;
}
