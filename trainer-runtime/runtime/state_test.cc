// State that is not trained (ModelBuilder::AddState): registered beside the variables, kept,
// checkpointed and restored by the chief, the evaluator, LocalModel and a warm start, and never
// trained (docs/trainer-runtime.md, "State that is not trained").
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "taas/runtime/local.h"

namespace taas {
namespace {

// One trainable weight and, as state, a running mean of the batches train() sees (BatchNorm's
// running statistics in miniature) and a frozen offset.
class RunningMeanModel final : public DistModel {
 public:
  explicit RunningMeanModel(std::string state_name = "mean") { mean_.name = std::move(state_name); }

  absl::Status build_model(ModelBuilder& builder) override {
    builder.AddVariable(&weight_);
    builder.AddStates({&mean_, &frozen_});
    builder.SetBatchSize(1);
    return absl::OkStatus();
  }

  StepResult train(Session& session) override {
    // The batch of step s is the value s + 1; the running mean moves 10% of the way to it.
    const auto batch = static_cast<float>(session.global_step() + 1);
    mean_.value.data()[0] = 0.9f * mean_.value.data()[0] + 0.1f * batch;
    weight_.gradient.data()[0] = weight_.value.data()[0] - batch;
    return StepResult();
  }

  Variable weight_{"weight", Tensor({1}), Tensor({1})};
  Variable mean_{"mean", Tensor({1}), Tensor()};
  Variable frozen_{"frozen", Tensor({2}, std::vector<float>{3, 4}), Tensor()};
};

TEST_CASE("state is registered beside the variables and seen through Session::state()") {
  auto built = LocalModel::Build([] { return std::make_unique<RunningMeanModel>(); });
  REQUIRE(built.ok());
  const auto& state = (*built)->session().state();
  REQUIRE(state.size() == 2);
  CHECK(state[0]->name == "mean");
  CHECK(state[1]->value.values()[1] == 4.0f);
  REQUIRE((*built)->variables().size() == 1);  // state is not a variable: never trained
}

TEST_CASE("a state whose name clashes with a variable's is an error at build time") {
  auto built = LocalModel::Build([] { return std::make_unique<RunningMeanModel>("weight"); });
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(built.status().message().find("state weight: the name is registered twice") !=
        std::string::npos);
}

}  // namespace
}  // namespace taas
