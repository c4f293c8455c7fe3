#include "taas/nn/max_pool2d.h"

#include <doctest/doctest.h>

#include <vector>

#include "layer_testing.h"

namespace taas::nn {
namespace {

using testing::GradientCheck;
using testing::Ok;

TEST_CASE("maxpool forward and gradients") {
  ComputeContext context;
  MaxPool2D pool(context, MaxPool2DOptions{.name = "pool", .pool_size = 2, .strides = 2});
  Tensor x({1, 2, 2, 1}, std::vector<float>{1, 4, 3, 2});
  CHECK(Ok(pool.Forward(x, false)).data()[0] == doctest::Approx(4));
  // Distinct values 0.05 apart, so a finite-difference step never changes a window's maximum.
  Tensor distinct({2, 5, 5, 3});
  for (std::int64_t i = 0; i < distinct.size(); ++i)
    distinct.data()[i] = 0.05f * static_cast<float>((i * 37) % distinct.size());
  MaxPool2D pool2(context, MaxPool2DOptions{.name = "pool2", .pool_size = 2, .strides = 2});
  GradientCheck(pool2, distinct, 12);
}

TEST_CASE("maxpool strides default to the pool size, as in Keras") {
  ComputeContext context;
  MaxPool2D pool(context, MaxPool2DOptions{.name = "pool", .pool_size = 3});
  CHECK(Ok(pool.Forward(Tensor({1, 9, 7, 2}), false)).shape() == Shape{1, 3, 2, 2});
}

TEST_CASE(
    "maxpool: a batch of the wrong shape is an error value naming the layer and both shapes") {
  ComputeContext context;
  MaxPool2D pool(context, MaxPool2DOptions{.name = "pool1"});
  auto rank = pool.Forward(Tensor({2, 28, 28}), true);
  REQUIRE_FALSE(rank.ok());
  CHECK(rank.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(rank.status().message() == "pool1: expected input [N, H, W, C], got [2, 28, 28]");
  CHECK(pool.Forward(Tensor({2, 1, 4, 3}), true).status().message() ==
        "pool1: expected input [N, H >= 2, W >= 2, C], got [2, 1, 4, 3]");
  CHECK(pool.Backward(Tensor({2, 2, 2, 3})).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  const Tensor input({2, 4, 4, 3});
  Ok(pool.Forward(input, true));
  CHECK(pool.Backward(Tensor({2, 2, 2, 2})).status().message() ==
        "pool1: expected a gradient of the output's shape [2, 2, 2, 3], got [2, 2, 2, 2]");
}

TEST_CASE("maxpool keeps workspaces for the last kMaxShapePlans batch shapes only") {
  ComputeContext context;
  MaxPool2D pool(context, MaxPool2DOptions{.name = "pool", .pool_size = 2});
  for (std::int64_t n = 1; n <= 10; ++n) {
    Tensor batch({n, 4, 4, 2});
    for (std::int64_t i = 0; i < batch.size(); ++i) batch.data()[i] = static_cast<float>(i % 7);
    const Tensor& y = Ok(pool.Forward(batch, true));
    CHECK(y.shape() == Shape{n, 2, 2, 2});
    Ok(pool.Backward(y));
    CHECK(pool.planned_shapes() <= kMaxShapePlans);
  }
  CHECK(pool.planned_shapes() == kMaxShapePlans);
}

}  // namespace
}  // namespace taas::nn
