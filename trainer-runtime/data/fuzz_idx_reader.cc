// libFuzzer target: the IDX reader (gzip or plain) over any bytes, as images and as labels, with
// a limit of 16 MiB. What it returns holds exactly what the header declares, within the limit;
// nothing throws, aborts or allocates past the limit and what arrived.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "taas/data/idx.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// The input as a file (in memory) that zlib can open by name.
class MemoryFile {
 public:
  MemoryFile(const std::uint8_t* data, std::size_t size) : fd_(::memfd_create("idx", MFD_CLOEXEC)) {
    Require(fd_ >= 0);
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      Require(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }
  ~MemoryFile() { ::close(fd_); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const MemoryFile file(data, size);
  const taas::data::IdxLimits limits{16 << 20};
  auto images = taas::data::ReadIdxImages(file.path(), limits);
  if (images.ok()) {
    Require(images->count >= 0 && images->rows >= 0 && images->cols >= 0);
    Require(static_cast<std::int64_t>(images->pixels.size()) ==
            images->count * images->rows * images->cols);
    Require(static_cast<std::int64_t>(images->pixels.size()) <= limits.max_bytes);
  }
  auto labels = taas::data::ReadIdxLabels(file.path(), limits);
  if (labels.ok()) Require(static_cast<std::int64_t>(labels->size()) <= limits.max_bytes);
  return 0;
}
