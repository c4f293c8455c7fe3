// Fashion-MNIST as TFRecord files of tf.train.Examples, the form a team's own data set usually
// has: what the fashion-mnist-to-tfrecord tool writes and what the trainers read with
// --train_files/--test_files (trainer.h), streamed from disk (data::StreamPipeline) instead of
// held in memory.
//
// Each record is one image: kImageFeature, a bytes_list of one value of rows * cols uint8 pixels
// (row-major, as the IDX file holds them), and kLabelFeature, an int64_list of one class, the
// features TensorFlow's own conversion scripts write.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/example.h"
#include "taas/data/idx.h"
#include "taas/data/stream_pipeline.h"

namespace taas::fashion_mnist {

inline constexpr const char* kImageFeature = "image_raw";
inline constexpr const char* kLabelFeature = "label";

// The name of shard `shard` of `shards` of a split: "train-00001-of-00004.tfrecord".
std::string ShardFileName(const std::string& split, int shard, int shards);

// Writes `dataset` as `shards` TFRecord files in `dir` (which must exist), named by
// ShardFileName, each holding a contiguous run of the examples in the data set's order (the
// sizes differ by at most one). Returns the files' paths. InvalidArgument for shards < 1 or
// more shards than examples; Internal naming the file when writing fails.
absl::StatusOr<std::vector<std::string>> WriteTfRecordShards(const data::ImageDataset& dataset,
                                                             const std::string& dir,
                                                             const std::string& split, int shards);

// The decode step's spec for these records, for a model whose input is `example_shape`
// ({784} or {28, 28, 1}): pixels times 1/255, as the in-memory pipeline gives them.
data::ExampleSpec ExampleSpecFor(const Shape& example_shape);

// A stream of the records in the files `patterns` match (globs, data::MatchFiles), decoded by
// ExampleSpecFor(options.example_shape); `options` say the rest (batch, shard, shuffle, repeat,
// decode threads, prefetch, device). The errors of TfRecordDataset::Create and
// StreamPipeline::Create.
absl::StatusOr<std::unique_ptr<data::StreamPipeline>> OpenTfRecordStream(
    const std::vector<std::string>& patterns, const data::StreamOptions& options);

}  // namespace taas::fashion_mnist
