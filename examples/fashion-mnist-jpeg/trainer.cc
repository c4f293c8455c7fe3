// fashion-mnist-jpeg-cnn: the main job's CNN (examples/fashion-mnist-models) trained from a folder
// of JPEG files, one folder per class, as a team with its own images would: the image folder
// reader (taas/data/image_folder.h) and the stream pipeline, no IDX file. Make the folder first:
//
//   build/examples/fashion-mnist-jpeg/make-fashion-mnist-jpeg --out /tmp/fashion-mnist-jpeg
//   build/launcher/taas run examples/fashion-mnist-jpeg/job.yaml --build-dir build
//
// Model arguments (after `--`): --data_dir=DIR (holding train/ and test/, default
// /tmp/fashion-mnist-jpeg), --batch_size=N (100), --eval_batch_size=N (500),
// --decode_threads=N (1), --seed=N (1).
//
// `taas predict ... --input DIR` writes each image's 10 logits, its class and its label: DIR
// holds class folders (the training folder's classes), or is a list file of
// "path label" lines (taas/data/image_folder.h).
#include "taas/fashion_mnist/trainer.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "taas/data/image_folder.h"
#include "taas/data/stream_pipeline.h"
#include "taas/fashion_mnist/models.h"
#include "taas/runtime/dist_model.h"
#include "taas/runtime/model_args.h"

namespace {

namespace data = taas::data;
namespace fm = taas::fashion_mnist;

class FashionMnistJpegCnn final : public taas::DistModel {
 public:
  absl::Status build_model(taas::ModelBuilder& builder) override {
    const taas::TrainerInfo& info = builder.info();
    std::int64_t seed = 1;
    taas::flags::FlagSet flags;
    flags.String("data_dir", &data_dir_);
    flags.Int("batch_size", 1, std::int64_t{1} << 20, &batch_size_);
    flags.Int("eval_batch_size", 1, std::int64_t{1} << 20, &eval_batch_size_);
    flags.Int("decode_threads", 1, 64, &decode_threads_);
    flags.Int("seed", 0, std::numeric_limits<std::int64_t>::max(), &seed);
    TAAS_RETURN_IF_ERROR(taas::ParseModelArgs(flags, info.args));
    if (info.replicas_per_worker != 1) {
      return absl::InvalidArgumentError("fashion-mnist-jpeg-cnn runs one replica a worker");
    }
    seed_ = static_cast<std::uint64_t>(seed);
    TAAS_ASSIGN_OR_RETURN(model_, fm::CreateModel("cnn", seed_));
    TAAS_ASSIGN_OR_RETURN(train_files_,
                          data::ImageFolderDataset::FromFolders(data_dir_ + "/train"));
    if (train_files_->num_classes() != fm::kClasses) {
      return absl::InvalidArgumentError(data_dir_ + "/train holds " +
                                        std::to_string(train_files_->num_classes()) +
                                        " class folders; the model has 10 classes");
    }
    const std::int64_t examples_per_step =
        info.strategy == taas::Strategy::kCollective ? batch_size_ * info.num_workers : batch_size_;
    const std::int64_t steps_per_epoch =
        (train_files_->num_parts() + examples_per_step - 1) / examples_per_step;
    builder.SetOptimizer(model_->DefaultOptimizer(steps_per_epoch));
    builder.SetBatchSize(batch_size_);
    builder.AddVariables(model_->variables());
    if (info.role == taas::Role::kEvaluator || info.predicting) return absl::OkStatus();

    TAAS_ASSIGN_OR_RETURN(data::ContextDecodeFn decode,
                          data::MakeImageFolderDecoder(train_files_, Spec()));
    data::StreamOptions options;
    options.batch_size = batch_size_;
    options.example_shape = data::ImageShape(Spec());
    options.shuffle_buffer = 10000;
    options.seed = seed_ * 1000 + static_cast<std::uint64_t>(info.replica_id_in_sync());
    options.repeat = true;
    options.shard_index = info.replica_id_in_sync();
    options.num_shards = std::max(1, info.num_replicas_in_sync());
    options.decode_threads = decode_threads_;
    options.prefetch = 4;
    options.device = info.device;
    TAAS_ASSIGN_OR_RETURN(stream_, data::StreamPipeline::Create(train_files_, decode, options));
    builder.logger().Info("fashion-mnist-jpeg model built",
                          {{"files", train_files_->num_parts()},
                           {"shard_files", static_cast<std::int64_t>(stream_->plan().parts.size())},
                           {"decode_threads", static_cast<std::int64_t>(decode_threads_)}});
    return absl::OkStatus();
  }

