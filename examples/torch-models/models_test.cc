#include "taas/torch_models/models.h"

#include <doctest/doctest.h>
#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

#include "taas/checkpoint/checkpoint.h"
#include "taas/testing/testing.h"
#include "taas/torch_models/trainer.h"

namespace taas::torch_models {
namespace {

std::vector<std::string> TrainedNames(::torch::nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& item : module.named_parameters()) {
    if (item.value().requires_grad()) names.push_back(item.key());
  }
  return names;
}

TEST_CASE("the models take Fashion-MNIST images and return 10 logits") {
  for (const std::string name : {"resnet", "lstm", "cnn"}) {
    CAPTURE(name);
    auto model = Classifier::Create(name, 1);
    REQUIRE(model.ok());
    CHECK(model->forward(::torch::rand({3, 1, 28, 28})).sizes() == ::torch::IntArrayRef{3, 10});
  }
  auto unknown = Classifier::Create("vgg", 1);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message() == "model vgg: expected resnet, lstm or cnn");
}

TEST_CASE("the same seed gives the same parameters") {
  auto a = Classifier::Create("resnet", 3);
  auto b = Classifier::Create("resnet", 3);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto pa = a->module().parameters();
  auto pb = b->module().parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) CHECK(::torch::equal(pa[i], pb[i]));
}

TEST_CASE("freezing the ResNet's trunk leaves only the head trained, its BatchNorm in eval") {
  auto model = Classifier::Create("resnet", 1);
  REQUIRE(model.ok());
  REQUIRE(model->FreezeTrunk().ok());
  CHECK(TrainedNames(model->module()) == std::vector<std::string>{"head.weight", "head.bias"});
  model->SetTraining(true);
  for (const auto& item : model->module().named_children()) {
    CAPTURE(item.key());
    CHECK(item.value()->is_training() == (item.key() == "head"));
  }
  auto lstm = Classifier::Create("lstm", 1);
  REQUIRE(lstm.ok());
  CHECK_FALSE(lstm->FreezeTrunk().ok());
}

TEST_CASE("--cosine_decay decays the rate to 0 over the job's max steps; without it, constant") {
  const auto constant = LearningRate(0.002, false, 1000);
  REQUIRE(constant.ok());
  CHECK(constant->At(0) == doctest::Approx(0.002));
  CHECK(constant->At(100000) == doctest::Approx(0.002));
  const auto cosine = LearningRate(0.002, true, 1000);
  REQUIRE(cosine.ok());
  CHECK(cosine->At(0) == doctest::Approx(0.002));
  CHECK(cosine->At(500) == doctest::Approx(0.001));
  CHECK(cosine->At(1000) == doctest::Approx(0.0).epsilon(1e-9));
  CHECK(cosine->At(5000) == doctest::Approx(0.0).epsilon(1e-9));
  // A job with no max steps has nothing to decay over: the error names the setting.
  const auto unbounded = LearningRate(0.002, true, 0);
  REQUIRE_FALSE(unbounded.ok());
  CHECK(unbounded.status().message().find("TF_MAX_STEPS") != std::string_view::npos);
  CHECK(LearningRate(0.002, false, 0).ok());
}

// The transfer recipe (docs/trainer-runtime.md): a second job starts from the first one's
// checkpoint with its trunk frozen; only the head trains, and the trunk (parameters and
// BatchNorm statistics) ends bit-identical to what it restored.
TEST_CASE("transfer learning restores the trunk, freezes it and trains only the head") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("taas-transfer-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const ModelFactory factory = [] { return std::make_unique<TorchTrainer>(); };
  testing::RunStepsOptions base;
  base.model_dir = (dir / "base").string();
  base.model_args = {"--model=resnet", "--batch_size=16"};
  REQUIRE(testing::RunSteps(factory, 4, base).ok());
  auto pretrained = checkpoint::LoadLatest(base.model_dir, nullptr);
  REQUIRE(pretrained.ok());
  REQUIRE(pretrained->has_value());

  testing::RunStepsOptions transfer;
  transfer.model_dir = (dir / "transfer").string();
  transfer.model_args = {"--model=resnet", "--batch_size=16",
                         "--warm_start_from=" + base.model_dir};
  REQUIRE(testing::RunSteps(factory, 4, transfer).ok());
  auto tuned = checkpoint::LoadLatest(transfer.model_dir, nullptr);
  REQUIRE(tuned.ok());
  REQUIRE(tuned->has_value());
  int trunk = 0;
  for (const checkpoint::Entry& entry : (*tuned)->entries) {
    if (entry.name.find("/slot_") != std::string::npos) continue;
    const checkpoint::Entry* before = (**pretrained).Find(entry.name);
    REQUIRE(before != nullptr);
    CAPTURE(entry.name);
    if (entry.name.rfind("head.", 0) == 0) {
      CHECK(entry.values != before->values);  // a new head, trained
    } else {
      CHECK(entry.values == before->values);  // the trunk, restored and frozen
      ++trunk;
    }
  }
  CHECK(trunk > 20);  // parameters and BatchNorm statistics of 4 stages
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace taas::torch_models
