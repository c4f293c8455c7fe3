#include "taas/fashion_mnist/tfrecords.h"

#include <cstdio>
#include <fstream>
#include <utility>

#include "taas/data/tfrecord.h"
#include "taas/fashion_mnist/models.h"

namespace taas::fashion_mnist {

std::string ShardFileName(const std::string& split, int shard, int shards) {
  char name[64];
  std::snprintf(name, sizeof name, "-%05d-of-%05d.tfrecord", shard, shards);
  return split + name;
}

absl::StatusOr<std::vector<std::string>> WriteTfRecordShards(const data::ImageDataset& dataset,
                                                             const std::string& dir,
                                                             const std::string& split, int shards) {
  if (shards < 1 || shards > dataset.count) {
    return absl::InvalidArgumentError("shards: expected 1 to " + std::to_string(dataset.count) +
                                      " (the examples of " + split + "), got " +
                                      std::to_string(shards));
  }
  const std::int64_t pixels = dataset.rows * dataset.cols;
  std::vector<std::string> paths;
  for (int shard = 0; shard < shards; ++shard) {
    const std::string path = dir + "/" + ShardFileName(split, shard, shards);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return absl::InternalError(path + ": cannot create the file");
    // Examples [first, last) of the data set: contiguous runs whose sizes differ by one at most.
    const std::int64_t first = dataset.count * shard / shards;
    const std::int64_t last = dataset.count * (shard + 1) / shards;
    for (std::int64_t i = first; i < last; ++i) {
      const auto* image = dataset.pixels.data() + i * pixels;
      data::Features features;
      features[kImageFeature] = data::BytesList{
          std::string(reinterpret_cast<const char*>(image), static_cast<std::size_t>(pixels))};
      features[kLabelFeature] = data::Int64List{dataset.labels[static_cast<std::size_t>(i)]};
      const std::string record = data::EncodeTfRecord(data::SerializeExample(features));
      out.write(record.data(), static_cast<std::streamsize>(record.size()));
    }
    out.close();
    if (!out) return absl::InternalError(path + ": writing the records failed (disk full?)");
    paths.push_back(path);
  }
  return paths;
}

data::ExampleSpec ExampleSpecFor(const Shape& example_shape) {
  data::ExampleSpec spec;
  spec.input_feature = kImageFeature;
  spec.label_feature = kLabelFeature;
  spec.example_shape = example_shape;
  spec.num_classes = kClasses;
  return spec;
}

absl::StatusOr<std::unique_ptr<data::StreamPipeline>> OpenTfRecordStream(
    const std::vector<std::string>& patterns, const data::StreamOptions& options) {
  TAAS_ASSIGN_OR_RETURN(auto files, data::TfRecordDataset::Create(patterns));
  TAAS_ASSIGN_OR_RETURN(data::DecodeFn decode,
                        data::MakeExampleDecoder(ExampleSpecFor(options.example_shape)));
  return data::StreamPipeline::Create(std::move(files), std::move(decode), options);
}

}  // namespace taas::fashion_mnist
