// Unit tests of the model: its network, its arguments, and the whole DistModel trained and
// checkpointed in one process by taas's testing helpers (taas/testing/testing.h) on a small data
// set the test writes (no processes, no Fashion-MNIST).
#include "model.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "taas/testing/testing.h"

namespace custom_model {
namespace {

namespace fs = std::filesystem;

// A folder of its own, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "custom-model-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void WriteBigEndian(std::ofstream& out, std::uint32_t value) {
  const char bytes[] = {static_cast<char>(value >> 24), static_cast<char>(value >> 16),
                        static_cast<char>(value >> 8), static_cast<char>(value)};
  out.write(bytes, sizeof bytes);
}

// A split of `n` 28x28 images in Fashion-MNIST's files (IDX, read plain as well as gzipped), the
// label of each being which of ten bands of rows is lit: a task the network learns in a few steps.
void WriteSplit(const fs::path& dir, const std::string& prefix, std::uint32_t n) {
  std::ofstream images(dir / (prefix + "-images-idx3-ubyte.gz"), std::ios::binary);
  std::ofstream labels(dir / (prefix + "-labels-idx1-ubyte.gz"), std::ios::binary);
  for (std::uint32_t header : {0x803u, n, 28u, 28u}) WriteBigEndian(images, header);
  for (std::uint32_t header : {0x801u, n}) WriteBigEndian(labels, header);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t label = i % 10;
    std::vector<char> pixels(28 * 28, 0);
    for (std::uint32_t row = 4 + 2 * label; row < 6 + 2 * label; ++row) {
      for (std::uint32_t col = 0; col < 28; ++col) pixels[row * 28 + col] = static_cast<char>(255);
    }
    images.write(pixels.data(), static_cast<std::streamsize>(pixels.size()));
    labels.put(static_cast<char>(label));
  }
}

// The data set and the model's arguments to read it: small batches, a narrow network.
struct SmallData {
  TempDir dir;
  std::vector<std::string> args;
  SmallData() {
    WriteSplit(dir.path, "train", 200);
    WriteSplit(dir.path, "t10k", 50);
    args = {"--data_dir=" + dir.path.string(), "--batch_size=20", "--channels=4",
            "--learning_rate=0.01"};
  }
};

const taas::ModelFactory kFactory = [] { return std::make_unique<Model>(); };

TEST_CASE("the network takes a batch of images and returns 10 logits") {
  Network network(8);
  CHECK(network->forward(torch::rand({3, 1, 28, 28})).sizes() == torch::IntArrayRef{3, 10});
}

TEST_CASE("trained in one process, the model learns the small data set") {
  SmallData data;
  taas::testing::RunStepsOptions options;
  options.model_args = data.args;
  auto run = taas::testing::RunSteps(kFactory, 40, options);
  REQUIRE_MESSAGE(run.ok(), run.status().ToString());
  REQUIRE(run->losses.size() == 40);
  CHECK(run->global_step == 40);
  const auto mean = [](auto begin, auto end) {
    return std::accumulate(begin, end, 0.0) / static_cast<double>(end - begin);
  };
  const double first = mean(run->losses.begin(), run->losses.begin() + 5);
  const double last = mean(run->losses.end() - 5, run->losses.end());
  CAPTURE(first);
  CHECK(last < first / 2);
  // The runtime's variables are the module's trained parameters, named as torch names them.
  CHECK(run->variables.count("conv1.weight") == 1);
  CHECK(run->variables.count("logits.bias") == 1);
}

TEST_CASE("a checkpoint restores every variable, and evaluate() gives the same metrics") {
  SmallData data;
  taas::testing::RoundTripOptions options;
  options.compare_evaluate = true;
  options.model_args = data.args;
  const absl::Status round_trip = taas::testing::CheckpointRoundTrip(kFactory, options);
  CHECK_MESSAGE(round_trip.ok(), round_trip.ToString());
}

TEST_CASE("arguments, spelled and refused as taas's own flags are") {
  auto options = ParseArgs({"--batch_size=32", "--channels", "8", "--learning_rate=0.05"});
  REQUIRE(options.ok());
  CHECK(options->batch_size == 32);
  CHECK(options->channels == 8);
  CHECK(options->learning_rate == doctest::Approx(0.05));
  CHECK(ParseArgs({"--channels=0"}).status().message() ==
        "model arguments: --channels: expected a number from 1 to 1024, got 0");
  for (const char* bad : {"--channels=x", "--learning_rate=-1", "--data_dir=", "--hidden=3",
                          "--batch_size", "stray"}) {
    CAPTURE(bad);
    auto parsed = ParseArgs({bad});
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(parsed.status().message()).rfind("model arguments: ", 0) == 0);
  }
}

}  // namespace
}  // namespace custom_model
