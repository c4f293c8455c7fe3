// Subsets of an in-memory data set without copying its examples: a train/validation split by
// fraction (seeded) and tf.data's shard. A view is the data set (shared, never copied) and the
// indices of its examples, 8 bytes per example instead of rows x cols; the pipeline
// (pipeline.h) reads a view directly.
//
//   TAAS_ASSIGN_OR_RETURN(auto all, data::ViewOf(train_set));
//   TAAS_ASSIGN_OR_RETURN(auto split, data::SplitTrainValidation(all, 0.1, /*seed=*/42));
//   TAAS_ASSIGN_OR_RETURN(auto mine, data::Shard(split.train, num_workers, worker_index));
//
// Errors are values: InvalidArgument naming the argument, what it must be and what it is.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/idx.h"

namespace taas::data {

// Examples `indices` of `dataset`, in that order. Copying a view copies the indices and shares
// the data set. A view made by the functions below is valid (CheckView); one built by hand is
// checked by each function that takes it.
struct DatasetView {
  std::shared_ptr<const ImageDataset> dataset;
  std::vector<std::int64_t> indices;  // each in [0, dataset->count)

  std::int64_t size() const { return static_cast<std::int64_t>(indices.size()); }
};

// InvalidArgument unless the view has a data set whose vectors hold count x rows x cols pixel
// bytes and count labels, and every index is in [0, count). Indices may repeat.
absl::Status CheckView(const DatasetView& view);

// Every example of `dataset`, in the data set's order; CheckView's errors for a null or
// inconsistent data set.
absl::StatusOr<DatasetView> ViewOf(std::shared_ptr<const ImageDataset> dataset);

struct TrainValidationSplit {
  DatasetView train;
  DatasetView validation;
};

// Splits `view` into two disjoint parts that together hold all of it. The validation part holds
// size - floor(size * (1 - validation_fraction)) examples (Keras's `validation_split` rounding),
// picked by a permutation seeded with `seed`: the same view, fraction and seed give the same
// split on every machine (splitmix64, not the standard library's shuffle). Each part keeps the
// view's order, so a pipeline's shuffle alone decides the training order.
// InvalidArgument when validation_fraction is not in (0, 1) (NaN included) or when either part
// would be empty (a view too small for the fraction); CheckView's errors.
absl::StatusOr<TrainValidationSplit> SplitTrainValidation(const DatasetView& view,
                                                          double validation_fraction,
                                                          std::uint64_t seed);

// TensorFlow's read_data_sets(validation_size=N): the first `validation_size` examples of `view`
// (in its order) are the validation part, the rest the training part; no randomness, so the
// book's "first 5,000 training images" are the same everywhere. InvalidArgument when
// validation_size is not in [1, size - 1] (either part would be empty); CheckView's errors.
absl::StatusOr<TrainValidationSplit> SplitValidationFirst(const DatasetView& view,
                                                          std::int64_t validation_size);

// tf.data's `shard(num_shards, index)`: the examples at positions index, index + num_shards,
// index + 2 * num_shards, ... of `view` (position i goes to shard i % num_shards), in order. A
// shard may be empty when the view has fewer than num_shards examples, as in tf.data.
// InvalidArgument when num_shards < 1 or index is not in [0, num_shards); CheckView's errors.
absl::StatusOr<DatasetView> Shard(const DatasetView& view, std::int64_t num_shards,
                                  std::int64_t index);

}  // namespace taas::data
