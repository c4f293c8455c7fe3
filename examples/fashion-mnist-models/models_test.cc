// A quick training run of each model on a slice of the real data: the loss must fall and test
// accuracy must beat chance (10%) clearly. The full-accuracy runs live in bench/.
#include <doctest/doctest.h>

#include <random>

#include "taas/fashion_mnist/local_trainer.h"
#include "taas/testing/testing.h"

namespace taas::fashion_mnist {
namespace {

std::shared_ptr<const data::ImageDataset> Slice(const data::ImageDataset& full, std::int64_t n) {
  auto slice = std::make_shared<data::ImageDataset>();
  slice->count = n;
  slice->rows = full.rows;
  slice->cols = full.cols;
  slice->pixels.assign(full.pixels.begin(), full.pixels.begin() + n * full.rows * full.cols);
  slice->labels.assign(full.labels.begin(), full.labels.begin() + n);
  return slice;
}

struct Data {
  std::shared_ptr<const data::ImageDataset> train, test;
};

Data Load() {
  auto test = data::LoadMnistSplit(data::kFashionMnistDir, "test");
  REQUIRE_MESSAGE(test.ok(), test.status().message());
  // Train on the first 8000 test images, evaluate on the last 2000 (loading the 60k train split
  // would take most of this test's time budget).
  Data data;
  data.train = Slice(*test, 8000);
  auto held_out = std::make_shared<data::ImageDataset>();
  held_out->count = 2000;
  held_out->rows = test->rows;
  held_out->cols = test->cols;
  held_out->pixels.assign(test->pixels.end() - 2000 * 784, test->pixels.end());
  held_out->labels.assign(test->labels.end() - 2000, test->labels.end());
  data.test = held_out;
  return data;
}

TEST_CASE("model variables have stable unique names") {
  Cnn cnn;
  std::vector<std::string> names;
  for (auto* v : cnn.variables()) names.push_back(v->name);
  CHECK(names == std::vector<std::string>{
                     "conv1/kernel", "conv1/bias", "conv2/kernel", "conv2/bias", "conv3/kernel",
                     "conv3/bias", "dense1/kernel", "dense1/bias", "logits/kernel", "logits/bias"});
  CHECK(cnn.variables()[6]->value.shape() == Shape{576, 64});
  Mlp mlp;
  REQUIRE(mlp.variables().size() == 4);
  CHECK(mlp.variables()[0]->name == "hidden/kernel");
  CHECK_FALSE(CreateModel("resnet", 1).ok());
}

TEST_CASE("a batch whose images do not fit the network is an error value naming the layer") {
  Cnn cnn;
  data::Batch flat{Tensor({2, 784}), {0, 1}};
  auto trained = cnn.TrainStep(flat);
  REQUIRE_FALSE(trained.ok());
  CHECK(trained.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(trained.status().message() == "conv1: expected input [N, H, W, 1], got [2, 784]");
  Mlp mlp;
  data::Batch images{Tensor({2, 28, 28, 1}), {0, 1}};
  CHECK(mlp.Evaluate(images).status().message() ==
        "hidden: expected input [N, 784], got [2, 28, 28, 1]");
  data::Batch fits{Tensor({2, 784}), {0, 1}};
  CHECK(mlp.TrainStep(fits).ok());
}

// A network as a DistModel that trains on one fixed batch, so that train() is the same function
// of the variables at every call: what taas::testing needs to check gradients (the trainer's own
// DistModel draws every batch from a shuffling pipeline).
class FixedBatchModel : public DistModel {
 public:
  FixedBatchModel(std::string name, const Shape& example_shape, std::int64_t batch_size) {
    name_ = std::move(name);
    Shape shape = {batch_size};
    shape.insert(shape.end(), example_shape.begin(), example_shape.end());
    batch_.images = Tensor(shape);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (float& x : batch_.images.values()) x = pixel(rng);
    for (std::int64_t i = 0; i < batch_size; ++i) {
      batch_.labels.push_back(static_cast<std::int32_t>(i % kClasses));
    }
  }

  absl::Status build_model(ModelBuilder& builder) override {
    TAAS_ASSIGN_OR_RETURN(model_, CreateModel(name_, 1));
    nn::SetComputeThreads(1);
    builder.AddVariables(model_->variables());
    builder.SetOptimizer(model_->DefaultOptimizer(/*steps_per_epoch=*/100));
    return absl::OkStatus();
  }

  StepResult train(Session&) override {
    StepResult result;
    auto stats = model_->TrainStep(batch_);
    if (!stats.ok()) {
      result.error = stats.status();
      return result;
    }
    result.loss = stats->loss;
    result.examples = stats->examples;
    return result;
  }

 private:
  std::string name_;
  data::Batch batch_;
  std::unique_ptr<Model> model_;
};

ModelFactory FixedBatch(const std::string& name, const Shape& example_shape) {
  return [name, example_shape] {
    return std::unique_ptr<DistModel>(new FixedBatchModel(name, example_shape, 4));
  };
}

TEST_CASE("taas::testing on both networks: gradients, a few steps, a checkpoint round trip") {
  const std::pair<std::string, Shape> networks[] = {{"mlp", {784}}, {"cnn", {28, 28, 1}}};
  for (const auto& network : networks) {
    const std::string& name = network.first;
    const Shape& shape = network.second;
    CAPTURE(name);
    // Finite differences need a loss that is smooth around each checked value. The MLP's is at
    // this batch (a weight moves 4 of its 2000 ReLU inputs); the CNN's is not: moving a conv bias
    // by any usable step moves hundreds of ReLU inputs and max-pool choices, some across their
    // kink, so its layers are checked one by one in trainer-runtime/nn instead. float32 losses:
    // a step of 1e-2 keeps rounding (~1e-7 of a loss near 2.3) well below the gradients checked;
    // 16 elements of each variable, chosen by a fixed seed.
    if (name == "mlp") {
      testing::GradientCheckOptions options;
      options.epsilon = 1e-2;
      options.max_elements_per_variable = 16;
      options.relative_floor = 1e-2;
      auto check = testing::CheckGradients(FixedBatch(name, shape), options);
      REQUIRE_MESSAGE(check.ok(), check.status().ToString());
      MESSAGE(name << ": largest relative gradient error " << check->max_rel_error());
      CHECK_MESSAGE(check->Within(2e-2).ok(), check->Within(2e-2).ToString());
    }

    auto run = testing::RunSteps(FixedBatch(name, shape), 10);
    REQUIRE_MESSAGE(run.ok(), run.status().ToString());
    CHECK(run->losses.back() < run->losses.front());

    absl::Status round_trip = testing::CheckpointRoundTrip(FixedBatch(name, shape));
    CHECK_MESSAGE(round_trip.ok(), round_trip.ToString());
  }
}

TEST_CASE("quick training: loss falls and accuracy beats chance") {
  const Data data = Load();
  for (const char* name : {"mlp", "cnn"}) {
    auto model = CreateModel(name, 3);
    REQUIRE(model.ok());
    LocalTrainingOptions options;
    options.batch_size = 50;
    options.steps = std::string(name) == "mlp" ? 300 : 150;
    options.threads = 1;  // robust on a busy machine where a second thread is often preempted
    options.shuffle_buffer = 2000;
    auto result = TrainLocally(**model, data.train, data.test, options);
    REQUIRE_MESSAGE(result.ok(), result.status().message());
    MESSAGE(name << ": loss " << result->first_loss << " -> " << result->last_loss
                 << ", held-out accuracy " << result->test_accuracy << ", "
                 << result->examples_per_second << " examples/s");
    CHECK(result->last_loss < 0.7 * result->first_loss);
    CHECK(result->test_accuracy > 0.6);
  }
}

}  // namespace
}  // namespace taas::fashion_mnist
