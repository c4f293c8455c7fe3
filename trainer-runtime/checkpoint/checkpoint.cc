#include "taas/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "taas/base/json_fields.h"
#include "taas/checkpoint/safetensors.h"
#include "taas/crc32c/crc32c.h"

namespace taas::checkpoint {
namespace {

namespace fs = std::filesystem;

// The index + data format that checkpoints were written in before safetensors: still read, so
// that old model dirs resume and warm-start.
constexpr const char* kIndexFormat = "taas-checkpoint-1";
// An index holds a few lines per variable: far less than this for any model.
constexpr std::uint64_t kMaxIndexBytes = 64 << 20;
// The safetensors checkpoint's metadata (string values, as the format requires): "format" says
// it is a taas checkpoint, "global_step" its step, "crc32c.<tensor>" each tensor's CRC-32C (of
// its bytes, in decimal).
constexpr const char* kFormat = "taas-checkpoint-2";
constexpr const char* kFormatKey = "format";
constexpr const char* kStepKey = "global_step";
constexpr const char* kCrcKeyPrefix = "crc32c.";
constexpr const char* kSafetensorsSuffix = ".safetensors";

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(what + " " + path + ": " + std::strerror(errno));
}

// Writes every byte of `parts` to the open file `fd`.
absl::Status WriteAll(int fd, const std::vector<std::pair<const void*, std::size_t>>& parts,
                      const std::string& path) {
  for (const auto& [data, size] : parts) {
    const char* p = static_cast<const char*>(data);
    std::size_t left = size;
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return ErrnoError("cannot write", path);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (::fsync(fd) != 0) return ErrnoError("cannot flush", path);
  return absl::OkStatus();
}

// Makes a rename in `dir` durable: without it a crash after the rename can lose the new name.
absl::Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open directory", dir);
  const int synced = ::fsync(fd);
  absl::Status s = synced == 0 ? absl::OkStatus() : ErrnoError("cannot flush directory", dir);
  ::close(fd);
  return s;
}

// Writes `parts` to `path` through a temporary file: write, fsync, rename, fsync the directory.
// On any failure the temporary file is removed and `path` is left as it was.
absl::Status WriteAtomically(const std::string& path,
                             const std::vector<std::pair<const void*, std::size_t>>& parts) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  absl::Status s = WriteAll(fd, parts, tmp);
  if (::close(fd) != 0 && s.ok()) s = ErrnoError("cannot close", tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = ErrnoError("cannot rename to", path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return SyncDirectory(fs::path(path).parent_path().string());
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// The whole file, refused without reading when it is larger than `max_bytes`.
absl::StatusOr<std::string> ReadFile(const std::string& path, std::uint64_t max_bytes) {
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) return absl::NotFoundError("cannot open " + path + ": " + ec.message());
  if (size > max_bytes) {
    return absl::DataLossError(path + ": " + std::to_string(size) + " bytes, more than the " +
                               std::to_string(max_bytes) + " a checkpoint file may have");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  std::string out(static_cast<std::size_t>(size), '\0');
  in.read(out.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(in.gcount()) != size) {
    return absl::DataLossError(path + ": shorter than its " + std::to_string(size) + " bytes");
  }
  return out;
}

// A required integer field of the index in [min, max], or DataLoss naming the file and field.
absl::StatusOr<std::int64_t> IndexInt(const std::string& file, const json_fields::Json& object,
                                      std::string_view key, const std::string& path,
                                      std::int64_t min, std::int64_t max) {
  const auto value = json_fields::Int(object, key);
  if (!value) {
    return absl::DataLossError(
        file + ": " + path + " must be an integer, got " +
        (json_fields::Find(object, key)
             ? std::string(json_fields::TypeName(*json_fields::Find(object, key)))
             : std::string("nothing")));
  }
  if (*value < min || *value > max) {
    return absl::DataLossError(file + ": " + path + " " + std::to_string(*value) + " is outside [" +
                               std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return *value;
}

// A checkpoint named in the `checkpoint` file must lie in the model dir: a plain file name.
bool IsPlainName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

// An entry's optional "shape": absent, or an array of dimensions whose product is `count`.
absl::StatusOr<std::optional<std::vector<std::int64_t>>> IndexShape(const std::string& file,
                                                                    const json_fields::Json& entry,
                                                                    const std::string& path,
                                                                    std::int64_t count) {
  const json_fields::Json* found = json_fields::Find(entry, "shape");
  if (found == nullptr) return std::nullopt;
  constexpr std::size_t kMaxRank = 32;
  if (!found->is_array() || found->size() > kMaxRank) {
    return absl::DataLossError(file + ": " + path + " must be an array of at most " +
                               std::to_string(kMaxRank) + " dimensions");
  }
  std::vector<std::int64_t> shape;
  for (const json_fields::Json& d : *found) {
    const auto dim = json_fields::AsInt(d);
    if (!dim || *dim < 0) {
      return absl::DataLossError(file + ": " + path + " must hold integers >= 0");
    }
    shape.push_back(*dim);
  }
  if (safetensors::Elements(shape) != count) {
    return absl::DataLossError(file + ": " + path + " does not hold the " + std::to_string(count) +
                               " values of its entry");
  }
  return shape;
}

std::int64_t StepOf(const std::string& prefix) {
  auto dash = prefix.rfind('-');
  if (dash == std::string::npos) return -1;
  try {
    return std::stoll(prefix.substr(dash + 1));
  } catch (...) {
    return -1;
  }
}

// A checkpoint in the format before safetensors: `<prefix>.index` (JSON) and `<prefix>.data`.
absl::StatusOr<Checkpoint> LoadIndexed(const std::string& prefix) {
  const std::string index_path = prefix + ".index";
  const std::string data_path = prefix + ".data";
  TAAS_ASSIGN_OR_RETURN(std::string index_text, ReadFile(index_path, kMaxIndexBytes));
  // The data file's real size bounds every offset and count before anything is allocated.
  std::error_code ec;
  const std::uintmax_t data_size = fs::file_size(data_path, ec);
  if (ec) return absl::NotFoundError("cannot open " + data_path + ": " + ec.message());
  const auto index = json_fields::Json::parse(index_text, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded()) return absl::DataLossError(index_path + ": not valid JSON");
  if (json_fields::StringOr(index, "format", "") != kIndexFormat) {
    return absl::DataLossError(index_path + ": format must be \"" + std::string(kIndexFormat) +
                               "\"");
  }
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  Checkpoint out;
  out.path = prefix;
  TAAS_ASSIGN_OR_RETURN(out.global_step,
                        IndexInt(index_path, index, "global_step", "global_step", 0, kMax));
  TAAS_ASSIGN_OR_RETURN(std::int64_t data_bytes,
                        IndexInt(index_path, index, "data_bytes", "data_bytes", 0, kMax));
  if (static_cast<std::uintmax_t>(data_bytes) != data_size) {
    return absl::DataLossError(data_path + ": " + std::to_string(data_size) +
                               " bytes, but the index's data_bytes says " +
                               std::to_string(data_bytes));
  }
  const json_fields::Json* entries = json_fields::Array(index, "entries");
  if (entries == nullptr) return absl::DataLossError(index_path + ": entries must be an array");
  TAAS_ASSIGN_OR_RETURN(std::string data,
                        ReadFile(data_path, static_cast<std::uint64_t>(data_bytes)));
  const auto size = static_cast<std::int64_t>(data.size());
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const json_fields::Json& e = (*entries)[i];
    const std::string field = "entries[" + std::to_string(i) + "]";
    const auto name = json_fields::String(e, "name");
    if (!name || name->empty()) {
      return absl::DataLossError(index_path + ": " + field + ".name must be a non-empty string");
    }
    TAAS_ASSIGN_OR_RETURN(std::int64_t offset,
                          IndexInt(index_path, e, "offset", field + ".offset", 0, size));
    // Counted in floats: at most what lies between the offset and the end of the data file.
    TAAS_ASSIGN_OR_RETURN(std::int64_t count,
                          IndexInt(index_path, e, "count", field + ".count", 0,
                                   (size - offset) / static_cast<std::int64_t>(sizeof(float))));
    TAAS_ASSIGN_OR_RETURN(std::int64_t crc, IndexInt(index_path, e, "crc32c", field + ".crc32c", 0,
                                                     std::numeric_limits<std::uint32_t>::max()));
    const auto bytes = static_cast<std::size_t>(count) * sizeof(float);
    const char* begin = data.data() + offset;
    if (crc32c::Value(begin, bytes) != static_cast<std::uint32_t>(crc)) {
      return absl::DataLossError(data_path + ": checksum mismatch in " + *name);
    }
    Entry entry;
    TAAS_ASSIGN_OR_RETURN(entry.shape, IndexShape(index_path, e, field + ".shape", count));
    entry.name = *name;
    entry.values.resize(static_cast<std::size_t>(count));
    // An empty vector's data() may be null, which memcpy must not get even for 0 bytes.
    if (bytes > 0) std::memcpy(entry.values.data(), begin, bytes);
    out.entries.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

const Entry* Checkpoint::Find(const std::string& name) const {
  for (const auto& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::string> ListCheckpoints(const std::string& dir) {
  std::vector<std::string> out;
  std::ifstream in(fs::path(dir) / "checkpoint");
  std::string line;
  while (std::getline(in, line)) {
    const std::string key = "all_model_checkpoint_paths:";
    if (line.rfind(key, 0) != 0) continue;
    auto first = line.find('"'), last = line.rfind('"');
    if (first == std::string::npos || last <= first) continue;
    std::string name = line.substr(first + 1, last - first - 1);
    if (!IsPlainName(name)) continue;
    out.push_back((fs::path(dir) / name).string());
  }
  return out;
}

std::optional<std::int64_t> LatestStep(const std::string& dir) {
  auto all = ListCheckpoints(dir);
  if (all.empty()) return std::nullopt;
  return StepOf(all.back());
}

absl::StatusOr<std::string> Save(const std::string& dir, std::int64_t global_step,
                                 const std::vector<Entry>& entries, int keep) {
  for (const auto& e : entries) {
    if (e.shape && safetensors::Elements(*e.shape) != static_cast<std::int64_t>(e.values.size())) {
      return absl::InvalidArgumentError("checkpoint entry " + e.name +
                                        ": its shape does not hold its " +
                                        std::to_string(e.values.size()) + " values");
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create model dir " + dir + ": " + ec.message());
  const std::string name = "model.ckpt-" + std::to_string(global_step);
  const std::string prefix = (fs::path(dir) / name).string();

  std::vector<safetensors::Float32Tensor> tensors;
  std::map<std::string, std::string> metadata = {{kFormatKey, kFormat},
                                                 {kStepKey, std::to_string(global_step)}};
  for (const auto& e : entries) {
    // An entry saved without a shape is a vector: every safetensors tensor has a shape.
    tensors.push_back(
        {e.name,
         e.shape.value_or(std::vector<std::int64_t>{static_cast<std::int64_t>(e.values.size())}),
         e.values.data()});
    metadata[kCrcKeyPrefix + e.name] =
        std::to_string(crc32c::Value(e.values.data(), e.values.size() * sizeof(float)));
  }
  auto header = safetensors::EncodeHeader(tensors, metadata);
  if (!header.ok()) {
    return absl::InvalidArgumentError("checkpoint: " + std::string(header.status().message()));
  }
  std::vector<std::pair<const void*, std::size_t>> parts = {{header->data(), header->size()}};
  for (const auto& e : entries)
    parts.emplace_back(e.values.data(), e.values.size() * sizeof(float));
  TAAS_RETURN_IF_ERROR(WriteAtomically(prefix + kSafetensorsSuffix, parts));

  std::vector<std::string> all;
  for (const auto& p : ListCheckpoints(dir)) {
    std::string base = fs::path(p).filename().string();
    if (base != name) all.push_back(base);
  }
  all.push_back(name);
  std::vector<std::string> removed;
  while (static_cast<int>(all.size()) > keep) {
    removed.push_back(all.front());
    all.erase(all.begin());
  }
  std::string text = "model_checkpoint_path: " + Quote(name) + "\n";
  for (const auto& p : all) text += "all_model_checkpoint_paths: " + Quote(p) + "\n";
  TAAS_RETURN_IF_ERROR(
      WriteAtomically((fs::path(dir) / "checkpoint").string(), {{text.data(), text.size()}}));
  for (const auto& old : removed) {
    fs::remove(fs::path(dir) / (old + kSafetensorsSuffix), ec);
    fs::remove(fs::path(dir) / (old + ".index"), ec);
    fs::remove(fs::path(dir) / (old + ".data"), ec);
  }
  return prefix;
}

absl::StatusOr<Checkpoint> LoadSafetensors(const std::string& path, bool taas_checkpoint) {
  TAAS_ASSIGN_OR_RETURN(safetensors::Float32File file, safetensors::ReadFloat32(path));
  const auto& metadata = file.header.metadata;
  const auto format = metadata.find(kFormatKey);
  const bool written_by_taas = format != metadata.end() && format->second == kFormat;
  if (taas_checkpoint && !written_by_taas) {
    return absl::DataLossError(path + ": __metadata__ format must be \"" + std::string(kFormat) +
                               "\" in a taas checkpoint");
  }
  Checkpoint out;
  out.path = path.substr(0, path.size() - (path.ends_with(kSafetensorsSuffix)
                                               ? std::string_view(kSafetensorsSuffix).size()
                                               : 0));
  if (written_by_taas) {
    const auto step = metadata.find(kStepKey);
    std::int64_t value = -1;
    const char* text = step == metadata.end() ? "" : step->second.c_str();
    const auto [end, error] =
        std::from_chars(text, text + std::strlen(text), value);  // decimal digits only
    if (step == metadata.end() || error != std::errc() || *end != '\0' || value < 0) {
      return absl::DataLossError(path +
                                 ": __metadata__ global_step must be an integer >= 0, got \"" +
                                 std::string(text) + "\"");
    }
    out.global_step = value;
  }
  for (std::size_t i = 0; i < file.header.tensors.size(); ++i) {
    const safetensors::TensorInfo& t = file.header.tensors[i];
    std::vector<float>& values = file.values[i];
    const auto crc = metadata.find(kCrcKeyPrefix + t.name);
    // Files written elsewhere carry no checksums; taas's own carry one for every tensor.
    if (crc == metadata.end() && written_by_taas) {
      return absl::DataLossError(path + ": tensor \"" + t.name +
                                 "\" has no crc32c in __metadata__");
    }
    if (crc != metadata.end() &&
        crc->second !=
            std::to_string(crc32c::Value(values.data(), values.size() * sizeof(float)))) {
      return absl::DataLossError(path + ": checksum mismatch in " + t.name);
    }
    out.entries.push_back({t.name, std::move(values), t.shape});
  }
  return out;
}

absl::StatusOr<Checkpoint> Load(const std::string& prefix) {
  std::error_code ec;
  if (fs::exists(prefix + kSafetensorsSuffix, ec)) {
    return LoadSafetensors(prefix + kSafetensorsSuffix, /*taas_checkpoint=*/true);
  }
  if (!fs::exists(prefix + ".index", ec)) {
    return absl::NotFoundError("checkpoint " + prefix + ": neither " + prefix + kSafetensorsSuffix +
                               " nor " + prefix + ".index (the format before safetensors) exists");
  }
  return LoadIndexed(prefix);
}

absl::StatusOr<std::optional<Checkpoint>> LoadLatest(const std::string& dir,
                                                     std::vector<std::string>* skipped) {
  auto all = ListCheckpoints(dir);
  std::string newest_error;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    auto loaded = Load(*it);
    if (loaded.ok()) return std::optional<Checkpoint>(std::move(*loaded));
    std::string error = *it + ": " + std::string(loaded.status().message());
    if (newest_error.empty()) newest_error = error;
    if (skipped) skipped->push_back(std::move(error));
  }
  if (!all.empty()) {
    // Starting over would silently throw the job's training away: a person decides.
    return absl::DataLossError(
        "model dir " + dir + ": none of its " + std::to_string(all.size()) +
        " checkpoints verifies (remove them to start over); the newest: " + newest_error);
  }
  return std::optional<Checkpoint>();
}

}  // namespace taas::checkpoint
