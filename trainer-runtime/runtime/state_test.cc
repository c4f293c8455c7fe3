// State that is not trained (ModelBuilder::AddState): registered beside the variables, kept,
// checkpointed and restored by the chief, LocalModel and a warm start, and never trained
// (docs/trainer-runtime.md, "State that is not trained"). The evaluator, all-reduce across
// workers and the parameter servers: launcher/multiprocess_test.py (allreduce_state, ps_state,
// ps_state_reset).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "taas/checkpoint/checkpoint.h"
#include "taas/runtime/local.h"
#include "taas/runtime/warm_start.h"
#include "testing/temp_dir.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

using runtime_testing::TempDir;

// The state as after_train saw it (the first replica's), and the frozen pair each model replica
// of the worker saw at its first train().
struct Seen {
  std::vector<float> mean, frozen;
  std::vector<float> frozen_at_start[2];
};

// One trainable weight and, as state, a running mean of the batches train() sees (BatchNorm's
// running statistics in miniature) and a frozen pair that only an init fn or a restore sets.
class RunningMeanModel final : public DistModel {
 public:
  explicit RunningMeanModel(Seen* seen = nullptr, std::string state_name = "mean",
                            InitFn init_fn = {})
      : seen_(seen), init_fn_(std::move(init_fn)) {
    mean_.name = std::move(state_name);
  }

  absl::Status build_model(ModelBuilder& builder) override {
    builder.AddVariable(&weight_);
    builder.AddStates({&mean_, &frozen_});
    builder.SetBatchSize(1);
    return absl::OkStatus();
  }

  InitFn get_init_fn() override { return init_fn_; }

  StepResult train(Session& session) override {
    // The batch of step s is the value s + 1; the running mean moves 10% of the way to it.
    const int replica = session.info().replica_in_worker;
    if (seen_ != nullptr && replica < 2 && seen_->frozen_at_start[replica].empty()) {
      // Each replica's own slot: the replicas' threads never write the same one.
      seen_->frozen_at_start[replica].assign(frozen_.value.values().begin(),
                                             frozen_.value.values().end());
    }
    const auto batch = static_cast<float>(session.global_step() + 1);
    mean_.value.data()[0] = 0.9f * mean_.value.data()[0] + 0.1f * batch;
    weight_.gradient.data()[0] = weight_.value.data()[0] - batch;
    return StepResult();
  }

  void after_train(Session& session, bool) override {
    if (seen_ == nullptr) return;
    const auto& state = session.state();
    seen_->mean.assign(state[0]->value.values().begin(), state[0]->value.values().end());
    seen_->frozen.assign(state[1]->value.values().begin(), state[1]->value.values().end());
  }

 private:
  Seen* seen_;
  InitFn init_fn_;
  Variable weight_{"weight", Tensor({1}), Tensor({1})};
  Variable mean_{"mean", Tensor({1}), Tensor()};
  Variable frozen_{"frozen", Tensor({2}, std::vector<float>{3, 4}), Tensor()};
};

// Trains to `steps` in `model_dir` (resuming from its checkpoint); the exit code, what
// after_train saw and the log.
struct Trained {
  int code = -1;
  Seen seen;
  std::string log;
};
Trained Train(const std::string& model_dir, std::int64_t steps, InitFn init_fn = {},
              int replicas = 1) {
  Trained trained;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  trained.code = RunLocalTraining(
      {"--max_steps=" + std::to_string(steps), "--model_dir=" + model_dir,
       "--save_checkpoints_secs=0", "--replicas_per_worker=" + std::to_string(replicas)},
      [&] { return std::make_unique<RunningMeanModel>(&trained.seen, "mean", init_fn); },
      log.get());
  std::rewind(log.get());
  char line[4096];
  while (std::fgets(line, sizeof(line), log.get()) != nullptr) trained.log += line;
  return trained;
}

