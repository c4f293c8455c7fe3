#include "taas/data/pipeline.h"

#include <string>
#include <utility>

#include "taas/data/shuffle_buffer.h"

namespace taas::data {

absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(
    std::shared_ptr<const ImageDataset> dataset, PipelineOptions options) {
  absl::StatusOr<DatasetView> view = ViewOf(std::move(dataset));
  if (!view.ok()) {
    return absl::InvalidArgumentError("pipeline: " + std::string(view.status().message()));
  }
  return Create(*std::move(view), std::move(options));
}

absl::StatusOr<std::unique_ptr<Pipeline>> Pipeline::Create(DatasetView view,
                                                           PipelineOptions options) {
  if (absl::Status status = CheckView(view); !status.ok()) {
    return absl::InvalidArgumentError("pipeline: " + std::string(status.message()));
  }
  const ImageDataset& dataset = *view.dataset;
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError("pipeline: batch_size must be >= 1, got " +
                                      std::to_string(options.batch_size));
  }
  if (options.num_shards < 1 || options.shard_index < 0 ||
      options.shard_index >= options.num_shards) {
    return absl::InvalidArgumentError(
        "pipeline: shard_index must be in [0, num_shards), got shard_index " +
        std::to_string(options.shard_index) + " of num_shards " +
        std::to_string(options.num_shards));
  }
  if (options.shard_index >= view.size()) {
    return absl::InvalidArgumentError("pipeline: shard " + std::to_string(options.shard_index) +
                                      " of " + std::to_string(options.num_shards) +
                                      " has no examples in a data set of " +
                                      std::to_string(view.size()));
  }
  if (options.example_shape.empty()) options.example_shape = {dataset.rows, dataset.cols, 1};
  if (NumElements(options.example_shape) != dataset.rows * dataset.cols) {
    return absl::InvalidArgumentError("pipeline: example_shape " +
                                      ShapeString(options.example_shape) + " does not hold " +
                                      std::to_string(dataset.rows * dataset.cols) + " pixels");
  }
  if (!options.device.is_cpu() && MemoryFor(options.device.type) == nullptr) {
    return absl::InvalidArgumentError("pipeline: device " + DeviceName(options.device) +
                                      " has no engine in this binary (TAAS_DEVICE=cpu runs "
                                      "without)");
  }
  if (options.prefetch < 0) options.prefetch = 0;
  TAAS_ASSIGN_OR_RETURN(DatasetView shard, Shard(view, options.num_shards, options.shard_index));
  std::unique_ptr<Pipeline> pipeline(new Pipeline(std::move(shard), std::move(options)));
  if (pipeline->options_.prefetch > 0)
    pipeline->thread_ = std::thread([p = pipeline.get()] { p->Run(); });
  return pipeline;
}

Pipeline::Pipeline(DatasetView shard, PipelineOptions options)
    : dataset_(std::move(shard.dataset)),
      options_(std::move(options)),
      indices_(std::move(shard.indices)),
      buffer_(options_.shuffle_buffer, options_.seed) {}

Pipeline::~Pipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::int64_t Pipeline::NextIndex() {
  // The buffer holds examples of the current epoch only, so each epoch is a permutation of the
  // shard (tf.data's shuffle().repeat()); the next epoch starts once the buffer has drained.
  if (buffer_.empty() && cursor_ == indices_.size() && options_.repeat && !indices_.empty()) {
    cursor_ = 0;
    ++epoch_;
  }
  while (!buffer_.full() && cursor_ < indices_.size()) buffer_.Push(indices_[cursor_++]);
  if (buffer_.empty()) return -1;
  return buffer_.Take();
}

std::optional<Batch> Pipeline::Produce() {
  const std::int64_t pixels = dataset_->rows * dataset_->cols;
  std::vector<std::int64_t> picked;
  picked.reserve(static_cast<std::size_t>(options_.batch_size));
  std::int64_t epoch = epoch_;
  while (static_cast<std::int64_t>(picked.size()) < options_.batch_size) {
    const std::int64_t index = NextIndex();
    if (index < 0) break;
    if (picked.empty()) epoch = epoch_;
    picked.push_back(index);
  }
  if (picked.empty()) return std::nullopt;
  if (options_.drop_remainder && static_cast<std::int64_t>(picked.size()) < options_.batch_size) {
    return std::nullopt;
  }
  Shape shape = {static_cast<std::int64_t>(picked.size())};
  shape.insert(shape.end(), options_.example_shape.begin(), options_.example_shape.end());
  Batch batch{Tensor(shape), std::vector<std::int32_t>(picked.size()), epoch};
  float* out = batch.images.data();
  constexpr float kScale = 1.0f / 255.0f;
  for (std::size_t b = 0; b < picked.size(); ++b) {
    const std::uint8_t* in = dataset_->pixels.data() + picked[b] * pixels;
    float* row = out + static_cast<std::int64_t>(b) * pixels;
    for (std::int64_t p = 0; p < pixels; ++p) row[p] = static_cast<float>(in[p]) * kScale;
    batch.labels[b] = dataset_->labels[static_cast<std::size_t>(picked[b])];
  }
  // Here, on the prefetch thread, so the copy overlaps the model's step.
  if (!options_.device.is_cpu()) batch.images = batch.images.To(options_.device);
  return batch;
}

void Pipeline::Run() {
  for (;;) {
    std::optional<Batch> batch;
    std::exception_ptr error;
    try {
      batch = Produce();
    } catch (...) {  // a failing device: the consumer rethrows it, then the pipeline is done
      error = std::current_exception();
    }
    const bool end = !batch.has_value();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_ || static_cast<int>(ready_.size()) < options_.prefetch; });
    if (stop_) return;
    if (error) error_ = error;
    ready_.push_back(std::move(batch));
    cv_.notify_all();
    if (end) return;
  }
}

absl::StatusOr<std::optional<Batch>> Pipeline::NextBatch() {
  try {
    return Next();
  } catch (const std::exception& e) {
    return absl::InternalError("pipeline: copying a batch to " + DeviceName(options_.device) +
                               " failed: " + e.what());
  } catch (...) {
    return absl::InternalError("pipeline: copying a batch to " + DeviceName(options_.device) +
                               " failed");
  }
}

std::optional<Batch> Pipeline::Next() {
  if (finished_) return std::nullopt;
  if (options_.prefetch == 0) {
    auto batch = Produce();
    finished_ = !batch.has_value();
    return batch;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty(); });
  std::optional<Batch> batch = std::move(ready_.front());
  ready_.pop_front();
  cv_.notify_all();
  finished_ = !batch.has_value();
  if (finished_ && error_) std::rethrow_exception(error_);
  return batch;
}

}  // namespace taas::data
