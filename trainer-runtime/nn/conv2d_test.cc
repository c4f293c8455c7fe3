#include "taas/nn/conv2d.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "layer_testing.h"
#include "taas/tensor/initializers.h"

namespace taas::nn {
namespace {

using testing::GradientCheck;
using testing::Ok;
using testing::Random;

TEST_CASE("conv2d forward: a 2x2 kernel of ones sums windows") {
  ComputeContext context;
  Conv2D conv(context,
              Conv2DOptions{.name = "c", .in_channels = 1, .filters = 1, .kernel_size = 2});
  Constant(conv.kernel().value, 1.0f);
  Tensor x({1, 3, 3, 1}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor& y = Ok(conv.Forward(x, false));
  REQUIRE(y.shape() == Shape{1, 2, 2, 1});
  CHECK(y.data()[0] == doctest::Approx(12));
  CHECK(y.data()[3] == doctest::Approx(28));
  Conv2D same(context, Conv2DOptions{.name = "s",
                                     .in_channels = 1,
                                     .filters = 1,
                                     .kernel_size = 3,
                                     .strides = 2,
                                     .padding = Padding::kSame});
  Constant(same.kernel().value, 1.0f);
  const Tensor& z = Ok(same.Forward(x, false));
  REQUIRE(z.shape() == Shape{1, 2, 2, 1});
  CHECK(z.data()[0] == doctest::Approx(12));  // TF same: pad 1 on each side for 3 -> 2
  CHECK(z.data()[3] == doctest::Approx(28));
}

TEST_CASE("conv2d gradients match finite differences (valid, same, stride, relu)") {
  ComputeContext context;
  Conv2D valid(
      context,
      Conv2DOptions{.name = "conv_valid", .in_channels = 3, .filters = 4, .kernel_size = 3});
  GradientCheck(valid, Random({2, 6, 6, 3}, 5), 6);
  Conv2D same(context, Conv2DOptions{.name = "conv_same",
                                     .in_channels = 2,
                                     .filters = 3,
                                     .kernel_size = 3,
                                     .strides = 2,
                                     .padding = Padding::kSame});
  GradientCheck(same, Random({2, 5, 5, 2}, 7), 8);
  Conv2D relu(context, Conv2DOptions{.name = "conv_relu",
                                     .in_channels = 2,
                                     .filters = 3,
                                     .kernel_size = 3,
                                     .activation = Activation::kRelu});
  GradientCheck(relu, Random({1, 5, 5, 2}, 9), 10);
  CHECK(relu.ImplementationInfo().find("fwd:") != std::string::npos);
}

TEST_CASE("conv2d: a batch of the wrong shape is an error value naming the layer and both shapes") {
  ComputeContext context;
  Conv2D conv(context,
              Conv2DOptions{.name = "conv1", .in_channels = 1, .filters = 2, .kernel_size = 3});
  auto channels = conv.Forward(Tensor({2, 28, 28, 3}), true);
  REQUIRE_FALSE(channels.ok());
  CHECK(channels.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(channels.status().message() == "conv1: expected input [N, H, W, 1], got [2, 28, 28, 3]");
  CHECK(conv.Forward(Tensor({2, 784}), true).status().message() ==
        "conv1: expected input [N, H, W, 1], got [2, 784]");
  auto small = conv.Forward(Tensor({2, 2, 5, 1}), true);
  CHECK(small.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(small.status().message() ==
        "conv1: expected input [N, H >= 3, W >= 3, 1], got [2, 2, 5, 1]");
  CHECK(conv.Backward(Tensor({2, 3, 3, 2})).status().code() ==
        absl::StatusCode::kFailedPrecondition);

  const Tensor input({2, 5, 5, 1});
  Ok(conv.Forward(input, true));
  auto gradient = conv.Backward(Tensor({2, 3, 3, 1}));
  CHECK(gradient.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(gradient.status().message() ==
        "conv1: expected a gradient of the output's shape [2, 3, 3, 2], got [2, 3, 3, 1]");
  Ok(conv.Backward(Tensor({2, 3, 3, 2})));
}

TEST_CASE("conv2d: the options name the variables") {
  ComputeContext context;
  Conv2D conv(context, Conv2DOptions{.name = "conv1",
                                     .kernel_name = "conv1/weights",
                                     .bias_name = "conv1/biases",
                                     .in_channels = 1,
                                     .filters = 2,
                                     .kernel_size = 3});
  REQUIRE(conv.variables().size() == 2);
  CHECK(conv.variables()[0]->name == "conv1/weights");
  CHECK(conv.variables()[1]->name == "conv1/biases");
  Tensor expected({3, 3, 1, 2});
  GlorotUniform(expected, 9, 9 * 2, std::hash<std::string>{}("conv1/weights"));
  CHECK(std::equal(expected.values().begin(), expected.values().end(),
                   conv.kernel().value.values().begin()));
  Conv2D keras(context,
               Conv2DOptions{.name = "c", .in_channels = 1, .filters = 1, .kernel_size = 1});
  CHECK(keras.kernel().name == "c/kernel");
  CHECK(keras.bias().name == "c/bias");
  CHECK_THROWS_AS(Conv2D(context, Conv2DOptions{.name = "c",
                                                .kernel_name = "same",
                                                .bias_name = "same",
                                                .in_channels = 1,
                                                .filters = 1,
                                                .kernel_size = 1}),
                  std::invalid_argument);
}

TEST_CASE("conv2d: Keras's initialisers by default; the options name others") {
  ComputeContext context;
  Conv2D conv(context,
              Conv2DOptions{.name = "c1", .in_channels = 2, .filters = 4, .kernel_size = 3});
  Tensor expected({3, 3, 2, 4});
  GlorotUniform(expected, 9 * 2, 9 * 4, std::hash<std::string>{}("c1/kernel"));
  auto values = [](const Tensor& t) {
    return std::vector<float>(t.values().begin(), t.values().end());
  };
  CHECK(values(conv.kernel().value) == values(expected));
  CHECK(values(conv.bias().value) == std::vector<float>(4, 0.0f));

  Conv2D he(context, Conv2DOptions{.name = "c2",
                                   .in_channels = 2,
                                   .filters = 4,
                                   .kernel_size = 3,
                                   .kernel_initializer = initializers::HeNormal().WithSeed(3),
                                   .bias_initializer = initializers::Ones()});
  initializers::HeNormal().Fill(expected, 3);  // fan in 3 * 3 * 2, from the kernel's shape
  CHECK(values(he.kernel().value) == values(expected));
  CHECK(values(he.bias().value) == std::vector<float>(4, 1.0f));

  CHECK_THROWS_WITH_AS(
      Conv2D(context, Conv2DOptions{.name = "c3",
                                    .in_channels = 1,
                                    .filters = 1,
                                    .kernel_size = 2,
                                    .kernel_initializer = initializers::RandomUniform(1.0f, 0.0f)}),
      "c3: kernel_initializer: maxval must be > minval, got minval 1 and maxval 0",
      std::invalid_argument);
}

TEST_CASE("conv2d keeps primitives for the last kMaxShapePlans batch shapes only") {
  ComputeContext context;
  Conv2D conv(context,
              Conv2DOptions{.name = "c", .in_channels = 1, .filters = 2, .kernel_size = 3});
  // Training in batches of 8, then an evaluation whose batches are of every size: the layer keeps
  // what it runs now, not a plan (and its buffers) for every size it ever saw.
  const Tensor train = Random({8, 6, 6, 1}, 1);
  const Tensor first = Ok(conv.Forward(train, true));
  for (std::int64_t n = 1; n <= 12; ++n) {
    Ok(conv.Forward(Random({n, 6, 6, 1}, 2), false));
    CHECK(conv.planned_shapes() <= kMaxShapePlans);
  }
  CHECK(conv.planned_shapes() == kMaxShapePlans);
  // The training shape, dropped meanwhile, is planned again and computes the same.
  const Tensor again = Ok(conv.Forward(train, true));
  for (std::int64_t i = 0; i < first.size(); ++i) CHECK(again.data()[i] == first.data()[i]);
  Ok(conv.Backward(again));
}

}  // namespace
}  // namespace taas::nn
