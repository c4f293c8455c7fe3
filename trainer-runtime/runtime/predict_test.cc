// Predicting (taas/runtime/predict.h): the predictions file in both formats, complete or absent,
// and taas::Predict against the hostile cases: no checkpoint, a corrupt one, one of another
// model, outputs that do not fit the batch, an output that cannot be written. `taas predict`
// end to end: examples/fashion-mnist-models/run_job_test.sh (fashion_mnist_mlp_job).
#include "taas/runtime/predict.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "taas/checkpoint/checkpoint.h"
#include "taas/data/batch.h"
#include "taas/data/numpy.h"
#include "testing/temp_dir.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

using runtime_testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_CASE("CSV predictions: outputs, class, label, targets; complete only after Finish") {
  TempDir dir("predict");
  const std::string path = dir.Sub("p.csv");
  auto writer = PredictionWriter::Create(path).value();
  REQUIRE(writer
              ->Append(2, 3, std::vector<float>{1, 3, 2, 0.1f, -1, -2}, true,
                       std::vector<std::int32_t>{1, 2}, {})
              .ok());
  // Equal outputs: the first is the class, as numpy's argmax.
  REQUIRE(writer->Append(1, 3, std::vector<float>{5, 5, 1}, true, std::vector<std::int32_t>{0}, {})
              .ok());
  CHECK_FALSE(fs::exists(path));
  CHECK(fs::exists(path + ".partial"));
  REQUIRE(writer->Finish().ok());
  CHECK(ReadFile(path) ==
        "output_0,output_1,output_2,class,label\n"
        "1,3,2,1,1\n"
        "0.100000001,-1,-2,0,2\n"
        "5,5,1,0,0\n");
  CHECK_FALSE(fs::exists(path + ".partial"));
  CHECK(writer->examples() == 3);
  CHECK(writer->correct() == 2);

  // A regression's values beside its targets; no class, so no accuracy.
  auto regression = PredictionWriter::Create(dir.Sub("r.csv")).value();
  REQUIRE(regression
              ->Append(2, 1, std::vector<float>{0.5f, 2}, false, {}, std::vector<float>{1, 2, 3, 4})
              .ok());
  REQUIRE(regression->Finish().ok());
  CHECK(ReadFile(dir.Sub("r.csv")) == "output_0,target_0,target_1\n0.5,1,2\n2,3,4\n");
  CHECK_FALSE(regression->correct().has_value());
}

TEST_CASE("NPY predictions read back with numpy's header and the data as written") {
  TempDir dir("predict");
  const std::string path = dir.Sub("p.npy");
  auto writer = PredictionWriter::Create(path).value();
  const std::vector<float> first = {1, 2, 4, 3}, second = {9, 8};
  REQUIRE(writer->Append(2, 2, first, true, {}, {}).ok());
  REQUIRE(writer->Append(1, 2, second, true, {}, {}).ok());
  REQUIRE(writer->Finish().ok());
  for (const auto& [file, dtype, shape] :
       {std::tuple{path, data::NpyDtype::kFloat32, std::vector<std::int64_t>{3, 2}},
        std::tuple{dir.Sub("p.classes.npy"), data::NpyDtype::kInt32,
                   std::vector<std::int64_t>{3}}}) {
    const std::string bytes = ReadFile(file);
    const std::string name = file;  // clang 14 cannot capture a structured binding
    CAPTURE(name);
    const std::uint64_t header_bytes = data::NpyHeaderBytes(bytes, 1 << 16).value();
    CHECK(header_bytes % 64 == 0);  // numpy's alignment of the data
    const data::NpyHeader header =
        data::ParseNpyHeader(std::string_view(bytes).substr(0, header_bytes), bytes.size()).value();
    CHECK(header.dtype == dtype);
    CHECK(header.shape == shape);
  }
  const std::string outputs = ReadFile(path);
  std::vector<float> values(6);
  std::memcpy(values.data(), outputs.data() + outputs.size() - 24, 24);
  CHECK(values == std::vector<float>{1, 2, 4, 3, 9, 8});
  const std::string classes = ReadFile(dir.Sub("p.classes.npy"));
  std::vector<std::int32_t> predicted(3);
  std::memcpy(predicted.data(), classes.data() + classes.size() - 12, 12);
  CHECK(predicted == std::vector<std::int32_t>{1, 0, 0});
}

TEST_CASE("a predictions file is refused for a bad name, and nothing is left when unfinished") {
  TempDir dir("predict");
  CHECK(PredictionWriter::Create(dir.Sub("p.txt")).status().code() ==
        absl::StatusCode::kInvalidArgument);
  const auto missing = PredictionWriter::Create(dir.Sub("no/such/p.csv"));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()).find(dir.Sub("no/such/p.csv.partial")) !=
        std::string::npos);
  {
    auto writer = PredictionWriter::Create(dir.Sub("p.npy")).value();
    REQUIRE(writer->Append(1, 2, std::vector<float>{1, 2}, true, {}, {}).ok());
    const absl::Status other = writer->Append(1, 3, std::vector<float>{1, 2, 3}, true, {}, {});
    CHECK(other.code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(other.message()) ==
          "predict: the batch of examples 1-1: 3 outputs per example (classes), the first batch 2 "
          "(classes)");
  }
  CHECK(fs::is_empty(dir.path));  // neither p.npy, p.classes.npy nor their .partial files
  auto empty = PredictionWriter::Create(dir.Sub("e.csv")).value();
  CHECK(empty->Finish().code() == absl::StatusCode::kInvalidArgument);
}

