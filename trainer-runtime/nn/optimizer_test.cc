#include "taas/nn/optimizer.h"

#include <doctest/doctest.h>

#include <vector>

#include "taas/nn/moving_average.h"

namespace taas::nn {
namespace {

std::unique_ptr<Optimizer> Make(OptimizerConfig config) {
  auto optimizer = CreateOptimizer(config);
  REQUIRE(optimizer.ok());
  return std::move(optimizer).value();
}

TEST_CASE("exponential decay follows tf.train.exponential_decay") {
  LearningRateSchedule lr{0.1f, 0.5f, 10, false};
  CHECK(lr.At(0) == doctest::Approx(0.1));
  CHECK(lr.At(5) == doctest::Approx(0.0707107));
  CHECK(lr.At(10) == doctest::Approx(0.05));
  lr.staircase = true;
  CHECK(lr.At(15) == doctest::Approx(0.05));
  CHECK(lr.At(19) == doctest::Approx(0.05));
  CHECK(lr.At(20) == doctest::Approx(0.025));
  CHECK(LearningRateSchedule{0.3f, 0.5f, 0, false}.At(1000) == doctest::Approx(0.3));
}

TEST_CASE("sgd steps against the gradient with the scheduled rate") {
  auto sgd = Make({.name = "sgd", .learning_rate = {0.1f, 0.5f, 1, true}});
  CHECK(sgd->slot_count() == 0);
  std::vector<float> var = {1.0f, -1.0f};
  std::vector<float> grad = {2.0f, -4.0f};
  sgd->Apply(var, grad, {}, 0);
  CHECK(var[0] == doctest::Approx(0.8));
  CHECK(var[1] == doctest::Approx(-0.6));
  sgd->Apply(var, grad, {}, 1);  // lr 0.05
  CHECK(var[0] == doctest::Approx(0.7));
  CHECK(var[1] == doctest::Approx(-0.4));
}

TEST_CASE("momentum accumulates, nesterov looks ahead") {
  for (bool nesterov : {false, true}) {
    auto opt = Make({.name = "momentum",
                     .learning_rate = {0.1f, 1.0f, 0, false},
                     .momentum = 0.9f,
                     .use_nesterov = nesterov});
    CHECK(opt->slot_count() == 1);
    std::vector<float> var = {1.0f};
    std::vector<float> grad = {1.0f};
    std::vector<float> accum = {0.0f};
    std::vector<std::span<float>> slots = {accum};
    opt->Apply(var, grad, slots, 0);
    opt->Apply(var, grad, slots, 1);
    CHECK(accum[0] == doctest::Approx(1.9));
    CHECK(var[0] == doctest::Approx(nesterov ? 0.539 : 0.71));
  }
}

TEST_CASE("adam matches TF's update with bias correction and epsilon 1e-7") {
  OptimizerConfig config{.name = "adam", .learning_rate = {0.1f, 1.0f, 0, false}};
  CHECK(config.epsilon == doctest::Approx(1e-7));
  auto adam = Make(config);
  CHECK(adam->slot_count() == 2);
  std::vector<float> var = {1.0f};
  std::vector<float> m = {0.0f}, v = {0.0f};
  std::vector<std::span<float>> slots = {m, v};
  std::vector<float> grad = {0.5f};
  adam->Apply(var, grad, slots, 0);
  CHECK(var[0] == doctest::Approx(0.900000632).epsilon(1e-6));
  grad[0] = -0.25f;
  adam->Apply(var, grad, slots, 1);
  CHECK(m[0] == doctest::Approx(0.02));
  CHECK(v[0] == doctest::Approx(0.00031225));
  CHECK(var[0] == doctest::Approx(0.873367079).epsilon(1e-6));
}

TEST_CASE("bad configs name the field") {
  OptimizerConfig config;
  config.name = "adagrad";
  auto bad = CreateOptimizer(config);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(bad.status().message()).find("name") != std::string::npos);
  config.name = "adam";
  config.beta1 = 1.0f;
  bad = CreateOptimizer(config);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("beta1") != std::string::npos);
  bad = CreateOptimizer({.name = "sgd", .learning_rate = {0.1f, 0.0f, 10, false}});
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("decay_rate") != std::string::npos);
}

TEST_CASE("moving average warms up with num_updates like TF") {
  CHECK(ExponentialMovingAverage::DecayAt(0.99f, 0) == doctest::Approx(0.1));
  CHECK(ExponentialMovingAverage::DecayAt(0.99f, 1000) == doctest::Approx(0.99));
  CHECK(ExponentialMovingAverage::DecayAt(0.99f, -1) == doctest::Approx(0.99));

  Variable w{"w", Tensor({2}, std::vector<float>{0.0f, 2.0f}), Tensor({2})};
  ExponentialMovingAverage ema(0.99f);
  ema.Track({&w});
  w.value.data()[0] = 1.0f;
  w.value.data()[1] = 1.0f;
  ema.Apply(0);  // decay 0.1
  const Tensor* average = ema.Average("w");
  REQUIRE(average != nullptr);
  CHECK(average->data()[0] == doctest::Approx(0.9));
  CHECK(average->data()[1] == doctest::Approx(1.1));
  ema.Apply(-1);  // decay 0.99
  CHECK(average->data()[0] == doctest::Approx(0.901));
  CHECK(ema.Average("missing") == nullptr);

  ema.SwapIntoVariables();
  CHECK(w.value.data()[0] == doctest::Approx(0.901));
  ema.SwapIntoVariables();
  CHECK(w.value.data()[0] == doctest::Approx(1.0));
}

}  // namespace
}  // namespace taas::nn