std::vector<float> Entry(const std::string& model_dir, const std::string& name) {
  std::vector<std::string> skipped;
  auto saved = checkpoint::LoadLatest(model_dir, &skipped);
  REQUIRE(saved.ok());
  REQUIRE(saved->has_value());
  const checkpoint::Entry* entry = (*saved)->Find(name);
  REQUIRE(entry != nullptr);
  return entry->values;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

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
  auto built =
      LocalModel::Build([] { return std::make_unique<RunningMeanModel>(nullptr, "weight"); });
  REQUIRE_FALSE(built.ok());
  CHECK(built.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(built.status().message().find("state weight: the name is registered twice") !=
        std::string::npos);
}

TEST_CASE("running statistics survive a checkpoint and resume") {
  TempDir dir("state");
  Trained first = Train(dir.Sub("resumed"), 6);
  REQUIRE_MESSAGE(first.code == 0, first.log);
  REQUIRE(first.seen.mean.size() == 1);
  CHECK(first.seen.mean[0] > 0.0f);
  // The chief's state is in its checkpoint beside the variables.
  CHECK(Entry(dir.Sub("resumed"), "mean") == first.seen.mean);
  CHECK(Entry(dir.Sub("resumed"), "frozen") == std::vector<float>{3, 4});

  Trained resumed = Train(dir.Sub("resumed"), 12);
  Trained straight = Train(dir.Sub("straight"), 12);
  REQUIRE_MESSAGE(resumed.code == 0, resumed.log);
  REQUIRE(straight.code == 0);
  CHECK(resumed.log.find("restoring variables from checkpoint") != std::string::npos);
  CHECK(resumed.seen.mean == straight.seen.mean);  // bit for bit: the statistics went on
  CHECK(Count(resumed.log, "holds no entry for some state") == 0);
}

TEST_CASE("a checkpoint without state restores with one warning; another size is an error") {
  TempDir dir("state");
  // A checkpoint written before the model registered its state: the variable alone.
  REQUIRE(checkpoint::Save(dir.Sub("old"), 5, {{"weight", {0.5f}}}, 5).ok());
  Trained resumed = Train(dir.Sub("old"), 7);
  REQUIRE_MESSAGE(resumed.code == 0, resumed.log);
  CHECK(Count(resumed.log, "holds no entry for some state") == 1);
  CHECK(resumed.log.find("state=mean,frozen") != std::string::npos);
  CHECK(resumed.seen.frozen == std::vector<float>{3, 4});  // build_model's values
  // Steps 5 and 6 from a mean of 0: 0.1 * 6, then 0.9 * 0.6 + 0.1 * 7.
  CHECK(resumed.seen.mean[0] == doctest::Approx(0.9 * 0.6 + 0.7));

  auto local = LocalModel::Build([] { return std::make_unique<RunningMeanModel>(); });
  REQUIRE(local.ok());
  CHECK((*local)->RestoreCheckpoint(dir.Sub("old")).ok());

  REQUIRE(checkpoint::Save(dir.Sub("other"), 5, {{"weight", {0.5f}}, {"mean", {1, 2}}}, 5).ok());
  const std::string expected = "state mean is [2] in the checkpoint, [1] in the model";
  const absl::Status restored = (*local)->RestoreCheckpoint(dir.Sub("other"));
  CHECK(restored.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(restored.message()).find(expected) != std::string::npos);
  Trained refused = Train(dir.Sub("other"), 7);
  CHECK(refused.code == kExitModelError);
  CHECK(refused.log.find(expected) != std::string::npos);

  // A recorded shape must be the model's, even where the element counts agree (a transposed
  // kernel would restore as garbage): the error names the variable and both shapes.
  REQUIRE(checkpoint::Save(dir.Sub("shaped"), 5,
                           {{"weight", {0.5f}, std::vector<std::int64_t>{1, 1}}, {"mean", {1}}}, 5)
              .ok());
  const absl::Status shaped = (*local)->RestoreCheckpoint(dir.Sub("shaped"));
  CHECK(shaped.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(shaped.message())
            .find("does not match the model: variable weight is [1, 1] "
                  "in the checkpoint, [1] in the model") != std::string::npos);
}

TEST_CASE("LocalModel saves and restores the state, and a warm start restores it by name") {
  TempDir dir("state");
  auto saved = LocalModel::Build([] { return std::make_unique<RunningMeanModel>(); });
  REQUIRE(saved.ok());
  (*saved)->session().state()[0]->value.values()[0] = 0.25f;
  (*saved)->session().state()[1]->value.values()[0] = 8.0f;
  REQUIRE((*saved)->SaveCheckpoint(dir.Sub("pretrained"), 100).ok());

  auto restored = LocalModel::Build([] { return std::make_unique<RunningMeanModel>(); });
  REQUIRE(restored.ok());
  REQUIRE((*restored)->RestoreCheckpoint(dir.Sub("pretrained")).ok());
  CHECK((*restored)->session().state()[0]->value.values()[0] == 0.25f);
  CHECK((*restored)->session().state()[1]->value.values()[0] == 8.0f);

  // A new job whose init fn warm-starts the frozen pair only (a frozen trunk), then one step.
  Trained warm = Train(dir.Sub("warm"), 1,
                       WarmStart({.ckpt_to_initialize_from = dir.Sub("pretrained"),
                                  .vars_to_warm_start = {"frozen"}}));
  REQUIRE_MESSAGE(warm.code == 0, warm.log);
  CHECK(warm.seen.frozen == std::vector<float>{8, 4});
  CHECK(warm.seen.mean[0] == doctest::Approx(0.1));  // not warm-started: from build_model's 0
  // Everything by default: the running mean too.
  Trained all =
      Train(dir.Sub("all"), 1, WarmStart({.ckpt_to_initialize_from = dir.Sub("pretrained")}));
  REQUIRE_MESSAGE(all.code == 0, all.log);
  CHECK(all.seen.mean[0] == doctest::Approx(0.9 * 0.25 + 0.1));
  CHECK(Entry(dir.Sub("all"), "frozen") == std::vector<float>{8, 4});
}

TEST_CASE("every model replica of the worker starts from the chief's state") {
  TempDir dir("state");
  // The init fn runs on the chief's first replica only, on the host state.
  Trained two = Train(
      dir.Sub("two"), 3,
      [](Session& session) {
        session.state()[1]->value.values()[0] = 8.0f;
        return absl::OkStatus();
      },
      2);
  REQUIRE_MESSAGE(two.code == 0, two.log);
  CHECK(two.seen.frozen_at_start[0] == std::vector<float>{8, 4});
  CHECK(two.seen.frozen_at_start[1] == std::vector<float>{8, 4});
}

// A trainable weight and a frozen one (trainable = false), both registered with AddVariable, the
// way a built-in layer's variables are; train() writes a gradient for both, as a layer's
// backward pass does.
class FrozenWeightModel final : public DistModel {
 public:
  explicit FrozenWeightModel(std::vector<float>* frozen_seen = nullptr, InitFn init_fn = {})
      : frozen_seen_(frozen_seen), init_fn_(std::move(init_fn)) {
    frozen_.trainable = false;
  }

  absl::Status build_model(ModelBuilder& builder) override {
    builder.AddVariables({&weight_, &frozen_});
    builder.SetBatchSize(1);
    builder.SetOptimizer({.name = "adam"});
    return absl::OkStatus();
  }

  InitFn get_init_fn() override { return init_fn_; }

  StepResult train(Session& session) override {
    const auto batch = static_cast<float>(session.global_step() + 1);
    weight_.gradient.data()[0] = weight_.value.data()[0] - batch;
    frozen_.gradient.data()[0] = frozen_.value.data()[0] - batch;
    return StepResult();
  }

  void after_train(Session&, bool) override {
    if (frozen_seen_ != nullptr) frozen_seen_->assign({frozen_.value.data()[0]});
  }

 private:
  std::vector<float>* frozen_seen_;
  InitFn init_fn_;
  Variable weight_{"weight", Tensor({1}), Tensor({1})};
  Variable frozen_{"frozen", Tensor({1}, std::vector<float>{5}), Tensor({1})};
};

int TrainFrozen(const std::string& model_dir, std::int64_t steps, std::vector<float>* frozen_seen,
                InitFn init_fn = {}) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  return RunLocalTraining(
      {"--max_steps=" + std::to_string(steps), "--model_dir=" + model_dir,
       "--save_checkpoints_secs=0", "--replicas_per_worker=2"},
      [&] { return std::make_unique<FrozenWeightModel>(frozen_seen, init_fn); }, log.get());
}

