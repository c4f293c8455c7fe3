#include "taas/data/tfrecord.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "gz_file.h"
#include "hex.h"
#include "taas/crc32c/crc32c.h"
#include "taas/data/file_patterns.h"

namespace taas::data {
namespace {

// A record's data arrives in pieces of this size, so a length that lies (within the limit)
// allocates only what the file holds.
constexpr std::size_t kReadChunk = 1 << 20;

std::uint32_t MaskedCrc(const void* data, std::size_t size) {
  return crc32c::Mask(crc32c::Value(data, size));
}

std::uint32_t Load32(const char* bytes) {
  std::uint32_t value;
  std::memcpy(&value, bytes, 4);  // little-endian hosts only, like the rest of the data plane
  return value;
}

}  // namespace

std::string EncodeTfRecord(std::string_view data) {
  std::string out(kTfRecordHeaderBytes + data.size() + kTfRecordFooterBytes, '\0');
  const std::uint64_t length = data.size();
  std::memcpy(out.data(), &length, 8);
  const std::uint32_t length_crc = MaskedCrc(out.data(), 8);
  std::memcpy(out.data() + 8, &length_crc, 4);
  std::memcpy(out.data() + kTfRecordHeaderBytes, data.data(), data.size());
  const std::uint32_t data_crc = MaskedCrc(data.data(), data.size());
  std::memcpy(out.data() + kTfRecordHeaderBytes + data.size(), &data_crc, 4);
  return out;
}

absl::StatusOr<std::uint64_t> DecodeTfRecordHeader(std::string_view header,
                                                   std::uint64_t max_record_bytes) {
  if (header.size() != kTfRecordHeaderBytes) {
    return absl::DataLossError("a record header is " + std::to_string(kTfRecordHeaderBytes) +
                               " bytes, got " + std::to_string(header.size()));
  }
  const std::uint32_t stored = Load32(header.data() + 8);
  const std::uint32_t computed = MaskedCrc(header.data(), 8);
  if (stored != computed) {
    return absl::DataLossError("the length's checksum does not match (stored " +
                               internal::Hex32(stored) + ", computed " + internal::Hex32(computed) +
                               "): the file is corrupt here, or is not a TFRecord file (or is "
                               "compressed in a way the reader was not told)");
  }
  std::uint64_t length;
  std::memcpy(&length, header.data(), 8);
  if (length > max_record_bytes) {
    return absl::DataLossError("the header declares a record of " + std::to_string(length) +
                               " bytes, more than TfRecordOptions::max_record_bytes (" +
                               std::to_string(max_record_bytes) +
                               "): raise the limit if the records are that large");
  }
  return length;
}

absl::Status CheckTfRecordData(std::string_view data, std::string_view footer) {
  if (footer.size() != kTfRecordFooterBytes) {
    return absl::DataLossError("a record's data checksum is " +
                               std::to_string(kTfRecordFooterBytes) + " bytes, got " +
                               std::to_string(footer.size()));
  }
  const std::uint32_t stored = Load32(footer.data());
  const std::uint32_t computed = MaskedCrc(data.data(), data.size());
  if (stored != computed) {
    return absl::DataLossError("the data's checksum does not match (stored " +
                               internal::Hex32(stored) + ", computed " + internal::Hex32(computed) +
                               "): the record is corrupt; write the file again, or drop it from "
                               "the data set");
  }
  return absl::OkStatus();
}

struct TfRecordReader::File : internal::GzFile {
  using GzFile::GzFile;
};

absl::StatusOr<std::unique_ptr<TfRecordReader>> TfRecordReader::Open(
    const std::string& path, const TfRecordOptions& options) {
  auto file = std::make_unique<File>(path);
  TAAS_RETURN_IF_ERROR(file->Open());
  const bool gzip = file->compressed();
  if (options.compression == TfRecordCompression::kNone && gzip) {
    return absl::InvalidArgumentError(path +
                                      ": the file is gzip-compressed, but the reader was told "
                                      "it is not: set TfRecordOptions::compression to kGzip "
                                      "or kAuto");
  }
  if (options.compression == TfRecordCompression::kGzip && !gzip) {
    return absl::InvalidArgumentError(path +
                                      ": the file is not gzip-compressed, but the reader was "
                                      "told it is: set TfRecordOptions::compression to kNone "
                                      "or kAuto");
  }
  return std::unique_ptr<TfRecordReader>(new TfRecordReader(std::move(file), options));
}

TfRecordReader::TfRecordReader(std::unique_ptr<File> file, const TfRecordOptions& options)
    : file_(std::move(file)), options_(options) {}

TfRecordReader::~TfRecordReader() = default;

std::string TfRecordReader::Where(std::uint64_t offset) const {
  return file_->path() + ": record " + std::to_string(index_) + " at byte offset " +
         std::to_string(offset);
}

absl::Status TfRecordReader::InRecord(const absl::Status& status, std::uint64_t offset) const {
  return absl::Status(status.code(), std::string(status.message()) + " (in record " +
                                         std::to_string(index_) + ", from byte offset " +
                                         std::to_string(offset) + ")");
}

absl::StatusOr<bool> TfRecordReader::Next(Record& record) {
  if (done_) return false;
  const std::uint64_t start = file_->offset();
  // Any failure ends the file: what follows a bad record cannot be framed.
  done_ = true;
  char header[kTfRecordHeaderBytes];
  absl::StatusOr<std::size_t> got = file_->ReadUpTo(header, sizeof(header), "a record header");
  if (!got.ok()) return InRecord(got.status(), start);
  if (*got == 0) return false;
  if (*got < sizeof(header)) {
    return absl::DataLossError(Where(start) + ": truncated: the file ends " + std::to_string(*got) +
                               " bytes into the record's " + std::to_string(sizeof(header)) +
                               "-byte header: the file was cut short (a writer that did not "
                               "finish?); write it again");
  }
  absl::StatusOr<std::uint64_t> length =
      DecodeTfRecordHeader(std::string_view(header, sizeof(header)), options_.max_record_bytes);
  if (!length.ok())
    return absl::DataLossError(Where(start) + ": " + std::string(length.status().message()));
  const std::uint64_t want = *length + kTfRecordFooterBytes;
  record.bytes.clear();
  std::uint64_t have = 0;
  while (have < want) {
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, want - have));
    record.bytes.resize(static_cast<std::size_t>(have) + chunk);
    absl::StatusOr<std::size_t> read =
        file_->ReadUpTo(record.bytes.data() + have, chunk, "a record's data");
    if (!read.ok()) return InRecord(read.status(), start);
    have += *read;
    if (*read < chunk) {
      return absl::DataLossError(Where(start) + ": truncated: the header declares " +
                                 std::to_string(*length) + " bytes of data and a " +
                                 std::to_string(kTfRecordFooterBytes) +
                                 "-byte checksum, the file ends after " + std::to_string(have) +
                                 ": the file was cut short (a writer that did not finish?); "
                                 "write it again");
    }
  }
  const std::string_view data(record.bytes.data(), static_cast<std::size_t>(*length));
  const std::string_view footer(record.bytes.data() + *length, kTfRecordFooterBytes);
  if (absl::Status s = CheckTfRecordData(data, footer); !s.ok()) {
    return absl::DataLossError(Where(start) + ": " + std::string(s.message()));
  }
  record.bytes.resize(static_cast<std::size_t>(*length));
  record.index = index_++;
  record.offset = start;
  done_ = false;
  return true;
}

