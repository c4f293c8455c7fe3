#include "taas/runtime/warm_start.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "taas/checkpoint/checkpoint.h"
#include "taas/checkpoint/safetensors.h"
#include "testing/temp_dir.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

using runtime_testing::TempDir;

bool Has(const absl::Status& status, const std::string& part) {
  return std::string(status.message()).find(part) != std::string::npos;
}

Variable Var(const std::string& name, Shape shape, float fill) {
  Variable v{name, Tensor(shape), Tensor(shape)};
  for (float& x : v.value.values()) x = fill;
  return v;
}

// A previous job's checkpoint at step 200: "dense/kernel" ([2, 3] of 1), "dense/bias" ([3] of
// 2), "old/logits" ([2, 2] of 3) and a slot, which a warm start never reads.
std::string PreviousJob(const TempDir& dir) {
  auto saved = checkpoint::Save(dir.path.string(), 200,
                                {{"dense/kernel", std::vector<float>(6, 1.0f), Shape{2, 3}},
                                 {"dense/bias", std::vector<float>(3, 2.0f), Shape{3}},
                                 {"old/logits", std::vector<float>(4, 3.0f), Shape{2, 2}},
                                 {"dense/kernel/slot_0", std::vector<float>(6, 9.0f), Shape{2, 3}}},
                                5);
  REQUIRE(saved.ok());
  return *saved;
}

TEST_CASE("by default every variable is copied from a model dir's newest checkpoint") {
  TempDir dir("warm-start");
  PreviousJob(dir);
  Variable kernel = Var("dense/kernel", {2, 3}, 0.0f), bias = Var("dense/bias", {3}, 0.0f);
  auto copied =
      WarmStartVariables({.ckpt_to_initialize_from = dir.path.string()}, {&kernel, &bias});
  REQUIRE_MESSAGE(copied.ok(), copied.status().ToString());
  CHECK(*copied == 2);
  for (float x : kernel.value.values()) CHECK(x == 1.0f);
  for (float x : bias.value.values()) CHECK(x == 2.0f);
}

TEST_CASE("patterns match from the start of the name; renames map to the checkpoint's names") {
  TempDir dir("warm-start");
  const std::string prefix = PreviousJob(dir);
  Variable kernel = Var("dense/kernel", {2, 3}, 0.0f), bias = Var("dense/bias", {3}, 0.0f),
           logits = Var("logits/kernel", {2, 2}, 0.0f), fresh = Var("new/kernel", {5}, 7.0f);
  auto copied = WarmStartVariables({.ckpt_to_initialize_from = prefix,  // a prefix, not a dir
                                    .vars_to_warm_start = {"dense/k", "logits/.*"},
                                    .var_name_to_prev_var_name = {{"logits/kernel", "old/logits"}}},
                                   {&kernel, &bias, &logits, &fresh});
  REQUIRE_MESSAGE(copied.ok(), copied.status().ToString());
  CHECK(*copied == 2);
  for (float x : kernel.value.values()) CHECK(x == 1.0f);
  for (float x : bias.value.values()) CHECK(x == 0.0f);  // not matched: initial value kept
  for (float x : logits.value.values()) CHECK(x == 3.0f);
  for (float x : fresh.value.values()) CHECK(x == 7.0f);
  // "kernel" is not at the start of any name: nothing is copied.
  auto none = WarmStartVariables(
      {.ckpt_to_initialize_from = prefix, .vars_to_warm_start = {"kernel"}}, {&kernel});
  REQUIRE(none.ok());
  CHECK(*none == 0);
}

