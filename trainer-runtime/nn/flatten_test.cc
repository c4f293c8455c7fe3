#include "taas/nn/flatten.h"

#include <doctest/doctest.h>

#include "layer_testing.h"

namespace taas::nn {
namespace {

using testing::GradientCheck;
using testing::Ok;
using testing::Random;

TEST_CASE("flatten keeps the batch and its gradient is the identity") {
  Flatten flatten("flatten");
  Tensor x = Random({2, 3, 3, 2}, 15);
  CHECK(Ok(flatten.Forward(x, true)).shape() == Shape{2, 18});
  GradientCheck(flatten, x, 16);
}

TEST_CASE("flatten: an input without a batch dimension is an error value naming the layer") {
  Flatten flatten("flatten1");
  auto refused = flatten.Forward(Tensor(), true);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(refused.status().message() ==
        "flatten1: expected input [N, ...] (a batch dimension), got []");
  CHECK(flatten.Backward(Tensor({2, 18})).status().code() == absl::StatusCode::kFailedPrecondition);
  const Tensor input({2, 3, 3, 2});
  Ok(flatten.Forward(input, true));
  CHECK(flatten.Backward(Tensor({2, 3, 3, 2})).status().message() ==
        "flatten1: expected a gradient of the output's shape [2, 18], got [2, 3, 3, 2]");
}

}  // namespace
}  // namespace taas::nn
