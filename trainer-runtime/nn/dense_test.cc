#include "taas/nn/dense.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "layer_testing.h"

namespace taas::nn {
namespace {

using testing::GradientCheck;
using testing::Ok;
using testing::Random;

TEST_CASE("dense forward matches a hand computation") {
  Dense dense(DenseOptions{.name = "d", .inputs = 2, .units = 2, .activation = Activation::kRelu});
  float w[] = {1, -1, 2, 0.5f};
  std::copy_n(w, 4, dense.kernel().value.data());
  dense.bias().value.data()[0] = 0.5f;
  Tensor x({1, 2}, std::vector<float>{1.0f, 2.0f});
  const Tensor& y = Ok(dense.Forward(x, false));
  CHECK(y.data()[0] == doctest::Approx(5.5));  // 1*1 + 2*2 + 0.5
  CHECK(y.data()[1] == doctest::Approx(0.0));  // relu(-1 + 1)
}

TEST_CASE("dense gradients match finite differences") {
  Dense dense(DenseOptions{.name = "dense", .inputs = 5, .units = 4});
  GradientCheck(dense, Random({3, 5}, 1), 2);
  Dense relu(
      DenseOptions{.name = "dense_relu", .inputs = 5, .units = 4, .activation = Activation::kRelu});
  relu.bias().value.data()[1] = 0.3f;
  GradientCheck(relu, Random({3, 5}, 3), 4);
}

TEST_CASE("dense: a batch of the wrong shape is an error value naming the layer and both shapes") {
  Dense dense(DenseOptions{.name = "dense1", .inputs = 784, .units = 3});
  const Tensor gradient({2, 3});
  auto early = dense.Backward(gradient);
  CHECK(early.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(early.status().message() == "dense1: Backward without a successful Forward");

  auto refused = dense.Forward(Tensor({2, 783}), true);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(refused.status().message() == "dense1: expected input [N, 784], got [2, 783]");
  CHECK(dense.Forward(Tensor({2, 28, 28}), true).status().message() ==
        "dense1: expected input [N, 784], got [2, 28, 28]");

  const Tensor input({2, 784});
  Ok(dense.Forward(input, true));
  auto wrong_gradient = dense.Backward(Tensor({2, 4}));
  CHECK(wrong_gradient.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(wrong_gradient.status().message() ==
        "dense1: expected a gradient of the output's shape [2, 3], got [2, 4]");
  Ok(dense.Backward(gradient));
  // After a refused batch the last output is gone: Backward refuses too.
  CHECK_FALSE(dense.Forward(Tensor({2, 783}), true).ok());
  CHECK(dense.Backward(gradient).status().code() == absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace taas::nn
