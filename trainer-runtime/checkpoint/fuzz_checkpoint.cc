// libFuzzer target: restoring a checkpoint (ListCheckpoints, Load, LoadLatest) from any files.
// The input is the `checkpoint` file, a NUL byte, the index of model.ckpt-1, a NUL byte and its
// data file. A checkpoint that loads holds entries that fit in the data file it came from (and
// their shapes, when recorded, hold their counts);
// nothing throws, aborts or allocates beyond the files' real sizes.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "taas/checkpoint/checkpoint.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

// A model dir made once per process, rewritten for every input.
const std::filesystem::path& Dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "taas-fuzz-ckpt-XXXXXX").string();
    Require(::mkdtemp(pattern.data()) != nullptr);
    return std::filesystem::path(pattern);
  }();
  return dir;
}

void Write(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The part of `input` before the next NUL byte; `input` keeps what follows it.
std::string_view Next(std::string_view& input) {
  const std::size_t nul = input.find('\0');
  const std::string_view part = input.substr(0, nul);
  input = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  return part;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  Write(Dir() / "checkpoint", Next(input));
  Write(Dir() / "model.ckpt-1.index", Next(input));
  Write(Dir() / "model.ckpt-1.data", input);
  const auto data_bytes = input.size();

  auto loaded = taas::checkpoint::Load((Dir() / "model.ckpt-1").string());
  if (loaded.ok()) {
    Require(loaded->global_step >= 0);
    for (const auto& entry : loaded->entries) {
      Require(!entry.name.empty());
      Require(entry.values.size() * sizeof(float) <= data_bytes);
      if (entry.shape) {
        std::size_t elements = 1;
        for (std::int64_t d : *entry.shape) elements *= static_cast<std::size_t>(d);
        Require(elements == entry.values.size());
      }
    }
  }
  for (const auto& prefix : taas::checkpoint::ListCheckpoints(Dir().string())) {
    Require(std::filesystem::path(prefix).parent_path() == Dir());
  }
  auto latest = taas::checkpoint::LoadLatest(Dir().string(), nullptr);
  if (latest.ok() && latest->has_value()) Require((*latest)->global_step >= 0);
  return 0;
}
