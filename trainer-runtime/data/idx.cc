#include "taas/data/idx.h"

#include <algorithm>

#include "gz_file.h"
#include "hex.h"

namespace taas::data {
namespace {

using internal::GzFile;

constexpr std::uint32_t kLabelsMagic = 0x00000801;
constexpr std::uint32_t kImagesMagic = 0x00000803;
// Plausible header values, checked before the limit on bytes.
constexpr std::int64_t kMaxCount = 100'000'000;
constexpr std::int64_t kMaxSide = 65'536;

// A big-endian 32-bit field of an IDX header.
absl::StatusOr<std::uint32_t> ReadBigEndian32(GzFile& file, const std::string& what) {
  unsigned char b[4];
  TAAS_RETURN_IF_ERROR(file.Read(b, 4, what));
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
         std::uint32_t{b[3]};
}

absl::Status ExpectMagic(GzFile& file, std::uint32_t expected) {
  TAAS_ASSIGN_OR_RETURN(std::uint32_t magic, ReadBigEndian32(file, "the magic number"));
  if (magic != expected) {
    return absl::DataLossError(file.path() + ": bad IDX magic number at byte offset 0: " +
                               internal::Hex32(magic) + ", expected " + internal::Hex32(expected));
  }
  return absl::OkStatus();
}

// Reads `size` bytes of `what` into `out`, growing it a chunk at a time: a header that declares
// more than the file holds fails at its end, having allocated only what arrived.
absl::Status ReadGrowing(GzFile& file, std::vector<std::uint8_t>& out, std::uint64_t size,
                         const std::string& what) {
  constexpr std::uint64_t kChunk = 16 << 20;
  out.clear();
  const std::uint64_t start = file.offset();
  while (out.size() < size) {
    const std::size_t have = out.size();
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, size - have));
    out.resize(have + chunk);
    absl::Status s = file.Read(out.data() + have, chunk, what);
    if (!s.ok()) {
      return absl::DataLossError(std::string(s.message()) + " (the header at byte offset 0 " +
                                 "declares " + std::to_string(size) + " bytes from offset " +
                                 std::to_string(start) + ")");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::int64_t> ReadDimension(GzFile& reader, const std::string& what,
                                           std::int64_t limit) {
  const std::uint64_t at = reader.offset();
  TAAS_ASSIGN_OR_RETURN(std::uint32_t value, ReadBigEndian32(reader, what));
  if (value > limit) {
    return absl::DataLossError(reader.path() + ": implausible " + what + " " +
                               std::to_string(value) + " at byte offset " + std::to_string(at));
  }
  return static_cast<std::int64_t>(value);
}

absl::Status CheckPayload(const std::string& path, std::uint64_t bytes, const IdxLimits& limits) {
  if (bytes > static_cast<std::uint64_t>(std::max<std::int64_t>(limits.max_bytes, 0))) {
    return absl::DataLossError(path + ": the header at byte offset 0 declares " +
                               std::to_string(bytes) + " bytes of data, more than the limit of " +
                               std::to_string(limits.max_bytes) + " (IdxLimits::max_bytes)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path, const IdxLimits& limits) {
  GzFile reader(path);
  TAAS_RETURN_IF_ERROR(reader.Open());
  TAAS_RETURN_IF_ERROR(ExpectMagic(reader, kImagesMagic));
  IdxImages images;
  TAAS_ASSIGN_OR_RETURN(images.count, ReadDimension(reader, "image count", kMaxCount));
  TAAS_ASSIGN_OR_RETURN(images.rows, ReadDimension(reader, "row count", kMaxSide));
  TAAS_ASSIGN_OR_RETURN(images.cols, ReadDimension(reader, "column count", kMaxSide));
  // At most 1e8 * 2^16 * 2^16 < 2^63: the product cannot overflow.
  const std::uint64_t bytes = static_cast<std::uint64_t>(images.count) *
                              static_cast<std::uint64_t>(images.rows) *
                              static_cast<std::uint64_t>(images.cols);
  TAAS_RETURN_IF_ERROR(CheckPayload(path, bytes, limits));
  TAAS_RETURN_IF_ERROR(ReadGrowing(reader, images.pixels, bytes, "pixels"));
  return images;
}

absl::StatusOr<std::vector<std::uint8_t>> ReadIdxLabels(const std::string& path,
                                                        const IdxLimits& limits) {
  GzFile reader(path);
  TAAS_RETURN_IF_ERROR(reader.Open());
  TAAS_RETURN_IF_ERROR(ExpectMagic(reader, kLabelsMagic));
  TAAS_ASSIGN_OR_RETURN(std::int64_t count, ReadDimension(reader, "label count", kMaxCount));
  TAAS_RETURN_IF_ERROR(CheckPayload(path, static_cast<std::uint64_t>(count), limits));
  std::vector<std::uint8_t> labels;
  TAAS_RETURN_IF_ERROR(ReadGrowing(reader, labels, static_cast<std::uint64_t>(count), "labels"));
  return labels;
}

absl::Status CheckLabels(const ImageDataset& dataset, std::int64_t num_classes) {
  for (std::size_t i = 0; i < dataset.labels.size(); ++i) {
    if (dataset.labels[i] >= num_classes) {
      return absl::DataLossError(dataset.labels_path + ": label " +
                                 std::to_string(dataset.labels[i]) + " of example " +
                                 std::to_string(i) + " is outside [0, " +
                                 std::to_string(num_classes) + ") (the model's classes)");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ImageDataset> LoadMnistSplit(const std::string& dir, const std::string& split,
                                            const IdxLimits& limits) {
  std::string prefix;
  if (split == "train") {
    prefix = "train";
  } else if (split == "test") {
    prefix = "t10k";
  } else {
    return absl::InvalidArgumentError("data split must be \"train\" or \"test\", got \"" + split +
                                      "\"");
  }
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  TAAS_ASSIGN_OR_RETURN(IdxImages images, ReadIdxImages(images_path, limits));
  TAAS_ASSIGN_OR_RETURN(std::vector<std::uint8_t> labels, ReadIdxLabels(labels_path, limits));
  if (static_cast<std::int64_t>(labels.size()) != images.count) {
    return absl::DataLossError(labels_path + " has " + std::to_string(labels.size()) +
                               " labels but " + images_path + " has " +
                               std::to_string(images.count) + " images");
  }
  ImageDataset dataset;
  dataset.count = images.count;
  dataset.rows = images.rows;
  dataset.cols = images.cols;
  dataset.pixels = std::move(images.pixels);
  dataset.labels = std::move(labels);
  dataset.labels_path = labels_path;
  return dataset;
}

}  // namespace taas::data
