// TFRecord files, as TensorFlow's TFRecordWriter writes them, plain or gzip-compressed: each
// record is
//
//   uint64 length | uint32 masked CRC-32C of the length | length bytes | uint32 masked CRC-32C
//
// (little-endian). Both checksums are checked, and a record's length is checked against a limit
// before anything is allocated for it. Every error names the file, the record's index and its
// byte offset (in the decompressed stream), and what to do. The records are usually
// tf.train.Examples (example.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/records.h"

namespace taas::data {

inline constexpr std::size_t kTfRecordHeaderBytes = 12;  // length and its checksum
inline constexpr std::size_t kTfRecordFooterBytes = 4;   // the data's checksum

enum class TfRecordCompression {
  kAuto,  // gzip when the file starts as gzip does, else plain
  kNone,  // TFRecordOptions(compression_type="")
  kGzip,  // TFRecordOptions(compression_type="GZIP")
};

struct TfRecordOptions {
  TfRecordCompression compression = TfRecordCompression::kAuto;
  // The largest record read; a header declaring more is an error, not an allocation.
  std::uint64_t max_record_bytes = std::uint64_t{64} << 20;
};

// The framing itself, pure (no I/O). `data` framed as one record.
std::string EncodeTfRecord(std::string_view data);
// The data length that a record's kTfRecordHeaderBytes declare, once the length's checksum
// matches and the length is at most `max_record_bytes`; DataLoss saying which check failed.
absl::StatusOr<std::uint64_t> DecodeTfRecordHeader(std::string_view header,
                                                   std::uint64_t max_record_bytes);
// DataLoss unless the kTfRecordFooterBytes after `data` hold its checksum.
absl::Status CheckTfRecordData(std::string_view data, std::string_view footer);

// Reads one TFRecord file in order.
class TfRecordReader : public RecordReader {
 public:
  // NotFound for a file that cannot be opened; InvalidArgument when the file's compression is
  // not the one `options` asks for.
  static absl::StatusOr<std::unique_ptr<TfRecordReader>> Open(const std::string& path,
                                                              const TfRecordOptions& options = {});
  ~TfRecordReader() override;

  // DataLoss naming the file, record and offset for a truncated record, a checksum that does
  // not match, a length over the limit, or corrupt gzip data. A file that ends between records
  // has ended; an empty file holds no records.
  absl::StatusOr<bool> Next(Record& record) override;

 private:
  struct File;
  TfRecordReader(std::unique_ptr<File> file, const TfRecordOptions& options);
  std::string Where(std::uint64_t offset) const;  // "<path>: record 3 at byte offset 120"
  absl::Status InRecord(const absl::Status& status, std::uint64_t offset) const;

  std::unique_ptr<File> file_;
  TfRecordOptions options_;
  std::int64_t index_ = 0;
  bool done_ = false;
};

// TFRecord files, one part each, from globs (file_patterns.h), sharded by file when there are at
// least as many files as replicas.
class TfRecordDataset : public RecordDataset {
 public:
  // MatchFiles's errors. The files are opened when read, not here.
  static absl::StatusOr<std::shared_ptr<TfRecordDataset>> Create(
      const std::vector<std::string>& patterns, const TfRecordOptions& options = {});

  std::int64_t num_parts() const override;
  std::string part_name(std::int64_t part) const override;  // the file's path
  absl::StatusOr<std::unique_ptr<RecordReader>> Open(std::int64_t part) const override;
  const std::vector<std::string>& files() const { return files_; }

 private:
  TfRecordDataset(std::vector<std::string> files, const TfRecordOptions& options);

  std::vector<std::string> files_;
  TfRecordOptions options_;
};

}  // namespace taas::data