  taas::StepResult train(taas::Session&) override {
    taas::StepResult result;
    absl::StatusOr<std::optional<data::Batch>> batch = stream_->NextBatch();
    if (!batch.ok()) {  // a file that does not decode: the error names it
      result.error = batch.status();
      return result;
    }
    batch_ = **std::move(batch);  // repeating: never ends
    auto stats = model_->Step(*batch_);
    if (!stats.ok()) {
      result.error = stats.status();
      return result;
    }
    result.examples = batch_->images.shape()[0];
    result.device_loss = (*stats)->Slice(taas::nn::kLossMean, {1});
    result.device_scalars.emplace("train_accuracy", (*stats)->Slice(taas::nn::kLossAccuracy, {1}));
    return result;
  }

  // The test folder once, in order, each metric the mean over its images.
  absl::StatusOr<std::map<std::string, double>> evaluate(taas::Session& session) override {
    TAAS_ASSIGN_OR_RETURN(
        auto stream, OpenInOrder(data_dir_ + "/test", eval_batch_size_, session.info().device));
    double correct = 0.0;
    double loss = 0.0;
    std::int64_t examples = 0;
    for (;;) {
      TAAS_ASSIGN_OR_RETURN(std::optional<data::Batch> batch, stream->NextBatch());
      if (!batch.has_value()) break;
      TAAS_ASSIGN_OR_RETURN(fm::BatchStats stats, model_->Evaluate(*batch));
      correct += static_cast<double>(stats.correct);
      loss += stats.loss * static_cast<double>(stats.examples);
      examples += stats.examples;
    }
    return std::map<std::string, double>{{"accuracy", correct / static_cast<double>(examples)},
                                         {"loss", loss / static_cast<double>(examples)}};
  }

  void after_train(taas::Session& session, bool is_chief) override {
    if (!is_chief || model_ == nullptr) return;
    const auto metrics = evaluate(session);
    fm::ReportFinalTestAccuracy(session, session.logger().With({{"model", "cnn-jpeg"}}), metrics);
  }

  // One input, read as evaluate() reads the test folder: its labels are written beside the
  // predictions.
  absl::StatusOr<std::unique_ptr<data::BatchStream>> predict_inputs(
      taas::Session&, const taas::PredictRequest& request) override {
    if (request.inputs.size() != 1) {
      return absl::InvalidArgumentError(
          "fashion-mnist-jpeg-cnn predicts on one input, a folder of class folders or a list "
          "file, got " +
          std::to_string(request.inputs.size()));
    }
    TAAS_ASSIGN_OR_RETURN(auto stream,
                          OpenInOrder(request.inputs[0], request.batch_size, request.device));
    return std::unique_ptr<data::BatchStream>(std::move(stream));
  }

  absl::StatusOr<taas::PredictOutputs> predict(taas::Session&, const data::Batch& batch) override {
    TAAS_ASSIGN_OR_RETURN(const taas::Tensor* logits, model_->Logits(batch));
    return taas::PredictOutputs{*logits, true};  // a copy on their device
  }

 private:
  // The images of `input` once, in order, with the training folder's class indices: `input` a
  // folder of class folders, or a list file.
  absl::StatusOr<std::unique_ptr<data::StreamPipeline>> OpenInOrder(const std::string& input,
                                                                    std::int64_t batch_size,
                                                                    taas::Device device) const {
    data::ImageFolderOptions folders;
    std::shared_ptr<data::ImageFolderDataset> images;
    if (std::filesystem::is_directory(input)) {
      folders.class_names = train_files_->class_names();  // the training set's indices
      TAAS_ASSIGN_OR_RETURN(images, data::ImageFolderDataset::FromFolders(input, folders));
    } else {
      folders.num_classes = fm::kClasses;
      TAAS_ASSIGN_OR_RETURN(images, data::ImageFolderDataset::FromListFile(input, folders));
    }
    TAAS_ASSIGN_OR_RETURN(data::ContextDecodeFn decode,
                          data::MakeImageFolderDecoder(images, Spec()));
    data::StreamOptions options;
    options.batch_size = batch_size;
    options.example_shape = data::ImageShape(Spec());
    options.decode_threads = decode_threads_;
    options.device = device;
    return data::StreamPipeline::Create(images, decode, options);
  }

  // The IDX pipeline's input exactly: 28 x 28 gray, no resize, no augmentation, so the two
  // trainings compare.
  static data::ImageSpec Spec() {
    data::ImageSpec spec;
    spec.height = spec.width = 28;
    spec.channels = 1;
    return spec;
  }

  std::string data_dir_ = "/tmp/fashion-mnist-jpeg";
  std::int64_t batch_size_ = 100;
  std::int64_t eval_batch_size_ = 500;
  int decode_threads_ = 1;
  std::uint64_t seed_ = 1;
  std::unique_ptr<fm::Model> model_;
  std::shared_ptr<data::ImageFolderDataset> train_files_;
  std::unique_ptr<data::StreamPipeline> stream_;
  std::optional<data::Batch> batch_;  // the running step's
};

}  // namespace

int main(int argc, char** argv) { return taas::RunMain<FashionMnistJpegCnn>(argc, argv); }
