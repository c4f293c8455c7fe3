#include "taas/tensor/initializers.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace taas {

void GlorotUniform(Tensor& tensor, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-limit, limit);
  for (float& value : tensor.values()) value = static_cast<float>(uniform(rng));
}

void TruncatedNormal(Tensor& tensor, float stddev, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (float& value : tensor.values()) {
    double draw = normal(rng);
    while (std::abs(draw) > 2.0) draw = normal(rng);
    value = static_cast<float>(draw * stddev);
  }
}

void Constant(Tensor& tensor, float value) {
  std::fill(tensor.values().begin(), tensor.values().end(), value);
}

}  // namespace taas
