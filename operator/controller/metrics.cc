#include "taas/controller/metrics.h"

#include <cstdio>

namespace taas::controller {

namespace {
std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}
}  // namespace

Histogram::Histogram() = default;

void Histogram::Observe(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

void Histogram::Render(const std::string& name, std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + Num(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += counts_[kBounds.size()];
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  out += name + "_sum " + Num(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

double Histogram::Quantile(double q) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == 0) return 0;
  auto target = static_cast<std::uint64_t>(q * static_cast<double>(count_) + 0.999999);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += counts_[i];
    if (cumulative >= target) return kBounds[i];
  }
  return kBounds.back();
}

}  // namespace taas::controller