TEST_CASE(
    "a variable with trainable = false is frozen: kept, checkpointed, restored, not trained") {
  auto built = LocalModel::Build([] { return std::make_unique<FrozenWeightModel>(); });
  REQUIRE(built.ok());
  REQUIRE((*built)->variables().size() == 1);  // only the trainable one is trained
  CHECK((*built)->variables()[0]->name == "weight");
  REQUIRE((*built)->session().state().size() == 1);
  CHECK((*built)->session().state()[0]->name == "frozen");

  TempDir dir("state");
  std::vector<float> seen;
  REQUIRE(TrainFrozen(dir.Sub("job"), 4, &seen) == 0);
  CHECK(seen == std::vector<float>{5});  // its gradient was written, never applied
  CHECK(Entry(dir.Sub("job"), "frozen") == std::vector<float>{5});
  CHECK(Entry(dir.Sub("job"), "weight") != std::vector<float>{0});  // the other one trained
  auto saved = checkpoint::LoadLatest(dir.Sub("job"), nullptr);
  REQUIRE(saved.ok());
  CHECK((*saved)->Find("weight/slot_0") != nullptr);  // Adam's slots for the trained one only
  CHECK((*saved)->Find("frozen/slot_0") == nullptr);

  // Warm-started (the restored layer frozen), it stays what it was restored to.
  REQUIRE(checkpoint::Save(dir.Sub("pretrained"), 9, {{"frozen", {2.5f}, Shape{1}}}, 5).ok());
  std::vector<float> warm;
  REQUIRE(TrainFrozen(dir.Sub("warm"), 3, &warm,
                      WarmStart({.ckpt_to_initialize_from = dir.Sub("pretrained"),
                                 .vars_to_warm_start = {"frozen"}})) == 0);
  CHECK(warm == std::vector<float>{2.5f});
  CHECK(Entry(dir.Sub("warm"), "frozen") == std::vector<float>{2.5f});
}

}  // namespace
}  // namespace taas
