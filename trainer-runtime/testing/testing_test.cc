#include "taas/testing/testing.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <random>

#include "taas/checkpoint/checkpoint.h"
#include "taas/runtime/warm_start.h"

namespace taas::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kFeatures = 3;
constexpr int kBatch = 16;

// Logistic regression on synthetic data, gradients by hand. Each step's batch depends only on
// the global step (or, with `from_counter`, on how often train() ran: not deterministic across
// calls at one step). `bias_gradient_scale` != 1 writes a wrong bias gradient; `hidden_state`
// makes evaluate() depend on a value outside the registered variables, or, with
// `register_hidden`, on registered state (ModelBuilder::AddState) starting at that value;
// `hidden_is_variance` reads that state as BatchNorm reads a running variance (its square root).
struct Logistic : DistModel {
  float bias_gradient_scale = 1.0f;
  bool from_counter = false;
  std::int64_t counter = 0;
  float hidden_state = 0.0f;
  bool register_hidden = false;
  bool hidden_is_variance = false;
  Variable hidden{"logistic/hidden", Tensor({1}), Tensor()};
  std::string name_prefix = "logistic";
  float lr = 0.5f;
  Variable w, b;

  absl::Status build_model(ModelBuilder& builder) override {
    w = {name_prefix + "/w", Tensor({kFeatures}), Tensor({kFeatures})};
    b = {name_prefix + "/b", Tensor({1}), Tensor({1})};
    for (int i = 0; i < kFeatures; ++i) w.value.data()[i] = 0.1f * static_cast<float>(i + 1);
    builder.AddVariables({&w, &b});
    if (register_hidden) {
      hidden.value.data()[0] = hidden_state;
      builder.AddState(&hidden);
    }
    optim::OptimizerConfig sgd;
    sgd.learning_rate.initial = lr;
    builder.SetOptimizer(sgd);
    builder.SetBatchSize(kBatch);
    return absl::OkStatus();
  }

  StepResult train(Session& session) override {
    const std::int64_t seed = from_counter ? counter++ : session.global_step();
    std::mt19937 rng(static_cast<std::uint32_t>(seed * 7919 + 3));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    double loss = 0, gw[kFeatures] = {}, gb = 0;
    for (int n = 0; n < kBatch; ++n) {
      float x[kFeatures];
      double z = b.value.data()[0], truth = 0.3;
      for (int i = 0; i < kFeatures; ++i) {
        x[i] = normal(rng);
        z += w.value.data()[i] * x[i];
        truth += (i - 1.0) * x[i];
      }
      const double y = truth > 0 ? 1.0 : -1.0;
      loss += std::log1p(std::exp(-y * z));
      const double dz = -y / (1.0 + std::exp(y * z));
      for (int i = 0; i < kFeatures; ++i) gw[i] += dz * x[i];
      gb += dz;
    }
    for (int i = 0; i < kFeatures; ++i) w.gradient.data()[i] = static_cast<float>(gw[i] / kBatch);
    b.gradient.data()[0] = static_cast<float>(gb / kBatch * bias_gradient_scale);
    StepResult result;
    result.loss = static_cast<float>(loss / kBatch);
    return result;
  }

  absl::StatusOr<std::map<std::string, double>> evaluate(Session&) override {
    const float kept = register_hidden ? hidden.value.data()[0] : hidden_state;
    return std::map<std::string, double>{
        {"w0_plus_hidden", w.value.data()[0] + (hidden_is_variance ? std::sqrt(kept) : kept)}};
  }
};

template <class Configure>
ModelFactory Factory(Configure configure) {
  return [configure] {
    auto model = std::make_unique<Logistic>();
    configure(*model);
    return std::unique_ptr<DistModel>(std::move(model));
  };
}
ModelFactory Plain() {
  return Factory([](Logistic&) {});
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "taas-testing-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST_CASE("CheckGradients: hand-written gradients agree with finite differences") {
  auto check = CheckGradients(Plain());
  REQUIRE_MESSAGE(check.ok(), check.status().ToString());
  REQUIRE(check->variables.size() == 2);
  CHECK(check->variables[0].name == "logistic/w");
  CHECK(check->variables[0].elements_checked == kFeatures);
  CHECK(check->variables[1].elements_checked == 1);
  CHECK(check->loss > 0.0f);
  CHECK_MESSAGE(check->Within(1e-2).ok(), check->Within(1e-2).ToString());
  CHECK(check->max_rel_error() < 1e-2);
}

