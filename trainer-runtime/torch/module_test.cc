#include "taas/torch/module.h"

#include <doctest/doctest.h>
#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "taas/runtime/local.h"
#include "taas/testing/testing.h"

namespace taas::torch_engine {
namespace {

// Linear -> BatchNorm -> ReLU -> Linear: trained parameters, running statistics (state) and an
// integer buffer (num_batches_tracked).
struct TinyImpl : ::torch::nn::Module {
  TinyImpl() {
    ::torch::manual_seed(7);
    fc1 = register_module("fc1", ::torch::nn::Linear(4, 3));
    bn = register_module("bn", ::torch::nn::BatchNorm1d(3));
    fc2 = register_module("fc2", ::torch::nn::Linear(3, 2));
  }
  ::torch::Tensor forward(const ::torch::Tensor& x) {
    return fc2->forward(::torch::relu(bn->forward(fc1->forward(x))));
  }
  ::torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  ::torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(Tiny);

::torch::Tensor Inputs() { return ::torch::linspace(-1.0, 1.0, 32).reshape({8, 4}); }
::torch::Tensor Targets() { return ::torch::tensor({0, 1, 1, 0, 1, 0, 0, 1}, ::torch::kInt64); }

// A model around Tiny; `prepare` changes the module before it is bound, `misbehave` does
// something inside train() after backward.
class TinyModel : public DistModel {
 public:
  using Hook = std::function<void(Tiny&)>;
  explicit TinyModel(Hook prepare = {}, Hook misbehave = {})
      : prepare_(std::move(prepare)), misbehave_(std::move(misbehave)) {}

  absl::Status build_model(ModelBuilder& builder) override {
    if (prepare_) prepare_(net);
    TAAS_ASSIGN_OR_RETURN(bound, BoundModule::Bind(builder, *net));
    optim::OptimizerConfig sgd;
    sgd.learning_rate = optim::LearningRateSchedule::Constant(0.1f);
    builder.SetOptimizer(sgd);
    builder.SetBatchSize(8);
    return absl::OkStatus();
  }
  StepResult train(Session&) override {
    ::torch::Tensor loss =
        ::torch::nn::functional::cross_entropy(net->forward(Inputs()), Targets());
    loss.backward();
    if (misbehave_) misbehave_(net);
    return bound->Result(loss, 8);
  }

  Tiny net;
  std::unique_ptr<BoundModule> bound;

