// Unit tests of the model without the runtime: its arguments, its network learning a small
// batch of its own, and reading files of its own (no data set, no processes).
#include "model.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "taas/data/example.h"
#include "taas/data/tfrecord.h"

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

// A fresh folder for a test's files, removed after it.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             (name + "-" + std::to_string(std::random_device{}()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string File(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return (path / name).string();
  }
};

// Every example of a one-pass stream of `files`: the first pixel of each and its label.
std::vector<std::pair<float, std::int32_t>> ReadAll(const std::vector<std::string>& files,
                                                    const Options& options) {
  taas::data::StreamOptions stream;
  stream.batch_size = 2;
  auto opened = OpenFiles(files, options, stream);
  REQUIRE(opened.ok());
  std::vector<std::pair<float, std::int32_t>> examples;
  for (;;) {
    auto batch = (*opened)->NextBatch();
    REQUIRE(batch.ok());
    if (!batch->has_value()) break;
    const taas::data::Batch& ready = **batch;
    REQUIRE(ready.images.shape() == taas::Shape{ready.images.shape()[0], 784});
    for (std::int64_t i = 0; i < ready.images.shape()[0]; ++i) {
      examples.emplace_back(ready.images.data()[i * 784], ready.labels[static_cast<size_t>(i)]);
    }
  }
  return examples;
}

TEST_CASE("--train_files reads TFRecord files of Examples: 784 pixel bytes and a label") {
  TempDir dir("custom-model-tfrecord");
  std::string records;
  for (int i = 0; i < 3; ++i) {
    taas::data::Features features;
    features["image_raw"] = taas::data::BytesList{std::string(784, static_cast<char>(51 * i))};
    features["label"] = taas::data::Int64List{i + 4};
    records += taas::data::EncodeTfRecord(taas::data::SerializeExample(features));
  }
  const std::string file = dir.File("train-0.tfrecord", records);
  auto options = ParseArgs({"--train_files=" + dir.path.string() + "/train-*.tfrecord"});
  REQUIRE(options.ok());
  REQUIRE(options->train_files.size() == 1);
  const auto examples = ReadAll(options->train_files, *options);
  REQUIRE(examples.size() == 3);
  CHECK(examples[1].first == doctest::Approx(0.2));  // 51 / 255
  CHECK(examples[2].second == 6);

  // A record cut short is an error naming the file, not a crash.
  dir.File("train-0.tfrecord", records.substr(0, records.size() - 5));
  taas::data::StreamOptions stream;
  auto opened = OpenFiles({file}, *options, stream);
  REQUIRE(opened.ok());
  absl::Status failed;
  for (int i = 0; i < 4 && failed.ok(); ++i) failed = (*opened)->NextBatch().status();
  CHECK(std::string(failed.message()).find(file) != std::string::npos);
}

TEST_CASE("--train_files reads CSV files: a header, the label column, pixel columns scaled") {
  TempDir dir("custom-model-csv");
  std::string header = "label";
  std::string row0 = "3", row1 = "9";
  for (int p = 1; p <= 784; ++p) {
    header += ",pixel" + std::to_string(p);
    row0 += ",255";
    row1 += ",0";
  }
  const std::string file = dir.File("train.csv", header + "\n" + row0 + "\n" + row1 + "\n");
  auto options = ParseArgs({"--train_files=" + file});
  REQUIRE(options.ok());
  const auto examples = ReadAll(options->train_files, *options);
  REQUIRE(examples.size() == 2);
  CHECK(examples[0] == std::pair<float, std::int32_t>{1.0f, 3});
  CHECK(examples[1] == std::pair<float, std::int32_t>{0.0f, 9});

  // Columns the file does not have are named in the error, once the file is read.
  options->columns = {"x1", "x2"};
  auto opened = OpenFiles({file}, *options, {});
  REQUIRE(opened.ok());
  const absl::Status failed = (*opened)->NextBatch().status();
  CHECK(std::string(failed.message()).find("x1") != std::string::npos);
}

TEST_CASE("files that are neither TFRecord nor CSV are refused by name") {
  const Options options;
  const absl::Status refused = OpenFiles({"/data/train.parquet"}, options, {}).status();
  CHECK(refused.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(refused.message()).find("/data/train.parquet") != std::string::npos);
}

}  // namespace
}  // namespace custom_model
