#include "taas/optim/optimizer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "taas/optim/device_rules.h"
#include "taas/optim/moving_average.h"

namespace taas::optim {
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

TEST_CASE("the default schedule is a constant 0.01, as before the schedule kinds") {
  const LearningRateSchedule lr;
  CHECK(lr.kind == LearningRateSchedule::Kind::kExponential);
  CHECK(lr.At(0) == 0.01f);
  CHECK(lr.At(123456) == 0.01f);
  CHECK(LearningRateSchedule::Constant(0.3f).At(99) == 0.3f);
  // The factory builds exactly what the four fields did.
  const auto factory = LearningRateSchedule::ExponentialDecay(0.1f, 10, 0.5f, true);
  const LearningRateSchedule fields{0.1f, 0.5f, 10, true};
  for (std::int64_t step : {0, 9, 10, 25, 1000}) CHECK(factory.At(step) == fields.At(step));
}

TEST_CASE("piecewise constant decay follows tf.compat.v1.train.piecewise_constant") {
  // TF's documented example: 1.0 for the first 100001 steps, 0.5 for the next 10000, then 0.1.
  const auto lr =
      LearningRateSchedule::PiecewiseConstantDecay({100000, 110000}, {1.0f, 0.5f, 0.1f});
  REQUIRE(lr.Validate().ok());
  CHECK(lr.At(0) == 1.0f);
  CHECK(lr.At(100000) == 1.0f);  // step <= boundary keeps the value before it
  CHECK(lr.At(100001) == 0.5f);
  CHECK(lr.At(110000) == 0.5f);
  CHECK(lr.At(110001) == 0.1f);
  CHECK(lr.At(std::int64_t{1} << 40) == 0.1f);
  const auto one = LearningRateSchedule::PiecewiseConstantDecay({}, {0.2f});
  REQUIRE(one.Validate().ok());
  CHECK(one.At(5) == 0.2f);
}

TEST_CASE("polynomial decay follows tf.keras.optimizers.schedules.PolynomialDecay") {
  const auto lr = LearningRateSchedule::PolynomialDecay(0.1f, 10000, 0.01f, 0.5f);
  REQUIRE(lr.Validate().ok());
  CHECK(lr.At(0) == doctest::Approx(0.1));
  CHECK(lr.At(5000) == doctest::Approx(0.09 * std::sqrt(0.5) + 0.01));
  CHECK(lr.At(10000) == doctest::Approx(0.01));
  CHECK(lr.At(20000) == doctest::Approx(0.01));  // held at the end
  const auto linear = LearningRateSchedule::PolynomialDecay(1.0f, 100);
  CHECK(linear.At(25) == doctest::Approx(0.75 * (1.0 - 0.0001) + 0.0001));
  // cycle: decay_steps stretches to the next multiple of itself above the step.
  auto cycled = lr;
  cycled.cycle = true;
  CHECK(cycled.At(0) == doctest::Approx(0.1));
  CHECK(cycled.At(15000) == doctest::Approx(0.09 * std::sqrt(0.25) + 0.01));
  CHECK(cycled.At(20000) == doctest::Approx(0.01));
}

TEST_CASE("inverse time decay follows tf.keras.optimizers.schedules.InverseTimeDecay") {
  const auto lr = LearningRateSchedule::InverseTimeDecay(0.1f, 1, 0.5f);
  REQUIRE(lr.Validate().ok());
  CHECK(lr.At(0) == doctest::Approx(0.1));
  CHECK(lr.At(2) == doctest::Approx(0.05));
  const auto stairs = LearningRateSchedule::InverseTimeDecay(0.1f, 10, 0.5f, true);
  CHECK(stairs.At(9) == doctest::Approx(0.1));
  CHECK(stairs.At(15) == doctest::Approx(0.1 / 1.5));
}

TEST_CASE("every schedule field is checked, naming it") {
  const auto message = [](const LearningRateSchedule& lr) {
    auto made = CreateOptimizer({.name = "sgd", .learning_rate = lr});
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(made.status().message());
  };
  CHECK(message(LearningRateSchedule::PiecewiseConstantDecay({10, 20}, {1.0f, 0.5f}))
            .find("learning_rate.values must hold one more value") != std::string::npos);
  CHECK(message(LearningRateSchedule::PiecewiseConstantDecay({10, 10}, {1.0f, 0.5f, 0.1f}))
            .find("learning_rate.boundaries[1]") != std::string::npos);
  CHECK(message(LearningRateSchedule::PiecewiseConstantDecay({10}, {1.0f, -0.5f}))
            .find("learning_rate.values[1]") != std::string::npos);
  CHECK(message(LearningRateSchedule::PiecewiseConstantDecay({10}, {1.0f, NAN}))
            .find("learning_rate.values[1]") != std::string::npos);
  CHECK(message(LearningRateSchedule::PolynomialDecay(0.1f, 0)).find("learning_rate.decay_steps") !=
        std::string::npos);
  CHECK(message(LearningRateSchedule::PolynomialDecay(0.1f, 10, 0.0f, 0.0f))
            .find("learning_rate.power") != std::string::npos);
  CHECK(message(LearningRateSchedule::PolynomialDecay(0.1f, 10, -1.0f))
            .find("learning_rate.end_learning_rate") != std::string::npos);
  CHECK(message(LearningRateSchedule::InverseTimeDecay(0.1f, 0, 0.5f))
            .find("learning_rate.decay_steps") != std::string::npos);
  CHECK(message(LearningRateSchedule::InverseTimeDecay(INFINITY, 10, 0.5f))
            .find("learning_rate.initial") != std::string::npos);
  LearningRateSchedule unknown;
  unknown.kind = static_cast<LearningRateSchedule::Kind>(7);
  CHECK(message(unknown).find("learning_rate.kind") != std::string::npos);
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

TEST_CASE("every element gets the update a variable of that one element would get") {
  // The rules' loops are vectorised (CMakeLists.txt): the vector body and its remainder must
  // compute exactly what the element-by-element formula gives, at every length and position.
  for (const char* name : {"sgd", "momentum", "adam"}) {
    for (bool nesterov : {false, true}) {
      OptimizerConfig config{.name = name, .learning_rate = {0.05f, 0.9f, 10, false}};
      config.use_nesterov = nesterov;
      auto opt = Make(config);
      const auto slot_count = static_cast<std::size_t>(opt->slot_count());
      for (std::size_t n : {1u, 3u, 4u, 7u, 8u, 17u, 1003u}) {
        CAPTURE(name);
        CAPTURE(n);
        std::vector<float> var(n), grad(n);
        std::vector<std::vector<float>> slot_data(slot_count, std::vector<float>(n));
        for (std::size_t i = 0; i < n; ++i) {
          var[i] = 1.0f + 0.25f * static_cast<float>(i % 13);
          grad[i] = 0.1f * static_cast<float>(static_cast<int>(i % 7) - 3);
          for (std::size_t k = 0; k < slot_count; ++k)
            slot_data[k][i] = 0.01f * static_cast<float>(i % 5 + k);
        }
        auto single_var = var, single_grad = grad;
        auto single_slots = slot_data;
        std::vector<std::span<float>> slots(slot_data.begin(), slot_data.end());
        for (std::int64_t step : {0, 1, 2}) opt->Apply(var, grad, slots, step);
        for (std::size_t i = 0; i < n; ++i) {
          std::vector<std::span<float>> one;
          for (auto& s : single_slots) one.push_back(std::span<float>(s).subspan(i, 1));
          for (std::int64_t step : {0, 1, 2}) {
            opt->Apply(std::span<float>(single_var).subspan(i, 1),
                       std::span<const float>(single_grad).subspan(i, 1), one, step);
          }
          REQUIRE(var[i] == single_var[i]);
          for (std::size_t k = 0; k < slot_count; ++k)
            REQUIRE(slot_data[k][i] == single_slots[k][i]);
        }
      }
    }
  }
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

TEST_CASE("ApplyTensors on host tensors is Apply, and refuses tensors that do not match") {
  auto adam = Make({.name = "adam", .learning_rate = {0.1f, 1.0f, 0, false}});
  Tensor var({2}, std::vector<float>{1.0f, -1.0f});
  const Tensor grad({2}, std::vector<float>{0.5f, 0.25f});
  Tensor m({2}), v({2});
  std::vector<Tensor*> slots = {&m, &v};
  REQUIRE(adam->ApplyTensors("w", var, grad, slots, 0).ok());
  std::vector<float> expected = {1.0f, -1.0f}, em = {0, 0}, ev = {0, 0};
  std::vector<std::span<float>> spans = {em, ev};
  adam->Apply(expected, grad.values(), spans, 0);
  CHECK(var.values()[0] == expected[0]);
  CHECK(var.values()[1] == expected[1]);
  CHECK(m.values()[1] == em[1]);

  CHECK(adam->ApplyTensors("w", var, Tensor({3}), slots, 0).message() ==
        "w: the gradient is [3] on cpu, the variable [2] on cpu");
  std::vector<Tensor*> one = {&m};
  CHECK(adam->ApplyTensors("w", var, grad, one, 0).message() ==
        "w: the optimizer keeps 2 slots per variable, got 1");
  Tensor short_slot({1});
  std::vector<Tensor*> bad = {&m, &short_slot};
  CHECK(adam->ApplyTensors("w", var, grad, bad, 0).code() == absl::StatusCode::kInvalidArgument);
}

// Host memory posing as cuda:0's, and rules that record what they were given.
class TestMemory final : public DeviceMemory {
 public:
  void* Allocate(Device, std::size_t bytes) override { return std::calloc(1, bytes); }
  void Free(Device, void* memory) override { std::free(memory); }
  void Copy(void* to, Device, const void* from, Device, std::size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
};
class RecordingRules final : public DeviceUpdateRules {
 public:
  absl::Status Sgd(float rate, Tensor&, const Tensor&) override {
    lr = rate;
    return absl::OkStatus();
  }
  absl::Status Momentum(float rate, float mu, bool nesterov, Tensor&, const Tensor&,
                        Tensor&) override {
    lr = rate;
    momentum = mu;
    use_nesterov = nesterov;
    return absl::InternalError("momentum_update kernel: invalid device function");
  }
  absl::Status Adam(float lr_t, float, float, float, Tensor&, const Tensor&, Tensor&,
                    Tensor&) override {
    lr = lr_t;
    return absl::OkStatus();
  }
  float lr = 0.0f, momentum = 0.0f;
  bool use_nesterov = false;
};

TEST_CASE("ApplyTensors runs a device's registered rules with the host's learning rate") {
  TestMemory memory;
  DeviceMemory* previous_memory = RegisterDeviceMemory(DeviceType::kCuda, &memory);
  {
    constexpr Device cuda{DeviceType::kCuda, 0};
    Tensor var({4}, cuda), grad({4}, cuda), m({4}, cuda), v({4}, cuda);
    auto sgd = Make({.name = "sgd", .learning_rate = {0.1f, 0.5f, 10, true}});
    CHECK(sgd->ApplyTensors("dense/kernel", var, grad, {}, 25).message() ==
          "dense/kernel: the variable is on cuda:0 but no update rules are registered for that "
          "device type: build with TAAS_WITH_CUDA and link the CUDA engine (taas::nn_cuda)");
    CHECK(sgd->ApplyTensors("w", var, Tensor({4}), {}, 0).message() ==
          "w: the gradient is [4] on cpu, the variable [4] on cuda:0");

    RecordingRules rules;
    DeviceUpdateRules* previous_rules = RegisterDeviceUpdateRules(DeviceType::kCuda, &rules);
    REQUIRE(sgd->ApplyTensors("w", var, grad, {}, 25).ok());
    CHECK(rules.lr == doctest::Approx(0.025));  // 0.1 * 0.5^floor(25 / 10)
    auto momentum =
        Make({.name = "momentum", .learning_rate = {}, .momentum = 0.8f, .use_nesterov = true});
    std::vector<Tensor*> accum = {&m};
    const absl::Status failed = momentum->ApplyTensors("w", var, grad, accum, 0);
    CHECK(failed.code() == absl::StatusCode::kInternal);
    CHECK(failed.message() == "w: cuda:0: momentum_update kernel: invalid device function");
    CHECK(rules.momentum == doctest::Approx(0.8));
    CHECK(rules.use_nesterov);
    auto adam = Make({.name = "adam", .learning_rate = {0.1f, 1.0f, 0, false}});
    std::vector<Tensor*> moments = {&m, &v};
    REQUIRE(adam->ApplyTensors("w", var, grad, moments, 1).ok());
    // lr * sqrt(1 - 0.999^2) / (1 - 0.9^2)
    CHECK(rules.lr == doctest::Approx(0.1 * std::sqrt(1 - 0.999 * 0.999) / (1 - 0.81)));
    RegisterDeviceUpdateRules(DeviceType::kCuda, previous_rules);
  }
  RegisterDeviceMemory(DeviceType::kCuda, previous_memory);
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
}  // namespace taas::optim