 private:
  Hook prepare_, misbehave_;
};

ModelFactory Factory(TinyModel::Hook prepare = {}, TinyModel::Hook misbehave = {}) {
  return [=] { return std::make_unique<TinyModel>(prepare, misbehave); };
}

TinyModel& ModelOf(LocalModel& local) { return static_cast<TinyModel&>(local.model()); }

std::vector<std::string> Names(const std::vector<Variable*>& variables) {
  std::vector<std::string> names;
  for (const Variable* v : variables) names.push_back(v->name);
  return names;
}

// Counts the runtime's "gradient final" calls per variable.
struct CountingListener : GradientListener {
  void GradientReady(const Variable& variable) override { ++ready[variable.name]; }
  std::map<std::string, int> ready;
};

TEST_CASE("a bound module's parameters and gradients are the runtime's buffers") {
  auto local = LocalModel::Build(Factory());
  REQUIRE(local.ok());
  TinyModel& model = ModelOf(**local);
  const std::vector<Variable*>& variables = (*local)->variables();
  CHECK(Names(variables) == std::vector<std::string>{"fc1.weight", "fc1.bias", "bn.weight",
                                                     "bn.bias", "fc2.weight", "fc2.bias"});
  CHECK(Names(model.bound->states()) ==
        std::vector<std::string>{"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"});
  REQUIRE(local.value()->Train().ok());
  std::size_t i = 0;
  for (const auto& item : model.net->named_parameters()) {
    CAPTURE(item.key());
    CHECK(item.value().data_ptr() == static_cast<void*>(variables[i]->value.data()));
    CHECK(item.value().grad().data_ptr() == static_cast<void*>(variables[i]->gradient.data()));
    ++i;
  }

  // The same step by plain LibTorch: the runtime's gradient buffers hold exactly its gradients.
  Tiny plain;
  {
    ::torch::NoGradGuard no_grad;
    i = 0;
    for (auto& p : plain->parameters()) {
      p.copy_(::torch::from_blob(variables[i]->value.data(), p.sizes()));
      ++i;
    }
  }
  ::torch::nn::functional::cross_entropy(plain->forward(Inputs()), Targets()).backward();
  i = 0;
  for (const auto& item : plain->named_parameters()) {
    CAPTURE(item.key());
    CHECK(::torch::equal(item.value().grad(),
                         ::torch::from_blob(variables[i]->gradient.data(), item.value().sizes())));
    ++i;
  }
}

TEST_CASE("a module's outputs reach predict as a view of them, and another tensor is refused") {
  auto local = LocalModel::Build(Factory());
  REQUIRE(local.ok());
  TinyModel& model = ModelOf(**local);
  ::torch::Tensor logits = model.net->forward(Inputs()).detach();
  auto outputs = model.bound->Outputs(logits);
  REQUIRE_MESSAGE(outputs.ok(), outputs.status().message());
  CHECK(outputs->shape() == Shape{8, 2});
  CHECK(outputs->is_view());
  CHECK(outputs->data() == logits.data_ptr<float>());  // contiguous already: no copy
  // A transposed (non-contiguous) tensor is made contiguous and kept alive by the binding.
  auto transposed = model.bound->Outputs(logits.t());
  REQUIRE(transposed.ok());
  CHECK(transposed->shape() == Shape{2, 8});
  CHECK(transposed->values()[1] == logits[1][0].item<float>());
  for (const ::torch::Tensor& bad :
       {logits.to(::torch::kFloat64), logits.reshape({2, 2, 4}), ::torch::Tensor()}) {
    auto refused = model.bound->Outputs(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(refused.status().message())
              .find("return float32 [batch] or [batch, k] on the replica's device") !=
          std::string::npos);
  }
}

TEST_CASE("each gradient is marked final once per step, and zeroed before the next") {
  auto local = LocalModel::Build(Factory());
  REQUIRE(local.ok());
  CountingListener listener;
  for (Variable* v : (*local)->variables()) v->listener = &listener;
  REQUIRE(local.value()->Train().ok());
  for (Variable* v : (*local)->variables()) CHECK(listener.ready[v->name] == 1);
  std::vector<std::vector<float>> first;
  for (Variable* v : (*local)->variables()) {
    first.emplace_back(v->gradient.values().begin(), v->gradient.values().end());
  }
  // The values did not change (no update between): the second step's gradients are the same,
  // not twice the first (autograd adds into them; the binding zeroes them before each step).
  // BatchNorm's running statistics moved, but training mode normalises by the batch's own.
  REQUIRE(local.value()->Train().ok());
  for (std::size_t i = 0; i < first.size(); ++i) {
    const auto& v = *(*local)->variables()[i];
    CAPTURE(v.name);
    CHECK(std::vector<float>(v.gradient.values().begin(), v.gradient.values().end()) == first[i]);
    CHECK(listener.ready[v.name] == 2);
  }
}

TEST_CASE("buffers and frozen parameters are state, updated in place and kept as float32") {
  auto local = LocalModel::Build(Factory([](Tiny& net) {
    net->fc1->weight.set_requires_grad(false);
    net->fc1->bias.set_requires_grad(false);
  }));
  REQUIRE(local.ok());
  TinyModel& model = ModelOf(**local);
  CHECK(Names((*local)->variables()) ==
        std::vector<std::string>{"bn.weight", "bn.bias", "fc2.weight", "fc2.bias"});
  CHECK(Names(model.bound->states()) ==
        std::vector<std::string>{"fc1.weight", "fc1.bias", "bn.running_mean", "bn.running_var",
                                 "bn.num_batches_tracked"});
  REQUIRE(local.value()->Train().ok());
  REQUIRE(local.value()->Train().ok());
  const std::vector<Variable*> states = model.bound->states();
  CHECK(states[2]->value.data() == model.net->bn->running_mean.data_ptr<float>());
  CHECK(states[4]->value.values()[0] == 2.0f);  // the count of batches, as float32
  // A restored count reaches the module's own int64 buffer before the next step.
  states[4]->value.values()[0] = 41.0f;
  REQUIRE(local.value()->Train().ok());
  CHECK(model.net->bn->num_batches_tracked.item<std::int64_t>() == 42);
}

TEST_CASE("a module the runtime cannot keep is an error naming the tensor and the fix") {
  SUBCASE("a float64 parameter") {
    auto local = LocalModel::Build(Factory([](Tiny& net) { net->to(::torch::kFloat64); }));
    REQUIRE_FALSE(local.ok());
    CHECK(local.status().message().find("parameter fc1.weight is Double") != std::string::npos);
    CHECK(local.status().message().find("torch::kFloat32") != std::string::npos);
  }
  SUBCASE("a parameter on another device") {
    struct OnMeta : ::torch::nn::Module {
      OnMeta() { register_parameter("w", ::torch::zeros({3, 4}, ::torch::kMeta)); }
    };
    auto local = LocalModel::Build(
        Factory([](Tiny& net) { net->register_module("odd", std::make_shared<OnMeta>()); }));
    REQUIRE_FALSE(local.ok());
    INFO(local.status().message());
    CHECK(local.status().message().find("parameter odd.w is Float [3, 4] on meta, not on cpu: "
                                        "move the module") != std::string::npos);
  }
  SUBCASE("a parameter replaced after build_model") {
    auto local = LocalModel::Build(Factory({}, [](Tiny& net) {
      net->fc2->weight.set_data(::torch::zeros({2, 3}));
    }));
    REQUIRE(local.ok());
    auto step = local.value()->Train();
    REQUIRE_FALSE(step.ok());
    INFO(step.status().message());
    CHECK(step.status().message().find("parameter fc2.weight was replaced") != std::string::npos);
  }
  SUBCASE("a parameter that changed shape after build_model") {
    auto local = LocalModel::Build(
        Factory({}, [](Tiny& net) { net->fc2->bias.set_data(::torch::zeros({5})); }));
    REQUIRE(local.ok());
    auto step = local.value()->Train();
    REQUIRE_FALSE(step.ok());
    INFO(step.status().message());
    CHECK(step.status().message().find("parameter fc2.bias was replaced (now Float [5] on cpu, "
                                       "bound as [2])") != std::string::npos);
  }
  SUBCASE("a parameter registered after build_model") {
    auto local = LocalModel::Build(
        Factory({}, [](Tiny& net) { net->register_parameter("late", ::torch::zeros({1})); }));
    REQUIRE(local.ok());
    auto step = local.value()->Train();
    REQUIRE_FALSE(step.ok());
    INFO(step.status().message());
    CHECK(step.status().message().find("register every parameter and buffer before build_model "
                                       "returns") != std::string::npos);
  }
  SUBCASE("zero_grad in train() drops the runtime's gradient buffers") {
    auto local = LocalModel::Build(Factory({}, [](Tiny& net) { net->zero_grad(); }));
    REQUIRE(local.ok());
    auto step = local.value()->Train();
    REQUIRE_FALSE(step.ok());
    CHECK(step.status().message().find("do not call zero_grad") != std::string::npos);
  }
  SUBCASE("a torch exception in train() is the model's failure, with its message") {
    auto local = LocalModel::Build(Factory({}, [](Tiny& net) {
      (void)net->fc1->forward(::torch::ones({2, 5}));  // 5 inputs into a Linear of 4
    }));
    REQUIRE(local.ok());
    auto step = local.value()->Train();
    REQUIRE_FALSE(step.ok());
    CHECK(step.status().message().find("train() threw") != std::string::npos);
    CHECK(step.status().message().find("mat1 and mat2 shapes cannot be multiplied") !=
          std::string::npos);
    // LibTorch's C++ backtrace is for its developers, not in the model's error line.
    CHECK(step.status().message().find("frame #0") == std::string::npos);
  }
}

TEST_CASE("the runtime trains a bound module, deterministically") {
  auto first = testing::RunSteps(Factory(), 30);
  REQUIRE(first.ok());
  CHECK(first->losses.back() < first->losses.front() * 0.8f);
  auto second = testing::RunSteps(Factory(), 30);
  REQUIRE(second.ok());
  CHECK(first->variables == second->variables);
}

}  // namespace
}  // namespace taas::torch_engine
