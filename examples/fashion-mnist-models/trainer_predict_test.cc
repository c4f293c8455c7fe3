// The Fashion-MNIST trainer's predict hooks through taas::Predict: IDX images with their labels
// file beside them, the network's logits and classes, and the inputs it must refuse (images of
// another size, labels that do not match). `taas predict` on the real test set after a job:
// run_job_test.sh (fashion_mnist_mlp_job).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "taas/checkpoint/checkpoint.h"
#include "taas/fashion_mnist/models.h"
#include "taas/fashion_mnist/trainer.h"
#include "taas/runtime/predict.h"

namespace taas::fashion_mnist {
namespace {

namespace fs = std::filesystem;

struct Dir {
  fs::path path;
  Dir() {
    std::string pattern = (fs::temp_directory_path() / "taas-mnist-predict-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~Dir() { fs::remove_all(path); }
  std::string Sub(const std::string& name) const { return (path / name).string(); }
};

void BigEndian(std::ofstream& out, std::uint32_t v) {
  const char bytes[] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                        static_cast<char>(v >> 8), static_cast<char>(v)};
  out.write(bytes, 4);
}

// IDX images (magic 0x803) of `count` x rows x cols bytes, pixel i of the file being i % 251.
void WriteImages(const std::string& path, std::uint32_t count, std::uint32_t rows,
                 std::uint32_t cols) {
  std::ofstream out(path, std::ios::binary);
  for (std::uint32_t v : {0x803u, count, rows, cols}) BigEndian(out, v);
  for (std::uint32_t i = 0; i < count * rows * cols; ++i) out.put(static_cast<char>(i % 251));
}

void WriteLabels(const std::string& path, const std::vector<std::uint8_t>& labels) {
  std::ofstream out(path, std::ios::binary);
  for (std::uint32_t v : {0x801u, static_cast<std::uint32_t>(labels.size())}) BigEndian(out, v);
  out.write(reinterpret_cast<const char*>(labels.data()),
            static_cast<std::streamsize>(labels.size()));
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("the trainer predicts IDX images with their labels and refuses images of another size") {
  Dir dir;
  // The MLP's initial variables as a checkpoint of step 3 (no moving averages: --moving_averages
  // is off below, so the model registers none).
  Mlp mlp(1);
  std::vector<checkpoint::Entry> entries;
  for (const Variable* v : mlp.variables()) {
    const auto values = v->value.values();
    entries.push_back({v->name, {values.begin(), values.end()}, v->value.shape()});
  }
  REQUIRE(checkpoint::Save(dir.Sub("model"), 3, entries, 5).ok());

  WriteImages(dir.Sub("t-images-idx3-ubyte"), 3, 28, 28);
  WriteLabels(dir.Sub("t-labels-idx1-ubyte"), {1, 2, 3});
  PredictOptions options;
  options.model_dir = dir.Sub("model");
  options.inputs = {dir.Sub("t-images-idx3-ubyte")};
  options.output = dir.Sub("p.csv");
  options.batch_size = 2;
  const auto factory = [] { return std::make_unique<FashionMnistTrainer>("mlp"); };
  const std::vector<std::string> args = {"--moving_averages=false"};
  const auto done = Predict(factory, options, args);
  REQUIRE_MESSAGE(done.ok(), done.status().ToString());
  CHECK(done->examples == 3);
  CHECK(done->outputs_per_example == kClasses);
  CHECK(done->accuracy.has_value());
  const std::vector<std::string> lines = Lines(options.output);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].rfind("output_0,", 0) == 0);
  CHECK(lines[0].substr(lines[0].size() - 12) == ",class,label");
  CHECK(lines[3].substr(lines[3].size() - 2) == ",3");

  // The first image's logits are the network's on it.
  data::Batch batch;
  std::vector<float> pixels(784);
  for (int i = 0; i < 784; ++i) pixels[i] = static_cast<float>(i % 251) / 255.0f;
  batch.images = Tensor({1, 784}, pixels);
  const Tensor& logits = **mlp.Logits(batch);
  std::stringstream first(lines[1]);
  for (int j = 0; j < kClasses; ++j) {
    std::string cell;
    std::getline(first, cell, ',');
    CHECK(std::stof(cell) == doctest::Approx(logits.values()[j]).epsilon(1e-6));
  }

  // Images the network cannot take, and labels that do not match the images: errors naming the
  // file, and no output.
  fs::remove(options.output);
  WriteImages(dir.Sub("c-images-idx3-ubyte"), 2, 32, 32);
  options.inputs = {dir.Sub("c-images-idx3-ubyte")};
  const auto other = Predict(factory, options, args);
  CHECK(other.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(other.status().message()) ==
        dir.Sub("c-images-idx3-ubyte") +
            ": images of 32 x 32 pixels, but the model takes [784] (784 pixels)");
  WriteLabels(dir.Sub("t-labels-idx1-ubyte"), {1, 2});
  options.inputs = {dir.Sub("t-images-idx3-ubyte")};
  const auto short_labels = Predict(factory, options, args);
  CHECK(short_labels.status().code() == absl::StatusCode::kDataLoss);
  CHECK_FALSE(fs::exists(options.output));
  CHECK_FALSE(fs::exists(options.output + ".partial"));
}

}  // namespace
}  // namespace taas::fashion_mnist
