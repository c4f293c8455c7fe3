#include "gz_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace taas::data::internal {

GzFile::GzFile(std::string path) : path_(std::move(path)) {}

GzFile::~GzFile() {
  if (file_ != nullptr) gzclose(file_);
}

absl::Status GzFile::Open() {
  file_ = gzopen(path_.c_str(), "rb");
  if (file_ == nullptr) {
    return absl::NotFoundError(path_ + ": cannot open: " + std::strerror(errno));
  }
  gzbuffer(file_, 1 << 18);
  return absl::OkStatus();
}

absl::StatusOr<std::size_t> GzFile::ReadUpTo(void* out, std::size_t size, const std::string& what) {
  auto* bytes = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < size) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
    const int got = gzread(file_, bytes + done, chunk);
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    // A gzip stream cut short reads as a short count with Z_BUF_ERROR, not as an error.
    if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      return absl::DataLossError(path_ + ": corrupt or truncated gzip data at byte offset " +
                                 std::to_string(offset_ + done) + " while reading " + what + ": " +
                                 (message ? message : "unknown zlib error"));
    }
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  offset_ += done;
  return done;
}

absl::Status GzFile::Read(void* out, std::size_t size, const std::string& what) {
  const std::uint64_t start = offset_;
  TAAS_ASSIGN_OR_RETURN(std::size_t got, ReadUpTo(out, size, what));
  if (got < size) {
    return absl::DataLossError(path_ + ": truncated at byte offset " + std::to_string(offset_) +
                               ": expected " + std::to_string(size) + " bytes of " + what +
                               " from offset " + std::to_string(start));
  }
  return absl::OkStatus();
}

bool GzFile::compressed() const { return file_ != nullptr && gzdirect(file_) == 0; }

}  // namespace taas::data::internal