TEST_CASE("a shape mismatch names the variable, both shapes (or counts) and the checkpoint") {
  TempDir dir("warm-start");
  const std::string prefix = PreviousJob(dir);
  Variable kernel = Var("dense/kernel", {4, 3}, 0.0f), bias = Var("dense/bias", {3}, 0.0f);
  auto failed =
      WarmStartVariables({.ckpt_to_initialize_from = dir.path.string()}, {&bias, &kernel});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string message(failed.status().message());
  CHECK(message.find("dense/kernel") != std::string::npos);
  CHECK(message.find(ShapeString(kernel.value.shape())) != std::string::npos);
  CHECK(message.find("holds shape [2, 3]") != std::string::npos);
  CHECK(message.find(prefix) != std::string::npos);
  // Nothing was copied, not even the variable checked before the bad one.
  for (float x : bias.value.values()) CHECK(x == 0.0f);
  // An entry of a checkpoint written before shapes were recorded: checked by count.
  auto counted = MapToSource({}, {&kernel}, "checkpoint old",
                             [](const std::string&) -> std::optional<SourceTensor> {
                               return SourceTensor{6, std::nullopt};
                             });
  REQUIRE_FALSE(counted.ok());
  CHECK(Has(counted.status(), "(12 elements), checkpoint old holds 6 elements (and no shape)"));
}

// A TensorFlow port's checkpoint, written by this runtime with shapes: the book's
// "layer1/weights" [2, 3] and "layer1/biases" [3].
std::string PortedJob(const TempDir& dir) {
  auto saved = checkpoint::Save(
      dir.path.string(), 100,
      {{"layer1/weights", {1, 2, 3, 4, 5, 6}, std::vector<std::int64_t>{2, 3}},
       {"layer1/biases", std::vector<float>(3, 0.5f), std::vector<std::int64_t>{3}}},
      5);
  REQUIRE(saved.ok());
  return *saved;
}

TEST_CASE("a checkpoint's shapes are checked, not only its sizes: a transposed kernel is refused") {
  TempDir dir("warm-start");
  const std::string prefix = PortedJob(dir);
  Variable transposed = Var("layer1/weights", {3, 2}, 0.0f);
  auto failed = WarmStartVariables({.ckpt_to_initialize_from = prefix}, {&transposed});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(failed.status().message() ==
        "warm start: layer1/weights does not fit: the model's has shape [3, 2], checkpoint " +
            prefix + " holds shape [2, 3]");
  for (float x : transposed.value.values()) CHECK(x == 0.0f);

  // Through a rename, the message names both names.
  Variable kernel = Var("hidden/kernel", {6}, 0.0f);
  auto renamed =
      WarmStartVariables({.ckpt_to_initialize_from = prefix,
                          .var_name_to_prev_var_name = {{"hidden/kernel", "layer1/weights"}}},
                         {&kernel});
  REQUIRE_FALSE(renamed.ok());
  CHECK(renamed.status().message() ==
        "warm start: hidden/kernel (as layer1/weights) does not fit: the model's has shape [6], "
        "checkpoint " +
            prefix + " holds shape [2, 3]");
}

TEST_CASE("a renamed variable the checkpoint lacks names both names and the checkpoint") {
  TempDir dir("warm-start");
  const std::string prefix = PortedJob(dir);
  Variable kernel = Var("hidden/kernel", {2, 3}, 0.0f), bias = Var("hidden/bias", {3}, 0.0f);
  auto copied =
      WarmStartVariables({.ckpt_to_initialize_from = prefix,
                          .var_name_to_prev_var_name = {{"hidden/kernel", "layer1/weights"},
                                                        {"hidden/bias", "layer1/biases"}}},
                         {&kernel, &bias});
  REQUIRE_MESSAGE(copied.ok(), copied.status().ToString());
  CHECK(kernel.value.values()[5] == 6.0f);
  CHECK(bias.value.values()[0] == 0.5f);
  auto missing = WarmStartVariables({.ckpt_to_initialize_from = prefix,
                                     .var_name_to_prev_var_name = {{"hidden/kernel", "layer1/w"}}},
                                    {&kernel});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "warm start: checkpoint " + prefix +
                                          " has no variable layer1/w for the model's "
                                          "hidden/kernel (its entry in var_name_to_prev_var_name)");
}

