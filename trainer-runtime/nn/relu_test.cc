#include "taas/nn/relu.h"

#include <doctest/doctest.h>

#include "layer_testing.h"

namespace taas::nn {
namespace {

using testing::GradientCheck;
using testing::Ok;
using testing::Random;

TEST_CASE("relu gradients match finite differences") {
  ReLU relu("relu");
  GradientCheck(relu, Random({4, 7}, 13), 14);
}

TEST_CASE(
    "relu: a gradient of the wrong shape is an error value naming the layer and both shapes") {
  ReLU relu("relu1");
  CHECK(relu.Backward(Tensor({4, 7})).status().code() == absl::StatusCode::kFailedPrecondition);
  const Tensor input = Random({4, 7}, 13);
  Ok(relu.Forward(input, true));
  auto refused = relu.Backward(Tensor({4, 8}));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(refused.status().message() ==
        "relu1: expected a gradient of the output's shape [4, 7], got [4, 8]");
}

}  // namespace
}  // namespace taas::nn