// Batches of one float each, the values given; the labels their index.
class Batches final : public data::BatchStream {
 public:
  explicit Batches(std::vector<float> values) : values_(std::move(values)) {}
  absl::StatusOr<std::optional<data::Batch>> NextBatch() override {
    if (next_ == values_.size()) return std::nullopt;
    data::Batch batch;
    batch.images = Tensor({1, 1}, std::vector<float>{values_[next_]});
    batch.labels = {static_cast<std::int32_t>(next_)};
    ++next_;
    return batch;
  }

 private:
  std::vector<float> values_;
  std::size_t next_ = 0;
};

// Two logits per input x: w0 * x and w1 * x; `rows_off` returns one row too many.
class Scale final : public DistModel {
 public:
  explicit Scale(bool rows_off = false) : rows_off_(rows_off) {}
  absl::Status build_model(ModelBuilder& builder) override {
    CHECK(builder.info().predicting);
    builder.AddVariable(&w_);
    return absl::OkStatus();
  }
  StepResult train(Session&) override { return {}; }
  absl::StatusOr<std::unique_ptr<data::BatchStream>> predict_inputs(
      Session&, const PredictRequest& request) override {
    CHECK(request.inputs == std::vector<std::string>{"a,b"});
    return std::make_unique<Batches>(std::vector<float>{1, -1, 2});
  }
  absl::StatusOr<PredictOutputs> predict(Session&, const data::Batch& batch) override {
    const float x = batch.images.values()[0];
    const auto w = w_.value.values();
    if (rows_off_) return PredictOutputs{Tensor({2, 2}), true};
    return PredictOutputs{Tensor({1, 2}, std::vector<float>{w[0] * x, w[1] * x}), true};
  }

 private:
  Variable w_{"w", Tensor({2}), Tensor({2})};
  bool rows_off_;
};

TEST_CASE("Predict restores the checkpoint, writes every batch's outputs and the accuracy") {
  TempDir dir("predict");
  PredictOptions options;
  options.model_dir = dir.Sub("model");
  options.inputs = {"a,b"};  // a pattern with a comma reaches the model as one
  options.output = dir.Sub("p.csv");
  const auto factory = [] { return std::make_unique<Scale>(); };

  const auto none = Predict(factory, options);
  CHECK(none.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(none.status().message()).find("no checkpoint in " + options.model_dir) == 0);

  REQUIRE(checkpoint::Save(options.model_dir, 7, {{"w", {1, -1}, std::vector<std::int64_t>{2}}}, 5)
              .ok());
  const auto done = Predict(factory, options);
  REQUIRE_MESSAGE(done.ok(), done.status().ToString());
  CHECK(done->global_step == 7);
  CHECK(done->examples == 3);
  CHECK(done->outputs_per_example == 2);
  CHECK(done->accuracy == doctest::Approx(2.0 / 3));  // labels 0, 1, 2; classes 0, 1, 0
  CHECK(ReadFile(options.output) ==
        "output_0,output_1,class,label\n1,-1,0,0\n-1,1,1,1\n2,-2,0,2\n");

  // A named checkpoint wins over the model dir's newest.
  REQUIRE(checkpoint::Save(options.model_dir, 9, {{"w", {-1, 1}}}, 5).ok());
  options.checkpoint = options.model_dir + "/model.ckpt-7";
  CHECK(Predict(factory, options)->global_step == 7);
  options.checkpoint.clear();
  CHECK(Predict(factory, options)->global_step == 9);
}

TEST_CASE(
    "Predict refuses a checkpoint of another model, a corrupt one and outputs that do not "
    "fit, leaving no output") {
  TempDir dir("predict");
  PredictOptions options;
  options.model_dir = dir.Sub("model");
  options.inputs = {"a,b"};
  options.output = dir.Sub("p.csv");
  const auto factory = [] { return std::make_unique<Scale>(); };

  REQUIRE(
      checkpoint::Save(options.model_dir, 1, {{"w", {1, 2, 3}, std::vector<std::int64_t>{3}}}, 5)
          .ok());
  const auto other = Predict(factory, options);
  CHECK(other.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(other.status().message())
            .find("does not match the model: variable w is [3] in the checkpoint, [2] in the "
                  "model") != std::string::npos);

  const std::string prefix = checkpoint::Save(options.model_dir, 2, {{"w", {1, 2}}}, 5).value();
  const auto rows_off = Predict([] { return std::make_unique<Scale>(true); }, options);
  CHECK(rows_off.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(rows_off.status().message()) ==
        "predict: the batch of examples 0-0: predict() returned outputs [2, 2] for a batch of 1 "
        "examples: expected [1, k]");

  // The newest checkpoint's data cut short: a named one is refused; the dir falls back to the
  // newest that verifies (step 1, of another shape here).
  fs::resize_file(prefix + ".safetensors", 4);
  options.checkpoint = prefix;
  CHECK(Predict(factory, options).status().code() == absl::StatusCode::kDataLoss);
  CHECK(fs::directory_iterator(dir.path)->path().filename() == "model");
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

}  // namespace
}  // namespace taas
