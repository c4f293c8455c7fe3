#include "taas/nn/dense.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
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

std::vector<float> Values(const Tensor& tensor) {
  return {tensor.values().begin(), tensor.values().end()};
}

TEST_CASE("dense: Keras's initialisers by default, seeded by the variable's name") {
  Dense dense(DenseOptions{.name = "d1", .inputs = 6, .units = 3});
  Tensor expected({6, 3});
  GlorotUniform(expected, 6, 3, std::hash<std::string>{}("d1/kernel"));
  CHECK(Values(dense.kernel().value) == Values(expected));
  CHECK(Values(dense.bias().value) == std::vector<float>(3, 0.0f));
  Dense again(DenseOptions{.name = "d1", .inputs = 6, .units = 3});
  CHECK(Values(again.kernel().value) == Values(dense.kernel().value));
}

TEST_CASE("dense: the options name other initialisers") {
  Dense dense(DenseOptions{.name = "d2",
                           .inputs = 50,
                           .units = 40,
                           .kernel_initializer = initializers::TruncatedNormal(0.1f).WithSeed(7),
                           .bias_initializer = initializers::Constant(0.1f)});
  Tensor expected({50, 40});
  TruncatedNormal(expected, 0.1f, 7);
  CHECK(Values(dense.kernel().value) == Values(expected));
  CHECK(Values(dense.bias().value) == std::vector<float>(40, 0.1f));

  Dense he(DenseOptions{.name = "he",
                        .inputs = 50,
                        .units = 40,
                        .kernel_initializer = initializers::HeUniform(),
                        .bias_initializer = initializers::RandomUniform(-1.0f, 1.0f)});
  const double limit = std::sqrt(6.0 / 50.0) * (1.0 + 1e-6);  // a float may round up to it
  for (float v : he.kernel().value.values()) CHECK(std::abs(v) <= limit);
  // A random bias is seeded with its own name: not the kernel's draws.
  Tensor bias({40});
  initializers::RandomUniform(-1.0f, 1.0f).Fill(bias, std::hash<std::string>{}("he/bias"));
  CHECK(Values(he.bias().value) == Values(bias));
}

TEST_CASE("dense: the options name the variables, which seed their initialisers") {
  // A port of TensorFlow's book model keeps its checkpoints' names.
  Dense dense(DenseOptions{.name = "layer1",
                           .kernel_name = "layer1/weights",
                           .bias_name = "layer1/biases",
                           .inputs = 6,
                           .units = 3,
                           .bias_initializer = initializers::RandomUniform(-1.0f, 1.0f)});
  REQUIRE(dense.variables().size() == 2);
  CHECK(dense.variables()[0]->name == "layer1/weights");
  CHECK(dense.variables()[1]->name == "layer1/biases");
  Tensor kernel({6, 3});
  GlorotUniform(kernel, 6, 3, std::hash<std::string>{}("layer1/weights"));
  CHECK(Values(dense.kernel().value) == Values(kernel));
  Tensor bias({3});
  initializers::RandomUniform(-1.0f, 1.0f).Fill(bias, std::hash<std::string>{}("layer1/biases"));
  CHECK(Values(dense.bias().value) == Values(bias));
  // One named, the other Keras's.
  Dense half(DenseOptions{.name = "d", .kernel_name = "w", .inputs = 1, .units = 1});
  CHECK(half.kernel().name == "w");
  CHECK(half.bias().name == "d/bias");
  CHECK_THROWS_WITH_AS(
      Dense(DenseOptions{.name = "d", .kernel_name = "d/bias", .inputs = 1, .units = 1}),
      "d: kernel_name and bias_name are both \"d/bias\": a model's variables need unique names",
      std::invalid_argument);
}

TEST_CASE("dense: bad initialiser parameters name the layer and the field") {
  auto build = [](Initializer kernel, Initializer bias) {
    Dense dense(DenseOptions{.name = "dense1",
                             .inputs = 2,
                             .units = 2,
                             .kernel_initializer = kernel,
                             .bias_initializer = bias});
  };
  CHECK_THROWS_WITH_AS(build(initializers::TruncatedNormal(-1.0f), initializers::Zeros()),
                       "dense1: kernel_initializer: stddev must be a finite number > 0, got -1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(build(initializers::GlorotUniform(),
                             initializers::Constant(std::numeric_limits<float>::quiet_NaN())),
                       "dense1: bias_initializer: value must be a finite number, got nan",
                       std::invalid_argument);
}

}  // namespace
}  // namespace taas::nn
