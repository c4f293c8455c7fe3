#include "taas/data/idx_files.h"

#include <filesystem>
#include <optional>
#include <utility>

#include "taas/data/file_patterns.h"
#include "taas/data/idx.h"

namespace taas::data {
namespace {

// Batches of a pipeline without their labels: the pipeline's batches always carry labels, which
// are zeros for images that came without a labels file.
class WithoutLabels final : public BatchStream {
 public:
  explicit WithoutLabels(std::unique_ptr<Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}
  absl::StatusOr<std::optional<Batch>> NextBatch() override {
    TAAS_ASSIGN_OR_RETURN(std::optional<Batch> batch, pipeline_->NextBatch());
    if (batch) batch->labels.clear();
    return batch;
  }

 private:
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace

std::string IdxLabelsFileOf(const std::string& images) {
  const std::string part = "-images-idx3-ubyte";
  const std::size_t at = images.rfind(part);
  if (at == std::string::npos) return "";
  return images.substr(0, at) + "-labels-idx1-ubyte" + images.substr(at + part.size());
}

absl::StatusOr<std::unique_ptr<BatchStream>> OpenIdxImageFiles(
    const std::vector<std::string>& patterns, PipelineOptions options) {
  TAAS_ASSIGN_OR_RETURN(const std::vector<std::string> files, MatchFiles(patterns));
  auto dataset = std::make_shared<ImageDataset>();
  std::int64_t labelled = 0;
  for (const std::string& file : files) {
    TAAS_ASSIGN_OR_RETURN(IdxImages images, ReadIdxImages(file));
    // The network's input is the example shape: another image size is this input's error, not a
    // layer's.
    if (!options.example_shape.empty() &&
        images.rows * images.cols != NumElements(options.example_shape)) {
      return absl::InvalidArgumentError(
          file + ": images of " + std::to_string(images.rows) + " x " +
          std::to_string(images.cols) + " pixels, but the model takes " +
          ShapeString(options.example_shape) + " (" +
          std::to_string(NumElements(options.example_shape)) + " pixels)");
    }
    if (dataset->count > 0 && (images.rows != dataset->rows || images.cols != dataset->cols)) {
      return absl::InvalidArgumentError(file + ": images of " + std::to_string(images.rows) +
                                        " x " + std::to_string(images.cols) +
                                        " pixels after files of " + std::to_string(dataset->rows) +
                                        " x " + std::to_string(dataset->cols));
    }
    std::vector<std::uint8_t> labels(static_cast<std::size_t>(images.count), 0);
    const std::string labels_file = IdxLabelsFileOf(file);
    if (!labels_file.empty() && std::filesystem::exists(labels_file)) {
      TAAS_ASSIGN_OR_RETURN(labels, ReadIdxLabels(labels_file));
      if (static_cast<std::int64_t>(labels.size()) != images.count) {
        return absl::DataLossError(labels_file + " has " + std::to_string(labels.size()) +
                                   " labels but " + file + " has " + std::to_string(images.count) +
                                   " images");
      }
      labelled += images.count;
    }
    dataset->count += images.count;
    dataset->rows = images.rows;
    dataset->cols = images.cols;
    dataset->pixels.insert(dataset->pixels.end(), images.pixels.begin(), images.pixels.end());
    dataset->labels.insert(dataset->labels.end(), labels.begin(), labels.end());
  }
  if (labelled != 0 && labelled != dataset->count) {
    return absl::InvalidArgumentError(
        "predict inputs: some image files have a labels file beside them and some do not: give "
        "either kind alone");
  }
  options.shuffle_buffer = 0;
  options.repeat = false;
  options.drop_remainder = false;
  options.shard_index = 0;
  options.num_shards = 1;
  TAAS_ASSIGN_OR_RETURN(auto pipeline, Pipeline::Create(std::move(dataset), options));
  if (labelled == 0) return std::make_unique<WithoutLabels>(std::move(pipeline));
  return std::unique_ptr<BatchStream>(std::move(pipeline));
}

}  // namespace taas::data
