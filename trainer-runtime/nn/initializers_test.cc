// The core's initialisers as the layers and models use them: Glorot-uniform for Dense and Conv2D
// kernels, truncated normal and zeros in the Fashion-MNIST models.
#include "taas/tensor/initializers.h"

#include <doctest/doctest.h>

#include <cmath>

namespace taas {
namespace {

TEST_CASE("initialisers are seeded and bounded") {
  Tensor a({1000}), b({1000});
  GlorotUniform(a, 10, 20, 42);
  GlorotUniform(b, 10, 20, 42);
  const float limit = std::sqrt(6.0f / 30.0f);
  for (std::int64_t i = 0; i < 1000; ++i) {
    CHECK(a.data()[i] == b.data()[i]);
    CHECK(std::abs(a.data()[i]) <= limit);
  }
  TruncatedNormal(a, 0.1f, 7);
  double sum_sq = 0;
  for (float v : a.values()) {
    CHECK(std::abs(v) <= 0.2f);
    sum_sq += v * v;
  }
  CHECK(std::sqrt(sum_sq / 1000) > 0.06);
  Zeros(a);
  CHECK(a.data()[999] == 0.0f);
}

}  // namespace
}  // namespace taas
