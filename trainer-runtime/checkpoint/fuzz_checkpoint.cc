// libFuzzer target: restoring a checkpoint (ListCheckpoints, Load, LoadLatest, LoadSafetensors)
// and parsing safetensors headers from any files. The input is the `checkpoint` file, a NUL byte,
// the index of model.ckpt-1 (the format before safetensors), a NUL byte, and the rest: both
// model.ckpt-1's data file and model.ckpt-2.safetensors. A checkpoint that loads holds entries
// that fit in the file they came from (and their shapes, when recorded, hold their counts); a
// parsed header's tensors tile its data; nothing throws, aborts or allocates beyond the files'
// real sizes.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "taas/checkpoint/checkpoint.h"
#include "taas/checkpoint/safetensors.h"

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

// Every entry of a loaded checkpoint fits in the `bytes` it was read from, with its shape.
void RequireFits(const taas::checkpoint::Checkpoint& c, std::size_t bytes) {
  std::size_t total = 0;
  for (const auto& entry : c.entries) {
    Require(!entry.name.empty());
    total += entry.values.size() * sizeof(float);
    if (entry.shape) {
      std::size_t elements = 1;
      for (std::int64_t d : *entry.shape) elements *= static_cast<std::size_t>(d);
      Require(elements == entry.values.size());
    }
  }
  Require(total <= bytes);
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

  const std::string safetensors = (Dir() / "model.ckpt-2.safetensors").string();
  Write(safetensors, input);

  auto loaded = taas::checkpoint::Load((Dir() / "model.ckpt-1").string());
  if (loaded.ok()) {
    Require(loaded->global_step >= 0);
    RequireFits(*loaded, data_bytes);
  }
  auto length = taas::safetensors::HeaderLength(input, input.size(), "f");
  if (length.ok()) {
    const std::uint64_t data_size = input.size() - 8 - *length;
    auto header = taas::safetensors::ParseHeader(input.substr(8, *length), data_size, "f");
    if (header.ok()) {
      std::uint64_t next = 0;
      for (const auto& t : header->tensors) {
        Require(t.begin == next && t.end >= t.begin);
        next = t.end;
      }
      Require(next == data_size);
    }
  }
  auto foreign = taas::checkpoint::LoadSafetensors(safetensors);
  if (foreign.ok()) RequireFits(*foreign, input.size());
  auto own = taas::checkpoint::Load((Dir() / "model.ckpt-2").string());
  if (own.ok()) {
    Require(own->global_step >= 0);
    RequireFits(*own, input.size());
  }
  for (const auto& prefix : taas::checkpoint::ListCheckpoints(Dir().string())) {
    Require(std::filesystem::path(prefix).parent_path() == Dir());
  }
  auto latest = taas::checkpoint::LoadLatest(Dir().string(), nullptr);
  if (latest.ok() && latest->has_value()) Require((*latest)->global_step >= 0);
  return 0;
}
