// A quick training run of each model on a slice of the real data: the loss must fall and test
// accuracy must beat chance (10%) clearly. The full-accuracy runs live in bench/.
#include <doctest/doctest.h>

#include "taas/fashion_mnist/local_trainer.h"

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
