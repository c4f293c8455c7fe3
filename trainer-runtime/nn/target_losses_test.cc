#include "taas/nn/target_losses.h"

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "layer_testing.h"

namespace taas::nn {
namespace {

using testing::CheckClose;

// Central differences of the mean loss against Backward, at every element.
void CheckGradient(TargetLoss& loss, const Tensor& outputs, const std::vector<float>& targets,
                   TargetLoss& probe) {
  REQUIRE(loss.Forward(outputs, targets).ok());
  for (std::int64_t i = 0; i < outputs.size(); ++i) {
    Tensor plus = outputs, minus = outputs;
    plus.data()[i] += 1e-2f;
    minus.data()[i] -= 1e-2f;
    const double numeric =
        (probe.Forward(plus, targets)->loss - probe.Forward(minus, targets)->loss) / 2e-2;
    CheckClose(loss.Backward().data()[i], numeric, "output " + std::to_string(i));
  }
}

TEST_CASE("mean squared error: the mean over every element, its gradient and the MAE") {
  MeanSquaredError loss, probe;
  const Tensor outputs({2, 2}, std::vector<float>{1, 2, 3, 4});
  const std::vector<float> targets = {0, 2, 5, 3};
  const TargetLossResult result = loss.Forward(outputs, targets).value();
  CHECK(result.loss == doctest::Approx((1 + 0 + 4 + 1) / 4.0));
  CHECK(result.metrics() ==
        std::map<std::string, double>{{"loss", result.loss}, {"mean_absolute_error", 1.0}});
  CHECK_FALSE(result.has_accuracy);
  CheckGradient(loss, testing::Random({3, 2}, 1), {0.5f, -1, 0, 2, 0.1f, 0.3f}, probe);
  // [N] reads as [N, 1].
  CHECK(loss.Forward(Tensor({2}, std::vector<float>{1, 1}), std::vector<float>{0, 1})->loss ==
        doctest::Approx(0.5));
}

TEST_CASE("huber: squared within delta, linear beyond, and its gradient on both sides") {
  Huber loss(1.0f), probe(1.0f);
  const Tensor outputs({3}, std::vector<float>{0.5f, 3, -2});
  const TargetLossResult result = loss.Forward(outputs, std::vector<float>{0, 0, 0}).value();
  CHECK(result.loss == doctest::Approx((0.125 + 2.5 + 1.5) / 3));
  CHECK(loss.Backward().data()[1] == doctest::Approx(1.0 / 3));
  CHECK(loss.Backward().data()[2] == doctest::Approx(-1.0 / 3));
  Huber wide(2.5f), wide_probe(2.5f);
  CheckGradient(wide, Tensor({2, 2}, std::vector<float>{-4, -1, 0.7f, 6}), {0, 0.2f, -0.4f, 1},
                wide_probe);
  CHECK_THROWS_AS(Huber(0.0f), std::invalid_argument);
  CHECK_THROWS_AS(Huber(NAN), std::invalid_argument);
}

TEST_CASE("binary cross-entropy from logits: stable at any logit, accuracy at 0.5") {
  BinaryCrossEntropy loss, probe;
  const Tensor logits({4, 1}, std::vector<float>{0, 2, -100, 100});
  const TargetLossResult result = loss.Forward(logits, std::vector<float>{1, 0, 0, 0}).value();
  // log 2; log(1 + e^2); ~0 for a confident right answer; 100 for a confident wrong one (the
  // sigmoid's log would be -inf in float32).
  CHECK(result.loss == doctest::Approx((std::log(2.0) + std::log1p(std::exp(2.0)) + 0 + 100) / 4));
  CHECK(std::isfinite(result.loss));
  CHECK(result.correct == 1);  // only -100 against 0: 0 is not > 0, 2 and 100 say 1
  CHECK(result.metrics() ==
        std::map<std::string, double>{{"loss", result.loss}, {"accuracy", 0.25}});
  // sigmoid(x) - t, over n.
  CHECK(loss.Backward().data()[0] == doctest::Approx((0.5 - 1) / 4));
  CHECK(loss.Backward().data()[3] == doctest::Approx(1.0 / 4));
  CheckGradient(loss, testing::Random({3, 2}, 2, 3.0f), {0, 1, 0.25f, 1, 0, 0.5f}, probe);
}

TEST_CASE("target losses refuse targets that do not fit, naming the row and the column") {
  MeanSquaredError mse;
  BinaryCrossEntropy bce;
  const Tensor outputs({2, 2});
  for (const auto& [loss, targets, message] :
       {std::tuple<TargetLoss*, std::vector<float>, std::string>{
            &mse, {1, 2, 3}, "mean_squared_error: outputs [2, 2] do not match 3 targets"},
        {&mse,
         {0, 0, INFINITY, 0},
         "mean_squared_error: target inf at row 1, column 0 is not a "
         "finite number"},
        {&bce,
         {0, 1, 1, 2},
         "binary_cross_entropy: target 2.000000 at row 1, column 1 is not in "
         "[0, 1]"}}) {
    const auto refused = loss->Forward(outputs, targets);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(refused.status().message()) == message);
  }
  CHECK_FALSE(mse.Forward(Tensor({2, 2, 1}), std::vector<float>(4)).ok());
}

}  // namespace
}  // namespace taas::nn
