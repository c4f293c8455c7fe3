#include "taas/nn/chunked_conv_pool.h"

#include <doctest/doctest.h>

#include <memory>

#include "layer_testing.h"
#include "taas/nn/sequential.h"
#include "taas/tensor/initializers.h"

namespace taas::nn {
namespace {

using testing::Ok;
using testing::Random;

std::unique_ptr<MaxPool2D> Pool(ComputeContext& context) {
  return std::make_unique<MaxPool2D>(
      context, MaxPool2DOptions{.name = "pool", .pool_size = 2, .strides = 2});
}

TEST_CASE("chunked conv+pool equals conv then pool, forward and backward") {
  ComputeContext context;
  auto conv = [&] {
    auto layer = std::make_unique<Conv2D>(context, Conv2DOptions{.name = "conv",
                                                                 .in_channels = 2,
                                                                 .filters = 3,
                                                                 .kernel_size = 3,
                                                                 .activation = Activation::kRelu});
    Constant(layer->bias().value, -0.2f);
    return layer;
  };
  Sequential plain;
  plain.Add(conv());
  plain.Add(Pool(context));
  ChunkedConvPool chunked(conv(), Pool(context), 2);
  chunked.set_input_gradient(true);
  plain.layers()[0]->set_input_gradient(true);
  REQUIRE(chunked.variables().size() == 2);
  CHECK(chunked.variables()[0]->name == "conv/kernel");

  Tensor x = Random({5, 8, 8, 2}, 41);  // 5 = chunks of 2, 2 and 1
  const Tensor& expected = Ok(plain.Forward(x, true));
  const Tensor& actual = Ok(chunked.Forward(x, true));
  REQUIRE(actual.shape() == expected.shape());
  for (std::int64_t i = 0; i < actual.size(); ++i)
    CHECK(actual.data()[i] == doctest::Approx(expected.data()[i]));

  Tensor r = Random(expected.shape(), 42);
  const Tensor& plain_input_grad =
      Ok(plain.layers()[0]->Backward(Ok(plain.layers()[1]->Backward(r))));
  const Tensor& chunked_input_grad = Ok(chunked.Backward(r));
  REQUIRE(chunked_input_grad.shape() == x.shape());
  for (std::int64_t i = 0; i < x.size(); ++i) {
    CHECK(chunked_input_grad.data()[i] == doctest::Approx(plain_input_grad.data()[i]));
  }
  for (int v = 0; v < 2; ++v) {
    const Tensor& want = plain.variables()[v]->gradient;
    const Tensor& got = chunked.variables()[v]->gradient;
    for (std::int64_t i = 0; i < want.size(); ++i)
      CHECK(got.data()[i] == doctest::Approx(want.data()[i]));
  }
}

TEST_CASE("chunked conv+pool: a batch of the wrong shape is an error value naming the layer") {
  ComputeContext context;
  ChunkedConvPool chunked(
      std::make_unique<Conv2D>(context, Conv2DOptions{.name = "conv1",
                                                      .in_channels = 1,
                                                      .filters = 2,
                                                      .kernel_size = 3,
                                                      .activation = Activation::kRelu}),
      Pool(context), 2);
  auto rank = chunked.Forward(Tensor({3, 28, 28}), true);
  REQUIRE_FALSE(rank.ok());
  CHECK(rank.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(rank.status().message() == "conv1+pool: expected input [N >= 1, H, W, C], got [3, 28, 28]");
  CHECK(chunked.Forward(Tensor({0, 28, 28, 1}), true).status().message() ==
        "conv1+pool: expected input [N >= 1, H, W, C], got [0, 28, 28, 1]");
  // The convolution's own check names it, with the chunk's shape.
  CHECK(chunked.Forward(Tensor({3, 28, 28, 2}), true).status().message() ==
        "conv1: expected input [N, H, W, 1], got [2, 28, 28, 2]");
  CHECK(chunked.Backward(Tensor({3, 13, 13, 2})).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  const Tensor input({3, 28, 28, 1});
  Ok(chunked.Forward(input, true));
  CHECK(chunked.Backward(Tensor({3, 13, 13, 3})).status().message() ==
        "conv1+pool: expected a gradient of the output's shape [3, 13, 13, 2], got [3, 13, 13, 3]");
  Ok(chunked.Backward(Tensor({3, 13, 13, 2})));
}

}  // namespace
}  // namespace taas::nn
