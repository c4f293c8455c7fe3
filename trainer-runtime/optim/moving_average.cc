#include "taas/optim/moving_average.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace taas::optim {

float ExponentialMovingAverage::DecayAt(float decay, std::int64_t num_updates) {
  if (num_updates < 0) return decay;
  const double warmup =
      (1.0 + static_cast<double>(num_updates)) / (10.0 + static_cast<double>(num_updates));
  return static_cast<float>(std::min(static_cast<double>(decay), warmup));
}

void ExponentialMovingAverage::Update(std::span<float> shadow, std::span<const float> value,
                                      float decay) {
  if (shadow.size() != value.size()) {
    throw std::invalid_argument("moving average: shadow has " + std::to_string(shadow.size()) +
                                " elements, value has " + std::to_string(value.size()));
  }
  const float rate = 1.0f - decay;
  for (std::size_t i = 0; i < shadow.size(); ++i) shadow[i] -= rate * (shadow[i] - value[i]);
}

void ExponentialMovingAverage::Track(const std::vector<Variable*>& variables) {
  for (Variable* variable : variables) {
    auto it = index_.find(variable->name);
    if (it != index_.end()) {
      entries_[it->second].variable = variable;
      continue;
    }
    index_.emplace(variable->name, entries_.size());
    entries_.push_back({variable, variable->value});
  }
}

void ExponentialMovingAverage::Apply(std::int64_t num_updates) {
  const float decay = DecayAt(decay_, num_updates);
  for (Entry& entry : entries_)
    Update(entry.shadow.values(), entry.variable->value.values(), decay);
}

const Tensor* ExponentialMovingAverage::Average(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second].shadow;
}

void ExponentialMovingAverage::SwapIntoVariables() {
  for (Entry& entry : entries_) std::swap(entry.shadow, entry.variable->value);
}

}  // namespace taas::optim
