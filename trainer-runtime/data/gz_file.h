// Private to taas::data: a sequential reader over a gzip-compressed or plain file (zlib reads a
// plain file as it is), tracking the byte offset in the decompressed stream, which every error
// names. Shared by the IDX and TFRecord readers. Not thread-safe: one reader at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "taas/base/status.h"

// zlib's handle, declared as zlib.h does, so that this header does not include it.
typedef struct gzFile_s* gzFile;  // NOLINT(modernize-use-using): zlib's own spelling

namespace taas::data::internal {

class GzFile {
 public:
  explicit GzFile(std::string path);
  ~GzFile();
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // NotFound naming the file and the system's reason.
  absl::Status Open();

  // Up to `size` bytes into `out`: fewer only at the end of the file. DataLoss naming the file and
  // the offset for corrupt or truncated gzip data.
  absl::StatusOr<std::size_t> ReadUpTo(void* out, std::size_t size, const std::string& what);

  // Exactly `size` bytes of `what`, or DataLoss naming the file and the offset where it ended.
  absl::Status Read(void* out, std::size_t size, const std::string& what);

  // Whether the file is gzip-compressed; meaningful once something was read.
  bool compressed() const;
  std::uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::uint64_t offset_ = 0;
};

}  // namespace taas::data::internal
