#include "taas/runtime/warm_start.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>

#include "taas/checkpoint/checkpoint.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "taas-warm-start-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

bool Has(const absl::Status& status, const std::string& part) {
  return std::string(status.message()).find(part) != std::string::npos;
}

Variable Var(const std::string& name, Shape shape, float fill) {
  Variable v{name, Tensor(shape), Tensor(shape)};
  for (float& x : v.value.values()) x = fill;
  return v;
}

// A previous job's checkpoint at step 200: "dense/kernel" (6 floats of 1), "dense/bias" (3 of
// 2), "old/logits" (4 of 3) and a slot, which a warm start never reads.
std::string PreviousJob(const TempDir& dir) {
  auto saved = checkpoint::Save(dir.path.string(), 200,
                                {{"dense/kernel", std::vector<float>(6, 1.0f)},
                                 {"dense/bias", std::vector<float>(3, 2.0f)},
                                 {"old/logits", std::vector<float>(4, 3.0f)},
                                 {"dense/kernel/slot_0", std::vector<float>(6, 9.0f)}},
                                5);
  REQUIRE(saved.ok());
  return *saved;
}

TEST_CASE("by default every variable is copied from a model dir's newest checkpoint") {
  TempDir dir;
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
  TempDir dir;
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

TEST_CASE("a shape mismatch names the variable, its shape, both counts and the checkpoint") {
  TempDir dir;
  const std::string prefix = PreviousJob(dir);
  Variable kernel = Var("dense/kernel", {4, 3}, 0.0f), bias = Var("dense/bias", {3}, 0.0f);
  auto failed =
      WarmStartVariables({.ckpt_to_initialize_from = dir.path.string()}, {&bias, &kernel});
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string message(failed.status().message());
  CHECK(message.find("dense/kernel") != std::string::npos);
  CHECK(message.find(ShapeString(kernel.value.shape())) != std::string::npos);
  CHECK(message.find("12 elements") != std::string::npos);
  CHECK(message.find("holds 6 elements") != std::string::npos);
  CHECK(message.find(prefix) != std::string::npos);
  // Nothing was copied, not even the variable checked before the bad one.
  for (float x : bias.value.values()) CHECK(x == 0.0f);
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
  TempDir dir;
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
  TempDir dir;
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
  TempDir dir;
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

  TempDir empty;
  auto none = WarmStartVariables({.ckpt_to_initialize_from = empty.path.string()}, {&other});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == absl::StatusCode::kNotFound);
  auto nowhere = WarmStartVariables(
      {.ckpt_to_initialize_from = (empty.path / "model.ckpt-5").string()}, {&other});
  REQUIRE_FALSE(nowhere.ok());
  CHECK(std::string(nowhere.status().message()).find("model.ckpt-5") != std::string::npos);

  // A checkpoint whose data does not verify is the checkpoint reader's DataLoss.
  fs::resize_file(prefix + ".data", 4);
  auto corrupt = WarmStartVariables({.ckpt_to_initialize_from = prefix}, {&other});
  REQUIRE_FALSE(corrupt.ok());
  CHECK(corrupt.status().code() == absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace taas