TEST_CASE("the name map's checks hold for any source of saved values") {
  // A source that is not a checkpoint (as a safetensors file would be): shapes known.
  const SourceLookup source = [](const std::string& name) -> std::optional<SourceTensor> {
    if (name == "layer1/weights") return SourceTensor{6, Shape{2, 3}};
    return std::nullopt;
  };
  Variable kernel = Var("hidden/kernel", {2, 3}, 0.0f);
  auto names =
      MapToSource({{"hidden/kernel", "layer1/weights"}}, {&kernel}, "model.safetensors", source);
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"layer1/weights"});
  auto unused =
      MapToSource({{"typo/kernel", "layer1/weights"}}, {&kernel}, "model.safetensors", source);
  REQUIRE_FALSE(unused.ok());
  CHECK(Has(unused.status(), "renames typo/kernel (to layer1/weights)"));
  auto absent = MapToSource({}, {&kernel}, "model.safetensors", source);
  REQUIRE_FALSE(absent.ok());
  CHECK(Has(absent.status(),
            "model.safetensors has no variable hidden/kernel for the model's hidden/kernel"));
}

TEST_CASE("a missing variable, an unused rename, a bad pattern and no checkpoint are errors") {
  TempDir dir("warm-start");
  const std::string prefix = PreviousJob(dir);
  Variable other = Var("conv/kernel", {2}, 0.0f);
  auto missing = WarmStartVariables({.ckpt_to_initialize_from = prefix}, {&other});
  REQUIRE_FALSE(missing.ok());
  CHECK(std::string(missing.status().message()).find("has no variable conv/kernel") !=
        std::string::npos);

  auto unused = WarmStartVariables({.ckpt_to_initialize_from = prefix,
                                    .vars_to_warm_start = {"dense/.*"},
                                    .var_name_to_prev_var_name = {{"conv/kernel", "x"}}},
                                   {&other});
  REQUIRE_FALSE(unused.ok());
  CHECK(std::string(unused.status().message()).find("renames conv/kernel") != std::string::npos);

  auto bad = WarmStartVariables(
      {.ckpt_to_initialize_from = prefix, .vars_to_warm_start = {"dense/(kernel"}}, {&other});
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("dense/(kernel") != std::string::npos);

  TempDir empty("warm-start");
  auto none = WarmStartVariables({.ckpt_to_initialize_from = empty.path.string()}, {&other});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == absl::StatusCode::kNotFound);
  auto nowhere = WarmStartVariables(
      {.ckpt_to_initialize_from = (empty.path / "model.ckpt-5").string()}, {&other});
  REQUIRE_FALSE(nowhere.ok());
  CHECK(std::string(nowhere.status().message()).find("model.ckpt-5") != std::string::npos);

  // A checkpoint whose data does not verify is the checkpoint reader's DataLoss.
  fs::resize_file(prefix + ".safetensors", 4);
  auto corrupt = WarmStartVariables({.ckpt_to_initialize_from = prefix}, {&other});
  REQUIRE_FALSE(corrupt.ok());
  CHECK(corrupt.status().code() == absl::StatusCode::kDataLoss);
}

// A safetensors file as PyTorch's save_file writes one for an nn.Linear(3, 2) named fc1: no
// metadata, names and layouts PyTorch's (weight [out, in] = [2, 3]).
std::string TorchFile(const TempDir& dir, const std::vector<float>& weight) {
  const std::vector<float> bias = {0.5f, -0.5f};
  auto header = safetensors::EncodeHeader(
      {{"fc1.weight", {2, 3}, weight.data()}, {"fc1.bias", {2}, bias.data()}}, {});
  REQUIRE(header.ok());
  const std::string path = (dir.path / "mlp.safetensors").string();
  std::ofstream out(path, std::ios::binary);
  out << *header;
  out.write(reinterpret_cast<const char*>(weight.data()), 24);
  out.write(reinterpret_cast<const char*>(bias.data()), 8);
  return path;
}

