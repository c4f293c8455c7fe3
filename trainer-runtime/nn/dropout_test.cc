#include "taas/nn/dropout.h"

#include <doctest/doctest.h>

#include <stdexcept>

#include "layer_testing.h"
#include "taas/tensor/initializers.h"

namespace taas::nn {
namespace {

using testing::Ok;

TEST_CASE(
    "dropout zeroes about `rate` of the elements in training, scales the rest, and is the "
    "identity in evaluation") {
  Dropout dropout(DropoutOptions{.name = "dropout", .rate = 0.5f, .seed = 17});
  Tensor ones({1, 1000});
  Constant(ones, 1.0f);
  const Tensor& kept = Ok(dropout.Forward(ones, true));
  int zeros = 0;
  for (float v : kept.values()) {
    CHECK((v == 0.0f || v == doctest::Approx(2.0)));
    zeros += v == 0.0f;
  }
  CHECK(zeros > 400);
  CHECK(zeros < 600);
  Tensor grad = Ok(dropout.Backward(ones));
  for (std::int64_t i = 0; i < 1000; ++i) CHECK(grad.data()[i] == kept.data()[i]);
  CHECK(Ok(dropout.Forward(ones, false)).data()[0] == 1.0f);
}

TEST_CASE(
    "dropout: a gradient of the wrong shape is an error value; a rate of 1 is a "
    "programming error") {
  Dropout dropout(DropoutOptions{.name = "dropout1", .rate = 0.5f, .seed = 17});
  CHECK(dropout.Backward(Tensor({1, 10})).status().code() == absl::StatusCode::kFailedPrecondition);
  const Tensor input({1, 10});
  Ok(dropout.Forward(input, true));
  auto refused = dropout.Backward(Tensor({10}));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(refused.status().message() ==
        "dropout1: expected a gradient of the output's shape [1, 10], got [10]");
  CHECK_THROWS_AS(Dropout(DropoutOptions{.name = "d", .rate = 1.0f}), std::invalid_argument);
}

}  // namespace
}  // namespace taas::nn
