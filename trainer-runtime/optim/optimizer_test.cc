#include "taas/optim/optimizer.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numbers>
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
  sgd->Apply("w", var, grad, {}, 0);
  CHECK(var[0] == doctest::Approx(0.8));
  CHECK(var[1] == doctest::Approx(-0.6));
  sgd->Apply("w", var, grad, {}, 1);  // lr 0.05
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
    opt->Apply("w", var, grad, slots, 0);
    opt->Apply("w", var, grad, slots, 1);
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
  adam->Apply("w", var, grad, slots, 0);
  CHECK(var[0] == doctest::Approx(0.900000632).epsilon(1e-6));
  grad[0] = -0.25f;
  adam->Apply("w", var, grad, slots, 1);
  CHECK(m[0] == doctest::Approx(0.02));
  CHECK(v[0] == doctest::Approx(0.00031225));
  CHECK(var[0] == doctest::Approx(0.873367079).epsilon(1e-6));
}

TEST_CASE("every element gets the update a variable of that one element would get") {
  // The rules' loops are vectorised (CMakeLists.txt): the vector body and its remainder must
  // compute exactly what the element-by-element formula gives, at every length and position.
  for (const char* name : {"sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad"}) {
    // nesterov for momentum; for rmsprop, momentum and centered.
    for (bool option : {false, true}) {
      OptimizerConfig config{.name = name, .learning_rate = {0.05f, 0.9f, 10, false}};
      config.use_nesterov = option;
      config.centered = option;
      if (config.name == "rmsprop") config.momentum = option ? 0.5f : 0.0f;
      auto opt = Make(config);
      const auto slot_count = static_cast<std::size_t>(opt->slot_count());
      for (std::size_t n : {1u, 3u, 4u, 7u, 8u, 17u, 1003u}) {
        CAPTURE(name);
        CAPTURE(n);
        std::vector<float> var(n), grad(n);
        std::vector<std::vector<float>> slot_data(slot_count, std::vector<float>(n));
        // Slots a real run could hold: RMSprop's velocity (slot 0) above its mean gradient squared.
        for (std::size_t i = 0; i < n; ++i) {
          var[i] = 1.0f + 0.25f * static_cast<float>(i % 13);
          grad[i] = 0.1f * static_cast<float>(static_cast<int>(i % 7) - 3);
          for (std::size_t k = 0; k < slot_count; ++k)
            slot_data[k][i] = 0.01f * static_cast<float>(i % 5 + 1 + k);
        }
        auto single_var = var, single_grad = grad;
        auto single_slots = slot_data;
        std::vector<std::span<float>> slots(slot_data.begin(), slot_data.end());
        for (std::int64_t step : {0, 1, 2}) opt->Apply("w", var, grad, slots, step);
        for (std::size_t i = 0; i < n; ++i) {
          std::vector<std::span<float>> one;
          for (auto& s : single_slots) one.push_back(std::span<float>(s).subspan(i, 1));
          for (std::int64_t step : {0, 1, 2}) {
            opt->Apply("w", std::span<float>(single_var).subspan(i, 1),
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
  config.name = "adadelta";
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
  adam->Apply("w", expected, grad.values(), spans, 0);
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
  absl::Status RmsProp(float rate, float, float mu, float, Tensor&, const Tensor&, Tensor&,
                       Tensor* momentum_slot, Tensor* average_grad) override {
    lr = rate;
    momentum = mu;
    rmsprop_slots = {momentum_slot, average_grad};
    return absl::OkStatus();
  }
  absl::Status Adagrad(float rate, float offset, Tensor&, const Tensor&, Tensor&) override {
    lr = rate;
    adagrad_offset = offset;
    return absl::OkStatus();
  }
  absl::Status Decay(float rate, Tensor&) override {
    decay_rates.push_back(rate);
    return absl::OkStatus();
  }
  absl::Status ClipByGlobalNorm(float clip_norm, std::span<Tensor* const> tensors) override {
    clipped = {clip_norm, static_cast<float>(tensors.size())};
    return absl::OkStatus();
  }
  float lr = 0.0f, momentum = 0.0f, adagrad_offset = 0.0f;
  bool use_nesterov = false;
  std::vector<float> decay_rates;
  std::pair<Tensor*, Tensor*> rmsprop_slots = {nullptr, nullptr};
  std::pair<float, float> clipped = {0.0f, 0.0f};  // clip_norm, tensors
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

TEST_CASE("cosine decay follows tf.keras.optimizers.schedules.CosineDecay") {
  // decayed = (1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha
  const auto lr = LearningRateSchedule::CosineDecay(0.1f, 100, 0.1f);
  REQUIRE(lr.Validate().ok());
  CHECK(lr.At(0) == doctest::Approx(0.1));
  CHECK(lr.At(25) ==
        doctest::Approx(0.1 * (0.9 * 0.5 * (1 + std::cos(std::numbers::pi / 4)) + 0.1)));
  CHECK(lr.At(50) == doctest::Approx(0.055));
  CHECK(lr.At(100) == doctest::Approx(0.01));
  CHECK(lr.At(200) == doctest::Approx(0.01));  // held at alpha * initial
}

TEST_CASE("a warm-up rises linearly to the schedule, which then runs from its own step 0") {
  // Keras 2.13+: CosineDecay(initial_learning_rate=0, decay_steps=100, warmup_target=0.1,
  // warmup_steps=10): (0.1 - 0) * step / 10 + 0 during the warm-up, then the decay from 0.1 on
  // step - 10.
  const auto keras = LearningRateSchedule::CosineDecay(0.0f, 100, 0.0f, 0.1f, 10);
  REQUIRE(keras.Validate().ok());
  CHECK(keras.At(0) == 0.0f);
  CHECK(keras.At(5) == doctest::Approx(0.05));
  CHECK(keras.At(10) == doctest::Approx(0.1));
  CHECK(keras.At(60) == doctest::Approx(0.05));
  CHECK(keras.At(110) == doctest::Approx(0.0));
  CHECK(keras.At(5000) == doctest::Approx(0.0));
  // From warmup_initial, not 0: (0.1 - 0.02) * 4 / 10 + 0.02.
  CHECK(LearningRateSchedule::CosineDecay(0.02f, 100, 0.0f, 0.1f, 10).At(4) ==
        doctest::Approx(0.052));
  // Without a warmup_target Keras ignores warmup_steps.
  CHECK(LearningRateSchedule::CosineDecay(0.1f, 100, 0.0f, std::nullopt, 10).At(0) ==
        doctest::Approx(0.1));
  // In front of any schedule: piecewise values[0] is the target, the boundaries count after it.
  const auto stairs =
      LearningRateSchedule::PiecewiseConstantDecay({5}, {1.0f, 0.5f}).WithWarmup(4, 0.2f);
  REQUIRE(stairs.Validate().ok());
  CHECK(stairs.At(0) == doctest::Approx(0.2));
  CHECK(stairs.At(2) == doctest::Approx(0.6));
  CHECK(stairs.At(4) == 1.0f);
  CHECK(stairs.At(9) == 1.0f);   // schedule step 5: still values[0]
  CHECK(stairs.At(10) == 0.5f);  // schedule step 6
  const auto exponential = LearningRateSchedule::ExponentialDecay(0.1f, 10, 0.5f).WithWarmup(10);
  CHECK(exponential.At(5) == doctest::Approx(0.05));
  CHECK(exponential.At(20) == doctest::Approx(0.05));
}

TEST_CASE("the new schedule fields are checked, naming them") {
  const auto message = [](const LearningRateSchedule& lr) {
    auto made = CreateOptimizer({.name = "sgd", .learning_rate = lr});
    REQUIRE_FALSE(made.ok());
    return std::string(made.status().message());
  };
  CHECK(message(LearningRateSchedule::CosineDecay(0.1f, 0)).find("learning_rate.decay_steps") !=
        std::string::npos);
  CHECK(message(LearningRateSchedule::CosineDecay(0.1f, 10, 1.5f)).find("learning_rate.alpha") !=
        std::string::npos);
  CHECK(message(LearningRateSchedule::Constant(0.1f).WithWarmup(-1))
            .find("learning_rate.warmup_steps") != std::string::npos);
  CHECK(message(LearningRateSchedule::Constant(0.1f).WithWarmup(10, NAN))
            .find("learning_rate.warmup_initial") != std::string::npos);
}

TEST_CASE("adamw decays the variable by lr * weight_decay, then takes Adam's step") {
  // torch.optim.AdamW / Keras AdamW: var -= lr * wd * var; then Adam (TF's epsilon placement).
  // By hand (lr 0.1, wd 0.01, grads 0.5 then -0.25): 0.8990006325, then 0.8714680786.
  auto adamw = Make({.name = "adamw",
                     .learning_rate = LearningRateSchedule::Constant(0.1f),
                     .weight_decay = 0.01f});
  CHECK(adamw->slot_count() == 2);
  std::vector<float> var = {1.0f}, m = {0.0f}, v = {0.0f};
  std::vector<std::span<float>> slots = {m, v};
  std::vector<float> grad = {0.5f};
  adamw->Apply("dense/kernel", var, grad, slots, 0);
  CHECK(var[0] == doctest::Approx(0.8990006325).epsilon(1e-6));
  grad[0] = -0.25f;
  adamw->Apply("dense/kernel", var, grad, slots, 1);
  CHECK(var[0] == doctest::Approx(0.8714680786).epsilon(1e-6));
  // Keras's default weight decay for AdamW; none for the others unless asked.
  CHECK(*Make({.name = "adamw"})->config().weight_decay == doctest::Approx(0.004));
  CHECK(*Make({.name = "adam"})->config().weight_decay == 0.0f);
  CHECK_FALSE(Make({.name = "adam"})->DecaysWeightsOf("dense/kernel"));
}

TEST_CASE("rmsprop follows Keras's RMSprop, with momentum and centered") {
  // By hand, lr 0.01, rho 0.9, epsilon 1e-7, grads 0.5 then -0.25 (velocity ends at 0.02875).
  struct Case {
    float momentum;
    bool centered;
    double expected;
    int slots;
  };
  for (const Case& c : {Case{0.0f, false, 0.983121456617, 1}, Case{0.5f, false, 0.967310099939, 2},
                        Case{0.0f, true, 0.981514561327, 2}, Case{0.5f, true, 0.964847931697, 3}}) {
    CAPTURE(c.momentum);
    CAPTURE(c.centered);
    auto rmsprop = Make({.name = "rmsprop",
                         .learning_rate = LearningRateSchedule::Constant(0.01f),
                         .momentum = c.momentum,
                         .centered = c.centered});
    REQUIRE(rmsprop->slot_count() == c.slots);
    std::vector<float> var = {1.0f};
    std::vector<std::vector<float>> slot_data(static_cast<std::size_t>(c.slots), {0.0f});
    std::vector<std::span<float>> slots(slot_data.begin(), slot_data.end());
    for (float g : {0.5f, -0.25f}) rmsprop->Apply("w", var, std::vector<float>{g}, slots, 0);
    CHECK(var[0] == doctest::Approx(c.expected).epsilon(1e-6));
    CHECK(slot_data[0][0] == doctest::Approx(0.02875));
    if (c.centered) CHECK(slot_data.back()[0] == doctest::Approx(0.02));
  }
  // Keras's default momentum for RMSprop is 0: one slot.
  CHECK(Make({.name = "rmsprop"})->slot_count() == 1);
  CHECK(*Make({.name = "momentum"})->config().momentum == doctest::Approx(0.9));
}

TEST_CASE("adagrad starts its accumulator at initial_accumulator_value, as TF") {
  // By hand, lr 0.1, initial 0.1, epsilon 1e-7: accumulator 0.35 then 0.4125.
  auto adagrad = Make({.name = "adagrad", .learning_rate = LearningRateSchedule::Constant(0.1f)});
  CHECK(adagrad->config().initial_accumulator_value == doctest::Approx(0.1));
  CHECK(adagrad->slot_count() == 1);
  std::vector<float> var = {1.0f}, accum = {0.0f};
  std::vector<std::span<float>> slots = {accum};
  adagrad->Apply("w", var, std::vector<float>{0.5f}, slots, 0);
  CHECK(var[0] == doctest::Approx(0.9154845866).epsilon(1e-6));
  adagrad->Apply("w", var, std::vector<float>{-0.25f}, slots, 1);
  CHECK(var[0] == doctest::Approx(0.9544095291).epsilon(1e-6));
  // The slot holds the accumulator less its initial value, so that it starts at zero.
  CHECK(accum[0] == doctest::Approx(0.3125));
}

TEST_CASE("weight decay skips the variables whose names contain an excluded string") {
  // SGD with a zero gradient: only the decay moves a variable, by lr * wd = 0.01.
  const OptimizerConfig config{.name = "sgd",
                               .learning_rate = LearningRateSchedule::Constant(0.1f),
                               .weight_decay = 0.1f,
                               .exclude_from_weight_decay = {"bias", "LayerNorm"}};
  auto sgd = Make(config);
  CHECK(sgd->DecaysWeightsOf("dense/kernel"));
  CHECK_FALSE(sgd->DecaysWeightsOf("dense/bias"));
  CHECK_FALSE(sgd->DecaysWeightsOf("encoder/LayerNorm/gamma"));
  CHECK(sgd->DecaysWeightsOf("encoder/layernorm/gamma"));  // a substring, case and all
  const std::vector<float> zero = {0.0f, 0.0f};
  std::vector<float> kernel = {1.0f, -2.0f}, bias = {1.0f, -2.0f};
  sgd->Apply("dense/kernel", kernel, zero, {}, 0);
  sgd->Apply("dense/bias", bias, zero, {}, 0);
  CHECK(kernel[0] == doctest::Approx(0.99));
  CHECK(kernel[1] == doctest::Approx(-1.98));
  CHECK(bias == std::vector<float>{1.0f, -2.0f});
  // The same through ApplyTensors (the host's rules on tensors).
  Tensor kernel_tensor({2}, std::vector<float>{1.0f, -2.0f});
  Tensor bias_tensor({2}, std::vector<float>{1.0f, -2.0f});
  const Tensor grad({2});
  REQUIRE(sgd->ApplyTensors("dense/kernel", kernel_tensor, grad, {}, 0).ok());
  REQUIRE(sgd->ApplyTensors("dense/bias", bias_tensor, grad, {}, 0).ok());
  CHECK(kernel_tensor.values()[0] == kernel[0]);
  CHECK(kernel_tensor.values()[1] == kernel[1]);
  CHECK(bias_tensor.values()[0] == 1.0f);

  const auto refused = [](OptimizerConfig bad) {
    auto made = CreateOptimizer(bad);
    REQUIRE_FALSE(made.ok());
    return std::string(made.status().message());
  };
  CHECK(refused({.name = "sgd", .exclude_from_weight_decay = {"bias", ""}})
            .find("exclude_from_weight_decay[1] is empty") != std::string::npos);
  CHECK(refused({.name = "sgd",
                 .exclude_from_weight_decay = {std::string(kMaxExcludedNameBytes + 1, 'x')}})
            .find("exclude_from_weight_decay[0] must be at most") != std::string::npos);
  CHECK(refused(
            {.name = "sgd",
             .exclude_from_weight_decay = std::vector<std::string>(kMaxExcludedNames + 1, "bias")})
            .find("exclude_from_weight_decay may hold at most") != std::string::npos);
  CHECK(refused({.name = "adamw", .weight_decay = -0.1f}).find("weight_decay") !=
        std::string::npos);
}

TEST_CASE("the new optimizers' fields are checked, naming them") {
  const auto refused = [](OptimizerConfig bad) {
    auto made = CreateOptimizer(bad);
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(made.status().message());
  };
  CHECK(refused({.name = "rmsprop", .rho = 1.0f}).find("rho must be in [0, 1)") !=
        std::string::npos);
  CHECK(refused({.name = "rmsprop", .momentum = -0.5f}).find("momentum") != std::string::npos);
  CHECK(refused({.name = "rmsprop", .epsilon = 0.0f}).find("epsilon") != std::string::npos);
  CHECK(refused({.name = "adagrad", .initial_accumulator_value = -1.0f})
            .find("initial_accumulator_value") != std::string::npos);
  CHECK(refused({.name = "adagrad", .epsilon = INFINITY}).find("epsilon") != std::string::npos);
  CHECK(refused({.name = "adamw", .beta2 = 1.0f}).find("beta2") != std::string::npos);
  CHECK(refused({.name = "sgd", .global_clipnorm = -1.0f}).find("global_clipnorm") !=
        std::string::npos);
  CHECK(refused({.name = "sgd", .global_clipnorm = NAN}).find("global_clipnorm") !=
        std::string::npos);
}

TEST_CASE("clipping by global norm scales every gradient by clip / max(norm, clip)") {
  // Two tensors whose elements' squares sum to 3^2 + 4^2 + 12^2 = 13^2.
  Tensor a({2}, std::vector<float>{3.0f, 4.0f}), b({1}, std::vector<float>{12.0f});
  std::vector<Tensor*> both = {&a, &b};
  REQUIRE(Make({.name = "sgd"})->ClipByGlobalNorm(both).ok());  // off: untouched
  CHECK(a.values()[0] == 3.0f);
  auto clip = Make({.name = "sgd", .global_clipnorm = 6.5f});
  REQUIRE(clip->clips());
  REQUIRE(clip->ClipByGlobalNorm(both).ok());
  CHECK(a.values()[0] == 1.5f);
  CHECK(a.values()[1] == 2.0f);
  CHECK(b.values()[0] == 6.0f);
  // Under the limit: unchanged (norm 6.5 against 10).
  auto loose = Make({.name = "sgd", .global_clipnorm = 10.0f});
  REQUIRE(loose->ClipByGlobalNorm(both).ok());
  CHECK(b.values()[0] == 6.0f);
  // A non-finite norm makes every gradient NaN, as tf.clip_by_global_norm does.
  b.values()[0] = INFINITY;
  REQUIRE(loose->ClipByGlobalNorm(both).ok());
  CHECK(std::isnan(a.values()[0]));
  CHECK(std::isnan(b.values()[0]));
}

TEST_CASE("a device's weight decay and clipping run on its registered rules") {
  TestMemory memory;
  DeviceMemory* previous_memory = RegisterDeviceMemory(DeviceType::kCuda, &memory);
  {
    constexpr Device cuda{DeviceType::kCuda, 0};
    Tensor var({4}, cuda), grad({4}, cuda), m({4}, cuda), v({4}, cuda), g2({3}, cuda);
    auto adamw = Make({.name = "adamw",
                       .learning_rate = LearningRateSchedule::Constant(0.5f),
                       .weight_decay = 0.1f,
                       .exclude_from_weight_decay = {"bias"},
                       .global_clipnorm = 2.0f});
    std::vector<Tensor*> both = {&grad, &g2};
    CHECK(adamw->ClipByGlobalNorm(both).message() ==
          "clipping by global norm: the gradients is on cuda:0 but no update rules are registered "
          "for that device type: build with TAAS_WITH_CUDA and link the CUDA engine "
          "(taas::nn_cuda)");
    RecordingRules rules;
    DeviceUpdateRules* previous_rules = RegisterDeviceUpdateRules(DeviceType::kCuda, &rules);
    std::vector<Tensor*> moments = {&m, &v};
    REQUIRE(adamw->ApplyTensors("dense/kernel", var, grad, moments, 0).ok());
    REQUIRE(adamw->ApplyTensors("dense/bias", var, grad, moments, 0).ok());
    REQUIRE(rules.decay_rates.size() == 1);  // the kernel's only
    CHECK(rules.decay_rates[0] == doctest::Approx(0.05));
    REQUIRE(adamw->ClipByGlobalNorm(both).ok());
    CHECK(rules.clipped == std::pair<float, float>{2.0f, 2.0f});
    Tensor on_host({3});
    std::vector<Tensor*> mixed = {&grad, &on_host};
    CHECK(adamw->ClipByGlobalNorm(mixed).code() == absl::StatusCode::kInvalidArgument);

    auto rmsprop = Make({.name = "rmsprop", .momentum = 0.5f});
    std::vector<Tensor*> two = {&m, &v};
    REQUIRE(rmsprop->ApplyTensors("w", var, grad, two, 0).ok());
    CHECK(rules.rmsprop_slots == std::pair<Tensor*, Tensor*>{&v, nullptr});
    auto centered = Make({.name = "rmsprop", .centered = true});
    REQUIRE(centered->ApplyTensors("w", var, grad, two, 0).ok());
    CHECK(rules.rmsprop_slots == std::pair<Tensor*, Tensor*>{nullptr, &v});
    auto adagrad = Make({.name = "adagrad", .learning_rate = LearningRateSchedule::Constant(0.3f)});
    std::vector<Tensor*> one = {&m};
    REQUIRE(adagrad->ApplyTensors("w", var, grad, one, 0).ok());
    CHECK(rules.lr == doctest::Approx(0.3));
    CHECK(rules.adagrad_offset == doctest::Approx(0.1 + 1e-7));
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
