#include "taas/nn/l2.h"

#include <doctest/doctest.h>

#include <vector>

namespace taas::nn {
namespace {

TEST_CASE("l2 regularisation is scale * sum(w^2) / 2 with gradient scale * w") {
  Variable w{"w", Tensor({2}, std::vector<float>{1.0f, -2.0f}), Tensor({2})};
  CHECK(L2Loss({&w}, 0.1f).value() == doctest::Approx(0.25));
  CHECK(AddL2Gradients({&w}, 0.1f).ok());
  CHECK(w.gradient.data()[1] == doctest::Approx(-0.2));
}

}  // namespace
}  // namespace taas::nn
