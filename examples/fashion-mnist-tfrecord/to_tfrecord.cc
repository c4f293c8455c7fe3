// fashion-mnist-to-tfrecord: writes Fashion-MNIST's IDX files as sharded TFRecord files of
// tf.train.Examples (taas/fashion_mnist/tfrecords.h), the input of this folder's jobs:
//
//   fashion-mnist-to-tfrecord --out_dir /tmp/fashion-mnist-tfrecord [--data_dir DIR]
//                             [--train_shards 4] [--test_shards 1]
//
// writes OUT_DIR/train-0000k-of-00004.tfrecord and OUT_DIR/test-00000-of-00001.tfrecord (made if
// missing). No TensorFlow is needed: the records are framed and serialised by taas::data.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "taas/data/idx.h"
#include "taas/fashion_mnist/tfrecords.h"
#include "taas/flags/flags.h"

namespace {

absl::Status Convert(const std::vector<std::string>& args) {
  std::string data_dir = taas::data::kFashionMnistDir;
  std::string out_dir;
  int train_shards = 4;
  int test_shards = 1;
  taas::flags::FlagSet flags;
  flags.String("data_dir", &data_dir);
  flags.String("out_dir", &out_dir);
  flags.Int("train_shards", 1, 10000, &train_shards);
  flags.Int("test_shards", 1, 10000, &test_shards);
  TAAS_ASSIGN_OR_RETURN(const auto parsed, flags.Parse(args));
  if (parsed.help || !parsed.positional.empty() || out_dir.empty()) {
    return absl::InvalidArgumentError(
        "usage: fashion-mnist-to-tfrecord --out_dir DIR [--data_dir DIR] [--train_shards N] "
        "[--test_shards N]");
  }
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) return absl::InternalError(out_dir + ": cannot create the folder: " + error.message());
  for (const auto& [split, shards] : {std::pair{"train", train_shards}, {"test", test_shards}}) {
    TAAS_ASSIGN_OR_RETURN(const taas::data::ImageDataset dataset,
                          taas::data::LoadMnistSplit(data_dir, split));
    TAAS_ASSIGN_OR_RETURN(
        const std::vector<std::string> files,
        taas::fashion_mnist::WriteTfRecordShards(dataset, out_dir, split, shards));
    std::cout << split << ": " << dataset.count << " examples in " << files.size() << " files, "
              << files.front() << (files.size() > 1 ? " ..." : "") << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  const absl::Status status = Convert(std::vector<std::string>(argv + 1, argv + argc));
  if (!status.ok()) {
    std::cerr << "fashion-mnist-to-tfrecord: " << status.message() << "\n";
    return 2;
  }
  return 0;
}
