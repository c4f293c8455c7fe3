#include "taas/data/split.h"

#include <cmath>
#include <string>
#include <utility>

#include "random.h"

namespace taas::data {

absl::Status CheckView(const DatasetView& view) {
  if (view.dataset == nullptr) return absl::InvalidArgumentError("the data set is null");
  const ImageDataset& d = *view.dataset;
  // The vectors must hold what count, rows and cols say: readers index them by those.
  std::int64_t pixels = 0;
  const bool fits = d.count >= 0 && d.rows >= 0 && d.cols >= 0 &&
                    !__builtin_mul_overflow(d.count, d.rows, &pixels) &&
                    !__builtin_mul_overflow(pixels, d.cols, &pixels);
  if (!fits || static_cast<std::uint64_t>(pixels) != d.pixels.size() ||
      static_cast<std::uint64_t>(d.count) != d.labels.size()) {
    return absl::InvalidArgumentError("the data set holds " + std::to_string(d.pixels.size()) +
                                      " pixel bytes and " + std::to_string(d.labels.size()) +
                                      " labels, not count x rows x cols (" +
                                      std::to_string(d.count) + " x " + std::to_string(d.rows) +
                                      " x " + std::to_string(d.cols) + ") and count");
  }
  for (std::size_t i = 0; i < view.indices.size(); ++i) {
    if (view.indices[i] < 0 || view.indices[i] >= d.count) {
      return absl::InvalidArgumentError(
          "view index " + std::to_string(i) + " is " + std::to_string(view.indices[i]) +
          ", not an example of a data set of " + std::to_string(d.count));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DatasetView> ViewOf(std::shared_ptr<const ImageDataset> dataset) {
  DatasetView view{std::move(dataset), {}};
  TAAS_RETURN_IF_ERROR(CheckView(view));
  view.indices.resize(static_cast<std::size_t>(view.dataset->count));
  for (std::size_t i = 0; i < view.indices.size(); ++i) {
    view.indices[i] = static_cast<std::int64_t>(i);
  }
  return view;
}

absl::StatusOr<TrainValidationSplit> SplitTrainValidation(const DatasetView& view,
                                                          double validation_fraction,
                                                          std::uint64_t seed) {
  if (!(validation_fraction > 0.0 && validation_fraction < 1.0)) {
    return absl::InvalidArgumentError("split: validation_fraction must be in (0, 1), got " +
                                      std::to_string(validation_fraction));
  }
  TAAS_RETURN_IF_ERROR(CheckView(view));
  const std::int64_t size = view.size();
  const auto train_size = static_cast<std::int64_t>(
      std::floor(static_cast<double>(size) * (1.0 - validation_fraction)));
  const std::int64_t validation_size = size - train_size;
  if (train_size == 0 || validation_size == 0) {
    return absl::InvalidArgumentError(
        "split: validation_fraction " + std::to_string(validation_fraction) + " of " +
        std::to_string(size) + " examples leaves " + std::to_string(train_size) +
        " for training and " + std::to_string(validation_size) +
        " for validation; both need at least one");
  }
  // The first validation_size positions of a seeded Fisher-Yates permutation are the validation
  // part; both parts are then read in the view's order.
  std::vector<std::size_t> order(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::uint64_t state = seed;
  std::vector<bool> in_validation(order.size(), false);
  for (std::size_t i = 0; i < static_cast<std::size_t>(validation_size); ++i) {
    const std::size_t j = i + internal::NextRandom(state) % (order.size() - i);
    std::swap(order[i], order[j]);
    in_validation[order[i]] = true;
  }
  TrainValidationSplit split{{view.dataset, {}}, {view.dataset, {}}};
  split.train.indices.reserve(static_cast<std::size_t>(train_size));
  split.validation.indices.reserve(static_cast<std::size_t>(validation_size));
  for (std::size_t p = 0; p < order.size(); ++p) {
    (in_validation[p] ? split.validation : split.train).indices.push_back(view.indices[p]);
  }
  return split;
}

absl::StatusOr<TrainValidationSplit> SplitValidationFirst(const DatasetView& view,
                                                          std::int64_t validation_size) {
  TAAS_RETURN_IF_ERROR(CheckView(view));
  if (validation_size < 1 || validation_size >= view.size()) {
    return absl::InvalidArgumentError("split: validation_size must be in [1, " +
                                      std::to_string(view.size() - 1) + "] for a view of " +
                                      std::to_string(view.size()) + " examples, got " +
                                      std::to_string(validation_size));
  }
  const auto first = view.indices.begin() + validation_size;
  return TrainValidationSplit{{view.dataset, {first, view.indices.end()}},
                              {view.dataset, {view.indices.begin(), first}}};
}

absl::StatusOr<DatasetView> Shard(const DatasetView& view, std::int64_t num_shards,
                                  std::int64_t index) {
  if (num_shards < 1) {
    return absl::InvalidArgumentError("shard: num_shards must be >= 1, got " +
                                      std::to_string(num_shards));
  }
  if (index < 0 || index >= num_shards) {
    return absl::InvalidArgumentError("shard: index must be in [0, num_shards), got index " +
                                      std::to_string(index) + " of num_shards " +
                                      std::to_string(num_shards));
  }
  TAAS_RETURN_IF_ERROR(CheckView(view));
  DatasetView shard{view.dataset, {}};
  // Written so that nothing overflows for a num_shards near the int64 limit.
  if (index < view.size()) {
    shard.indices.reserve(static_cast<std::size_t>((view.size() - index - 1) / num_shards + 1));
  }
  for (std::int64_t i = index; i < view.size();
       i = num_shards < view.size() - i ? i + num_shards : view.size()) {
    shard.indices.push_back(view.indices[static_cast<std::size_t>(i)]);
  }
  return shard;
}

}  // namespace taas::data