absl::StatusOr<std::shared_ptr<TfRecordDataset>> TfRecordDataset::Create(
    const std::vector<std::string>& patterns, const TfRecordOptions& options) {
  TAAS_ASSIGN_OR_RETURN(std::vector<std::string> files, MatchFiles(patterns));
  return std::shared_ptr<TfRecordDataset>(new TfRecordDataset(std::move(files), options));
}

TfRecordDataset::TfRecordDataset(std::vector<std::string> files, const TfRecordOptions& options)
    : files_(std::move(files)), options_(options) {}

std::int64_t TfRecordDataset::num_parts() const { return static_cast<std::int64_t>(files_.size()); }

std::string TfRecordDataset::part_name(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) return "TFRecord part " + std::to_string(part);
  return files_[static_cast<std::size_t>(part)];
}

absl::StatusOr<std::unique_ptr<RecordReader>> TfRecordDataset::Open(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) {
    return absl::OutOfRangeError("TFRecord files: part " + std::to_string(part) +
                                 " is not in [0, " + std::to_string(num_parts()) + ")");
  }
  TAAS_ASSIGN_OR_RETURN(auto reader,
                        TfRecordReader::Open(files_[static_cast<std::size_t>(part)], options_));
  return std::unique_ptr<RecordReader>(std::move(reader));
}

}  // namespace taas::data
