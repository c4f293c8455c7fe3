#include "taas/nn/softmax_cross_entropy.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "layer_testing.h"

namespace taas::nn {
namespace {

using testing::CheckClose;

TEST_CASE("softmax cross-entropy loss, accuracy and gradient") {
  SoftmaxCrossEntropy loss;
  Tensor logits({2, 3}, std::vector<float>{1, 2, 3, 0, 0, 0});
  std::vector<std::int32_t> labels = {2, 1};
  auto result = loss.Forward(logits, labels).value();
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  const double l1 = std::log(3.0);
  CHECK(result.loss == doctest::Approx((l0 + l1) / 2));
  CHECK(result.correct == 1);  // row 1 is a tie, argmax picks class 0
  // Finite differences of the mean loss.
  for (int i = 0; i < 6; ++i) {
    Tensor plus = logits, minus = logits;
    plus.data()[i] += 1e-2f;
    minus.data()[i] -= 1e-2f;
    SoftmaxCrossEntropy probe;
    const double numeric =
        (probe.Forward(plus, labels)->loss - probe.Forward(minus, labels)->loss) / 2e-2;
    CheckClose(loss.Backward().data()[i], numeric, "logit " + std::to_string(i));
  }
  // Labels are the batch's data: outside the classes, or not one per row, they are an error value.
  for (const std::vector<std::int32_t>& bad :
       {std::vector<std::int32_t>{3, 0}, {0, -1}, {0, 2147483647}, {0}}) {
    auto refused = loss.Forward(logits, bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(loss.Forward(logits, std::vector<std::int32_t>{3, 0}).status().message() ==
        "softmax_cross_entropy: label 3 at row 0 is outside [0, 3)");
}

}  // namespace
}  // namespace taas::nn
