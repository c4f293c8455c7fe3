#include "taas/data/idx.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace taas::data {
namespace {

constexpr std::uint32_t kLabelsMagic = 0x00000801;
constexpr std::uint32_t kImagesMagic = 0x00000803;

// Sequential reader over a gzip (or plain) file that tracks the decompressed byte offset.
class GzReader {
 public:
  explicit GzReader(std::string path) : path_(std::move(path)) {}
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }

  absl::Status Open() {
    file_ = gzopen(path_.c_str(), "rb");
    if (file_ == nullptr) {
      return absl::NotFoundError(path_ + ": cannot open: " + std::strerror(errno));
    }
    gzbuffer(file_, 1 << 18);
    return absl::OkStatus();
  }

  // Reads exactly `size` bytes of `what`, or fails naming the file and offset.
  absl::Status Read(void* out, std::size_t size, const std::string& what) {
    auto* bytes = static_cast<unsigned char*>(out);
    std::size_t done = 0;
    while (done < size) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
      const int got = gzread(file_, bytes + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* message = gzerror(file_, &code);
        return absl::DataLossError(path_ + ": corrupt gzip data at byte offset " +
                                   std::to_string(offset_ + done) + " while reading " + what +
                                   ": " + (message ? message : "unknown zlib error"));
      }
      if (got == 0) {
        return absl::DataLossError(
            path_ + ": truncated at byte offset " + std::to_string(offset_ + done) + ": expected " +
            std::to_string(size) + " bytes of " + what + " from offset " + std::to_string(offset_));
      }
      done += static_cast<std::size_t>(got);
    }
    offset_ += size;
    return absl::OkStatus();
  }

  absl::StatusOr<std::uint32_t> ReadBigEndian32(const std::string& what) {
    unsigned char b[4];
    TAAS_RETURN_IF_ERROR(Read(b, 4, what));
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
           std::uint32_t{b[3]};
  }

  absl::Status ExpectMagic(std::uint32_t expected) {
    TAAS_ASSIGN_OR_RETURN(std::uint32_t magic, ReadBigEndian32("the magic number"));
    if (magic != expected) {
      char text[64];
      std::snprintf(text, sizeof(text), "0x%08x, expected 0x%08x", magic, expected);
      return absl::DataLossError(path_ + ": bad IDX magic number at byte offset 0: " + text);
    }
    return absl::OkStatus();
  }

  std::uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::uint64_t offset_ = 0;
};

absl::StatusOr<std::int64_t> ReadDimension(GzReader& reader, const std::string& what,
                                           std::int64_t limit) {
  const std::uint64_t at = reader.offset();
  TAAS_ASSIGN_OR_RETURN(std::uint32_t value, reader.ReadBigEndian32(what));
  if (value > limit) {
    return absl::DataLossError(reader.path() + ": implausible " + what + " " +
                               std::to_string(value) + " at byte offset " + std::to_string(at));
  }
  return static_cast<std::int64_t>(value);
}

}  // namespace

absl::StatusOr<IdxImages> ReadIdxImages(const std::string& path) {
  GzReader reader(path);
  TAAS_RETURN_IF_ERROR(reader.Open());
  TAAS_RETURN_IF_ERROR(reader.ExpectMagic(kImagesMagic));
  IdxImages images;
  TAAS_ASSIGN_OR_RETURN(images.count, ReadDimension(reader, "image count", 100'000'000));
  TAAS_ASSIGN_OR_RETURN(images.rows, ReadDimension(reader, "row count", 65'536));
  TAAS_ASSIGN_OR_RETURN(images.cols, ReadDimension(reader, "column count", 65'536));
  const std::uint64_t bytes = static_cast<std::uint64_t>(images.count) * images.rows * images.cols;
  if (bytes > (std::uint64_t{1} << 34)) {
    return absl::DataLossError(path + ": header at byte offset 4 declares " +
                               std::to_string(bytes) + " pixel bytes, more than 16 GiB");
  }
  images.pixels.resize(bytes);
  TAAS_RETURN_IF_ERROR(reader.Read(images.pixels.data(), bytes, "pixels"));
  return images;
}

absl::StatusOr<std::vector<std::uint8_t>> ReadIdxLabels(const std::string& path) {
  GzReader reader(path);
  TAAS_RETURN_IF_ERROR(reader.Open());
  TAAS_RETURN_IF_ERROR(reader.ExpectMagic(kLabelsMagic));
  TAAS_ASSIGN_OR_RETURN(std::int64_t count, ReadDimension(reader, "label count", 100'000'000));
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(count));
  TAAS_RETURN_IF_ERROR(reader.Read(labels.data(), labels.size(), "labels"));
  return labels;
}

absl::StatusOr<ImageDataset> LoadMnistSplit(const std::string& dir, const std::string& split) {
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
  TAAS_ASSIGN_OR_RETURN(IdxImages images, ReadIdxImages(images_path));
  TAAS_ASSIGN_OR_RETURN(std::vector<std::uint8_t> labels, ReadIdxLabels(labels_path));
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
  return dataset;
}

}  // namespace taas::data
