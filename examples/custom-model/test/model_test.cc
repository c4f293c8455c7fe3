// Unit tests of the model without the runtime: its arguments, and its network learning a small
// batch of its own (no data set, no processes).
#include "model.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace custom_model {
namespace {

// `n` examples of 784 pixels whose label is which tenth of the image is brightest.
taas::data::Batch MakeBatch(std::int64_t n) {
  taas::data::Batch batch;
  std::vector<float> pixels(static_cast<std::size_t>(n * 784), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto label = static_cast<std::int32_t>(i % 10);
    for (std::int64_t p = label * 78; p < (label + 1) * 78; ++p) {
      pixels[static_cast<std::size_t>(i * 784 + p)] = 1.0f;
    }
    batch.labels.push_back(label);
  }
  batch.images = taas::Tensor({n, 784}, pixels);
  return batch;
}

TEST_CASE("the network learns a batch with plain SGD") {
  Options options;
  options.hidden = 32;
  Network network(options);
  const taas::data::Batch batch = MakeBatch(20);
  auto first = network.TrainStep(batch);
  REQUIRE(first.ok());
  CHECK(first->examples == 20);
  float loss = first->loss;
  for (int step = 0; step < 50; ++step) {
    // What the parameter servers do with the gradients: value -= learning_rate * gradient.
    for (taas::Variable* variable : network.variables()) {
      for (std::int64_t k = 0; k < variable->value.size(); ++k) {
        variable->value.data()[k] -=
            static_cast<float>(options.learning_rate) * variable->gradient.data()[k];
      }
    }
    auto stats = network.TrainStep(batch);
    REQUIRE(stats.ok());
    loss = stats->loss;
  }
  CHECK(loss < first->loss / 2);
  auto evaluated = network.Evaluate(batch);
  REQUIRE(evaluated.ok());
  CHECK(evaluated->correct == 20);
}

TEST_CASE("a batch the network cannot take is an error, not a crash") {
  Network network(Options{});
  taas::data::Batch batch = MakeBatch(4);
  batch.labels[1] = 10;  // outside the 10 classes
  CHECK_FALSE(network.TrainStep(batch).ok());
}

TEST_CASE("the L2 penalty is counted in the loss") {
  Options plain;
  plain.hidden = 16;
  Options penalised = plain;
  penalised.l2 = 0.1;
  Network without(plain), with(penalised);  // the same seed: the same starting weights
  const taas::data::Batch batch = MakeBatch(10);
  auto a = without.TrainStep(batch), b = with.TrainStep(batch);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(b->loss > a->loss);
}

TEST_CASE("arguments, spelled and refused as taas's own flags are") {
  auto options =
      ParseArgs({"--batch_size=32", "--hidden", "64", "--learning_rate=0.05", "--l2=1e-4"});
  REQUIRE(options.ok());
  CHECK(options->batch_size == 32);
  CHECK(options->hidden == 64);
  CHECK(options->learning_rate == doctest::Approx(0.05));
  CHECK(options->l2 == doctest::Approx(1e-4));
  CHECK(ParseArgs({"--batch_size=0"}).status().message() ==
        "model arguments: --batch_size: expected a number from 1 to 65536, got 0");
  for (const char* bad : {"--hidden=x", "--learning_rate=-1", "--l2=2", "--data_dir=", "--epochs=3",
                          "--batch_size", "stray"}) {
    CAPTURE(bad);
    auto parsed = ParseArgs({bad});
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(parsed.status().message()).rfind("model arguments: ", 0) == 0);
  }
}

}  // namespace
}  // namespace custom_model
