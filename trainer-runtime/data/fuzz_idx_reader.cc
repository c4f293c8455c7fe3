// libFuzzer target: the IDX reader (gzip or plain) over any bytes, as images and as labels, with
// a limit of 16 MiB. What it returns holds exactly what the header declares, within the limit;
// nothing throws, aborts or allocates past the limit and what arrived.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "memory_file.h"
#include "taas/data/idx.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const taas::data::testing::MemoryFile file(data, size);
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
