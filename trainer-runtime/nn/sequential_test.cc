#include "taas/nn/sequential.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "layer_testing.h"
#include "taas/nn/layers.h"
#include "taas/tensor/initializers.h"

namespace taas::nn {
namespace {

using testing::CheckClose;
using testing::Ok;
using testing::Random;

TEST_CASE("sequential names variables uniquely and in order; first layer skips input grad") {
  ComputeContext context;
  Sequential model;
  model.Add(std::make_unique<Conv2D>(context, Conv2DOptions{.name = "conv1",
                                                            .in_channels = 1,
                                                            .filters = 2,
                                                            .kernel_size = 3,
                                                            .activation = Activation::kRelu}));
  model.Add(std::make_unique<Flatten>("flatten"));
  model.Add(
      std::make_unique<Dense>(DenseOptions{.name = "dense1", .inputs = 2 * 3 * 3, .units = 3}));
  auto vars = model.variables();
  REQUIRE(vars.size() == 4);
  CHECK(vars[0]->name == "conv1/kernel");
  CHECK(vars[1]->name == "conv1/bias");
  CHECK(vars[2]->name == "dense1/kernel");
  CHECK(vars[3]->name == "dense1/bias");
  Tensor x = Random({2, 5, 5, 1}, 21);
  const Tensor& logits = Ok(model.Forward(x, true));
  CHECK(logits.shape() == Shape{2, 3});
  Tensor grad = Random({2, 3}, 22);
  REQUIRE(model.Backward(grad).ok());
  double norm = 0;
  for (float g : vars[0]->gradient.values()) norm += g * g;
  CHECK(norm > 0);
}

TEST_CASE("sequential returns a layer's error unchanged, forward and backward") {
  ComputeContext context;
  Sequential model;
  model.Add(std::make_unique<Conv2D>(context, Conv2DOptions{.name = "conv1",
                                                            .in_channels = 1,
                                                            .filters = 2,
                                                            .kernel_size = 3,
                                                            .activation = Activation::kRelu}));
  model.Add(std::make_unique<Flatten>("flatten"));
  model.Add(
      std::make_unique<Dense>(DenseOptions{.name = "dense1", .inputs = 2 * 3 * 3, .units = 3}));
  // The first layer refuses a batch with the wrong channel count...
  auto channels = model.Forward(Tensor({2, 5, 5, 3}), true);
  CHECK(channels.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(channels.status().message() == "conv1: expected input [N, H, W, 1], got [2, 5, 5, 3]");
  // ...a later one a batch whose images are too large for it.
  auto large = model.Forward(Tensor({2, 6, 6, 1}), true);
  CHECK(large.status().message() == "dense1: expected input [N, 18], got [2, 32]");
  CHECK(model.Backward(Tensor({2, 3})).code() == absl::StatusCode::kFailedPrecondition);
  const Tensor x = Random({2, 5, 5, 1}, 21);
  Ok(model.Forward(x, true));
  const absl::Status gradient = model.Backward(Tensor({2, 4}));
  CHECK(gradient.code() == absl::StatusCode::kInvalidArgument);
  CHECK(gradient.message() ==
        "dense1: expected a gradient of the output's shape [2, 3], got [2, 4]");
}

TEST_CASE("a pool after a ReLU conv masks its small gradient instead: same gradients") {
  ComputeContext context;
  const Conv2DOptions conv_options{.name = "conv",
                                   .in_channels = 2,
                                   .filters = 3,
                                   .kernel_size = 3,
                                   .activation = Activation::kRelu};
  const MaxPool2DOptions pool_options{.name = "pool", .pool_size = 2, .strides = 2};
  const DenseOptions dense_options{.name = "dense", .inputs = 3 * 3 * 3, .units = 2};
  auto build = [&](Sequential& model) {
    auto& conv = model.Add(std::make_unique<Conv2D>(context, conv_options));
    Constant(conv.bias().value, -0.3f);  // many windows entirely zero after the ReLU
    model.Add(std::make_unique<MaxPool2D>(context, pool_options));
    model.Add(std::make_unique<Flatten>("flatten"));
    model.Add(std::make_unique<Dense>(dense_options));
  };
  Sequential fused;
  build(fused);
  Tensor x = Random({2, 8, 8, 2}, 31);
  Tensor r = Random({2, 2}, 32);
  Ok(fused.Forward(x, true));
  REQUIRE(fused.Backward(r).ok());
  Tensor fused_grad = fused.variables()[0]->gradient;

  // The same layers driven one by one, so each applies its own ReLU mask.
  Conv2D conv(context, conv_options);
  Constant(conv.bias().value, -0.3f);
  MaxPool2D pool(context, pool_options);
  Flatten flatten("flatten");
  Dense dense(dense_options);
  conv.set_input_gradient(false);
  Ok(dense.Forward(Ok(flatten.Forward(Ok(pool.Forward(Ok(conv.Forward(x, true)), true)), true)),
                   true));
  Ok(conv.Backward(Ok(pool.Backward(Ok(flatten.Backward(Ok(dense.Backward(r))))))));
  for (std::int64_t i = 0; i < fused_grad.size(); ++i) {
    CHECK(fused_grad.data()[i] == doctest::Approx(conv.kernel().gradient.data()[i]));
  }
  int zero_windows = 0;
  for (float v : Ok(pool.Forward(Ok(conv.Forward(x, true)), true)).values()) {
    zero_windows += v == 0.0f;
  }
  CHECK(zero_windows > 0);

  // And against finite differences through the whole network.
  // A small step: a kernel weight moves all 216 pre-activations, so a large one crosses kinks.
  Variable* kernel = fused.variables()[0];
  const float eps = 1e-3f;
  for (std::int64_t i = 0; i < kernel->value.size(); i += 5) {
    auto objective = [&] {
      const Tensor& y = Ok(fused.Forward(x, true));
      double sum = 0;
      for (std::int64_t k = 0; k < y.size(); ++k) sum += double(y.data()[k]) * r.data()[k];
      return sum;
    };
    const float saved = kernel->value.data()[i];
    kernel->value.data()[i] = saved + eps;
    const double plus = objective();
    kernel->value.data()[i] = saved - eps;
    const double minus = objective();
    kernel->value.data()[i] = saved;
    CheckClose(fused_grad.data()[i], (plus - minus) / (2 * eps), "kernel " + std::to_string(i));
  }
}

}  // namespace
}  // namespace taas::nn