TEST_CASE("CheckGradients: a wrong gradient is caught and named") {
  auto check = CheckGradients(Factory([](Logistic& m) { m.bias_gradient_scale = 2.0f; }));
  REQUIRE(check.ok());
  CHECK(check->variables[0].max_rel_error < 1e-2);  // w's gradient is still right
  CHECK(check->variables[1].max_rel_error > 0.3);
  absl::Status within = check->Within(1e-2);
  REQUIRE_FALSE(within.ok());
  CHECK(std::string(within.message()).find("logistic/b element 0") != std::string::npos);
}

TEST_CASE("CheckGradients: a sample of each large variable, the same one every run") {
  GradientCheckOptions options;
  options.max_elements_per_variable = 2;
  auto first = CheckGradients(Plain(), options);
  auto second = CheckGradients(Plain(), options);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first->variables[0].elements_checked == 2);
  CHECK(first->variables[0].worst_index == second->variables[0].worst_index);
  CHECK(first->variables[0].max_rel_error == second->variables[0].max_rel_error);
}

TEST_CASE("CheckGradients: a model whose batch changes every call is reported as such") {
  auto check = CheckGradients(Factory([](Logistic& m) { m.from_counter = true; }));
  REQUIRE_FALSE(check.ok());
  CHECK(check.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(check.status().message()).find("not deterministic") != std::string::npos);
  // Rewinding its input before every call makes it checkable.
  GradientCheckOptions options;
  options.before_train = [](DistModel& model) { static_cast<Logistic&>(model).counter = 0; };
  auto rewound = CheckGradients(Factory([](Logistic& m) { m.from_counter = true; }), options);
  REQUIRE_MESSAGE(rewound.ok(), rewound.status().ToString());
  CHECK(rewound->Within(1e-2).ok());
  GradientCheckOptions bad;
  bad.epsilon = 0;
  CHECK(CheckGradients(Plain(), bad).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("RunSteps: the loss falls, and two runs are bit for bit the same") {
  auto first = RunSteps(Plain(), 30);
  REQUIRE_MESSAGE(first.ok(), first.status().ToString());
  CHECK(first->losses.size() == 30);
  CHECK(first->global_step == 30);
  CHECK(first->losses.back() < first->losses.front());
  REQUIRE(first->variables.count("logistic/w") == 1);
  auto second = RunSteps(Plain(), 30);
  REQUIRE(second.ok());
  CHECK(second->losses == first->losses);
  CHECK(second->variables == first->variables);
}

TEST_CASE("RunSteps: several model replicas in the one worker, the first one recorded") {
  RunStepsOptions options;
  options.flags = {"--replicas_per_worker=2"};
  auto two = RunSteps(Plain(), 5, options);
  REQUIRE_MESSAGE(two.ok(), two.status().ToString());
  CHECK(two->losses.size() == 5);
  // Both replicas train on the same batch here, so their mean gradient is one replica's.
  auto one = RunSteps(Plain(), 5);
  REQUIRE(one.ok());
  CHECK(two->variables == one->variables);
  options.flags = {"--strategy=parameter_server"};
  CHECK(RunSteps(Plain(), 5, options).status().code() == absl::StatusCode::kInternal);
}

TEST_CASE("RunSteps: one step applies the model's optimizer to train()'s gradients") {
  auto local = LocalModel::Build(Plain());
  REQUIRE(local.ok());
  REQUIRE((*local)->Train().ok());
  const float lr = (*local)->optimizer().learning_rate.initial;
  auto ran = RunSteps(Plain(), 1);
  REQUIRE(ran.ok());
  for (const Variable* v : (*local)->variables()) {
    const auto& after = ran->variables.at(v->name);
    for (std::int64_t i = 0; i < v->value.size(); ++i) {
      CHECK(after[static_cast<std::size_t>(i)] == v->value.data()[i] - lr * v->gradient.data()[i]);
    }
  }
}

TEST_CASE("RunSteps: checkpoints into a model dir, and a warm start from it") {
  TempDir dir;
  RunStepsOptions options;
  options.model_dir = dir.path;
  options.save_checkpoints_steps = 5;
  auto trained = RunSteps(Plain(), 12, options);
  REQUIRE_MESSAGE(trained.ok(), trained.status().ToString());
  CHECK(checkpoint::LatestStep(dir.path) == std::optional<std::int64_t>(12));
  CHECK(checkpoint::ListCheckpoints(dir.path).size() == 3);  // 5, 10 and the final 12
  // The same dir again: that run is over, and RunSteps says so instead of returning nothing.
  auto again = RunSteps(Plain(), 12, options);
  REQUIRE_FALSE(again.ok());
  CHECK(std::string(again.status().message()).find("already finished") != std::string::npos);

  // A new job (other names) warm-started from it: with a learning rate of 0 its one step keeps
  // the copied values.
  auto warm = RunSteps(Factory([&](Logistic& m) {
                         m.name_prefix = "new";
                         m.lr = 0.0f;
                       }),
                       1);
  REQUIRE(warm.ok());
  CHECK(warm->variables.at("new/w") != trained->variables.at("logistic/w"));
  struct WarmStarted : Logistic {
    std::string from;
    InitFn get_init_fn() override {
      return WarmStart(
          {.ckpt_to_initialize_from = from,
           .var_name_to_prev_var_name = {{"new/w", "logistic/w"}, {"new/b", "logistic/b"}}});
    }
  };
  auto started = RunSteps(
      [&] {
        auto model = std::make_unique<WarmStarted>();
        model->name_prefix = "new";
        model->lr = 0.0f;
        model->from = dir.path;
        return std::unique_ptr<DistModel>(std::move(model));
      },
      1);
  REQUIRE_MESSAGE(started.ok(), started.status().ToString());
  CHECK(started->variables.at("new/w") == trained->variables.at("logistic/w"));
  CHECK(started->variables.at("new/b") == trained->variables.at("logistic/b"));
}

TEST_CASE("RunSteps: a failing model is an error quoting the trainer's error line") {
  struct Failing : Logistic {
    StepResult train(Session& session) override {
      StepResult result = Logistic::train(session);
      if (session.global_step() == 3) result.error = absl::InvalidArgumentError("bad batch 3");
      return result;
    }
  };
  auto failed = RunSteps([] { return std::unique_ptr<DistModel>(new Failing()); }, 10);
  REQUIRE_FALSE(failed.ok());
  const std::string message(failed.status().message());
  CHECK(message.find("exited with code 3") != std::string::npos);
  CHECK(message.find("bad batch 3") != std::string::npos);
  CHECK(RunSteps(Plain(), 0).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("CheckpointRoundTrip: variables survive bit for bit; unstable names do not") {
  absl::Status ok = CheckpointRoundTrip(Plain(), {.compare_evaluate = true});
  CHECK_MESSAGE(ok.ok(), ok.ToString());

  auto instances = std::make_shared<std::atomic<int>>(0);
  absl::Status renamed = CheckpointRoundTrip(Factory(
      [instances](Logistic& m) { m.name_prefix = "instance" + std::to_string((*instances)++); }));
  REQUIRE_FALSE(renamed.ok());
  CHECK(std::string(renamed.message()).find("instance0/w") != std::string::npos);
  CHECK(std::string(renamed.message()).find("instance1/w") != std::string::npos);

  auto hidden = std::make_shared<std::atomic<int>>(0);
  absl::Status state = CheckpointRoundTrip(
      Factory([hidden](Logistic& m) { m.hidden_state = static_cast<float>((*hidden)++); }),
      {.compare_evaluate = true});
  REQUIRE_FALSE(state.ok());
  CHECK(std::string(state.message()).find("outside its registered variables") != std::string::npos);

  // Registered, the same value is checkpointed and restored, and RunSteps reports it.
  auto registered = Factory([hidden](Logistic& m) {
    m.hidden_state = static_cast<float>((*hidden)++);
    m.register_hidden = true;
  });
  absl::Status kept = CheckpointRoundTrip(registered, {.compare_evaluate = true});
  CHECK_MESSAGE(kept.ok(), kept.ToString());
  auto ran = RunSteps(registered, 2);
  REQUIRE(ran.ok());
  REQUIRE(ran->state.contains("logistic/hidden"));
  CHECK(ran->state.at("logistic/hidden").size() == 1);

  // State read as a variance gets a value a variance can have: evaluate() is a number (not NaN,
  // which equals nothing) and the same after the restore.
  absl::Status variance = CheckpointRoundTrip(Factory([](Logistic& m) {
                                                m.hidden_state = 1.0f;
                                                m.register_hidden = true;
                                                m.hidden_is_variance = true;
                                              }),
                                              {.compare_evaluate = true});
  CHECK_MESSAGE(variance.ok(), variance.ToString());

  // State whose name changes between instances is caught as a variable's is.
  auto names = std::make_shared<std::atomic<int>>(0);
  absl::Status unstable = CheckpointRoundTrip(Factory([names](Logistic& m) {
    m.hidden.name = "hidden" + std::to_string((*names)++);
    m.register_hidden = true;
  }));
  REQUIRE_FALSE(unstable.ok());
  CHECK(std::string(unstable.message()).find("hidden0 [1] then hidden1 [1]") != std::string::npos);
}

}  // namespace
}  // namespace taas::testing