TEST_CASE("a safetensors file from PyTorch warm-starts renamed and transposed variables") {
  TempDir dir("warm-start");
  const std::string file = TorchFile(dir, {1, 2, 3, 4, 5, 6});  // [[1, 2, 3], [4, 5, 6]]
  Variable kernel = Var("dense/kernel", {3, 2}, 0.0f), bias = Var("dense/bias", {2}, 0.0f);
  const WarmStartSettings settings = {
      .ckpt_to_initialize_from = file,
      .var_name_to_prev_var_name = {{"dense/kernel", "fc1.weight"}, {"dense/bias", "fc1.bias"}},
      .vars_to_transpose = {".*/kernel$"}};
  auto copied = WarmStartVariables(settings, {&kernel, &bias});
  REQUIRE_MESSAGE(copied.ok(), copied.status().ToString());
  CHECK(*copied == 2);
  // kernel[i][o] = weight[o][i]
  CHECK(std::vector<float>(kernel.value.values().begin(), kernel.value.values().end()) ==
        std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(bias.value.data()[0] == 0.5f);
  CHECK(bias.value.data()[1] == -0.5f);

  // Not transposed, the shapes differ: the error names the variable, both names, both shapes
  // and the file.
  Variable untransposed = Var("dense/kernel", {3, 2}, 0.0f);
  auto wrong = WarmStartVariables({.ckpt_to_initialize_from = file,
                                   .vars_to_warm_start = {"dense/kernel"},
                                   .var_name_to_prev_var_name = {{"dense/kernel", "fc1.weight"}}},
                                  {&untransposed});
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message() ==
        "warm start: dense/kernel (as fc1.weight) does not fit: the model's has shape [3, 2], "
        "file " +
            file + " holds shape [2, 3]");
  // Transposed but still not the model's shape: both shapes, the transposed one too.
  Variable other = Var("dense/kernel", {2, 3}, 0.0f);
  auto still = WarmStartVariables({.ckpt_to_initialize_from = file,
                                   .vars_to_warm_start = {"dense/kernel"},
                                   .var_name_to_prev_var_name = {{"dense/kernel", "fc1.weight"}},
                                   .vars_to_transpose = {"dense/kernel"}},
                                  {&other});
  REQUIRE_FALSE(still.ok());
  CHECK(Has(still.status(), "the model's has shape [2, 3], file " + file +
                                " holds shape [2, 3] (transposed: [3, 2])"));
  for (float x : other.value.values()) CHECK(x == 0.0f);  // nothing copied
  // Only a matrix can be transposed.
  Variable vector = Var("dense/bias", {2}, 0.0f);
  auto not_matrix = WarmStartVariables({.ckpt_to_initialize_from = file,
                                        .var_name_to_prev_var_name = {{"dense/bias", "fc1.bias"}},
                                        .vars_to_transpose = {".*"}},
                                       {&vector});
  REQUIRE_FALSE(not_matrix.ok());
  CHECK(Has(not_matrix.status(), "holds shape [2], not a matrix to transpose"));
  // One source tensor for two variables, one of them transposed: refused, not guessed.
  Variable square = Var("square/kernel", {1, 2}, 0.0f), flat = Var("flat", {2}, 0.0f);
  auto both = WarmStartVariables(
      {.ckpt_to_initialize_from = file,
       .var_name_to_prev_var_name = {{"square/kernel", "fc1.bias"}, {"flat", "fc1.bias"}},
       .vars_to_transpose = {"square"}},
      {&square, &flat});
  CHECK(Has(both.status(),
            "tensor fc1.bias seeds variables both transposed and not (flat is not "
            "matched by vars_to_transpose)"));
  auto bad =
      WarmStartVariables({.ckpt_to_initialize_from = file, .vars_to_transpose = {"("}}, {&vector});
  CHECK(Has(bad.status(), "vars_to_transpose: \"(\" is not a regular expression"));
}

TEST_CASE("a hostile or missing safetensors file is an error naming it") {
  TempDir dir("warm-start");
  const std::string file = TorchFile(dir, {1, 2, 3, 4, 5, 6});
  Variable bias = Var("fc1.bias", {2}, 0.0f);
  fs::resize_file(file, fs::file_size(file) - 4);
  auto truncated = WarmStartVariables({.ckpt_to_initialize_from = file}, {&bias});
  REQUIRE_FALSE(truncated.ok());
  CHECK(truncated.status().code() == absl::StatusCode::kDataLoss);
  CHECK(Has(truncated.status(), file + ": tensor \"fc1.bias\""));
  auto missing = WarmStartVariables(
      {.ckpt_to_initialize_from = (dir.path / "none.safetensors").string()}, {&bias});
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(Has(missing.status(), "none.safetensors"));
}

}  // namespace
}  // namespace taas
