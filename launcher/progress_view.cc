#include "progress_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "taas/tfjob/progress.h"

namespace taas::launcher {
namespace {

std::string Fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

}  // namespace

std::string FormatDuration(std::chrono::seconds duration) {
  const std::int64_t total = std::max<std::int64_t>(0, duration.count());
  const std::int64_t hours = total / 3600, minutes = total % 3600 / 60, seconds = total % 60;
  char buf[48];
  if (hours > 0) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(hours),
                  static_cast<long long>(minutes));
  } else if (minutes > 0) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(minutes),
                  static_cast<long long>(seconds));
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(seconds));
  }
  return buf;
}

void ProgressView::Add(const ProgressSample& newest) {
  ProgressSample sample = newest;
  if (latest_) {
    // A replica between two processes, or an evaluator that has stopped, keeps its last word.
    if (!sample.global_step) sample.global_step = latest_->global_step;
    if (!sample.loss) sample.loss = latest_->loss;
    if (!sample.examples_per_sec) sample.examples_per_sec = latest_->examples_per_sec;
    if (!sample.eval_accuracy) sample.eval_accuracy = latest_->eval_accuracy;
  }
  latest_ = sample;
  if (!newest.global_step) return;
  // A step lower than the last one (the chief restored an older checkpoint) restarts the rate.
  if (!steps_.empty() && *sample.global_step < steps_.back().second) steps_.clear();
  steps_.emplace_back(sample.at, *sample.global_step);
  // Keep one sample older than the window, so the rate always spans at least the window.
  while (steps_.size() > 2 && sample.at - steps_[1].first >= kRateWindow) steps_.pop_front();
}

std::optional<double> ProgressView::Fraction() const {
  if (!max_steps_ || *max_steps_ <= 0 || !latest_ || !latest_->global_step) return std::nullopt;
  return std::clamp(static_cast<double>(*latest_->global_step) / static_cast<double>(*max_steps_),
                    0.0, 1.0);
}

std::optional<std::chrono::seconds> ProgressView::TimeLeft() const {
  if (!max_steps_ || steps_.size() < 2 || steps_.back().second >= *max_steps_) return std::nullopt;
  const auto& [first_at, first_step] = steps_.front();
  const auto& [last_at, last_step] = steps_.back();
  const double secs = std::chrono::duration<double>(last_at - first_at).count();
  if (last_step <= first_step || secs <= 0) return std::nullopt;
  const double steps_per_sec = static_cast<double>(last_step - first_step) / secs;
  const double left = static_cast<double>(std::max<std::int64_t>(0, *max_steps_ - last_step));
  return std::chrono::seconds(static_cast<std::int64_t>(std::ceil(left / steps_per_sec)));
}

std::string ProgressView::Line() const {
  if (!latest_) return "waiting for the replicas";
  const ProgressSample& s = *latest_;
  std::string line;
  if (s.global_step) {
    line = "step " + std::to_string(*s.global_step);
    if (max_steps_) line += "/" + std::to_string(*max_steps_);
    if (auto fraction = Fraction()) line += " (" + Fixed(*fraction * 100, 0) + "%)";
  } else {
    line = "starting";
  }
  if (s.stall) {
    line += "  " + tfjob::DescribeStall(*s.stall);
  } else if (auto left = TimeLeft()) {
    line += "  about " + FormatDuration(*left) + " left";
  }
  if (s.loss) line += "  loss " + Fixed(*s.loss, 4);
  if (s.examples_per_sec && !s.stall) line += "  " + Fixed(*s.examples_per_sec, 0) + " examples/s";
  if (s.eval_accuracy) line += "  eval accuracy " + Fixed(*s.eval_accuracy, 4);
  line += "  " + std::to_string(s.replicas_running) + "/" + std::to_string(s.replicas_total) +
          " replicas running";
  return line;
}

std::string ProgressView::Bar(int columns) const {
  constexpr int kBarCells = 20;
  const int filled = static_cast<int>(std::floor(Fraction().value_or(0.0) * kBarCells));
  std::string bar = "[" + std::string(filled, '#') + std::string(kBarCells - filled, '-') + "] ";
  bar += Line();
  if (columns > 0 && bar.size() > static_cast<std::size_t>(columns)) bar.resize(columns);
  return bar;
}

}  // namespace taas::launcher
