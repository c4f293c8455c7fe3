// Private to taas::data: a file mapped read-only into memory (mmap), so a reader touches only the
// pages it reads and the kernel's page cache is the buffer. The NumPy reader's; a file that
// shrinks while mapped is a SIGBUS, as with numpy.load(mmap_mode="r").
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas::data::internal {

class MappedFile {
 public:
  // NotFound naming the file and the system's reason; an empty file maps to no bytes.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, void* data, std::size_t size);

  std::string path_;
  void* data_;
  std::size_t size_;
};

}  // namespace taas::data::internal
