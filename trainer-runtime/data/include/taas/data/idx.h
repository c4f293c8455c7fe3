// Reading IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or plain.
//
// Errors are values: a missing, corrupt or truncated file gives an absl::Status whose message
// names the file and the byte offset (in the decompressed stream) where reading failed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::data {

// Images as stored: `count` images of rows x cols unsigned bytes, row-major.
struct IdxImages {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;
};

// What an IDX file may make a reader allocate. The header's sizes are checked against this before
// anything is allocated, and the payload is read in chunks, so a header declaring more than the
// file holds fails at the end of the data having allocated only what arrived; decompression stops
// after the declared bytes (a gzip bomb's tail is never inflated).
struct IdxLimits {
  std::int64_t max_bytes = std::int64_t{2} << 30;  // Pixels or labels of one file.
};

absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path, const IdxLimits& limits = {});
absl::StatusOr<std::vector<std::uint8_t>> ReadIdxLabels(const std::string& path,
                                                        const IdxLimits& limits = {});

// One split of an image-classification data set, kept as bytes (a quarter of float32's memory);
// the pipeline converts to floats in [0, 1] batch by batch.
struct ImageDataset {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols
  std::vector<std::uint8_t> labels;  // count
  std::string labels_path;           // Where the labels came from, for errors.
};

// DataLoss naming the labels file and the first example whose label is not in [0, num_classes):
// checked once at load, so a bad label fails the model's build, not a training step.
absl::Status CheckLabels(const ImageDataset& dataset, std::int64_t num_classes);

// Reads `<dir>/train-images-idx3-ubyte.gz` and its labels (split "train") or the `t10k-` files
// (split "test"), checking that images and labels agree in count.
absl::StatusOr<ImageDataset> LoadMnistSplit(const std::string& dir, const std::string& split,
                                            const IdxLimits& limits = {});

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

}  // namespace taas::data
