#include "taas/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "taas/crc32c/crc32c.h"

namespace taas::checkpoint {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "taas-checkpoint-1";

absl::Status ErrnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(what + " " + path + ": " + std::strerror(errno));
}

// Writes `size` bytes to `path` through a temporary file, fsyncs and renames it into place.
absl::Status WriteAtomically(const std::string& path,
                             const std::vector<std::pair<const void*, std::size_t>>& parts) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  for (const auto& [data, size] : parts) {
    const char* p = static_cast<const char*>(data);
    std::size_t left = size;
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        absl::Status s = ErrnoError("cannot write", tmp);
        ::close(fd);
        return s;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (::fsync(fd) != 0) {
    absl::Status s = ErrnoError("cannot flush", tmp);
    ::close(fd);
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoError("cannot rename to", path);
  return absl::OkStatus();
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
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
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create model dir " + dir + ": " + ec.message());
  const std::string name = "model.ckpt-" + std::to_string(global_step);
  const std::string prefix = (fs::path(dir) / name).string();

  nlohmann::json index;
  index["format"] = kFormat;
  index["global_step"] = global_step;
  index["entries"] = nlohmann::json::array();
  std::vector<std::pair<const void*, std::size_t>> parts;
  std::uint64_t offset = 0;
  for (const auto& e : entries) {
    const std::size_t bytes = e.values.size() * sizeof(float);
    index["entries"].push_back({{"name", e.name},
                                {"offset", offset},
                                {"count", e.values.size()},
                                {"crc32c", crc32c::Value(e.values.data(), bytes)}});
    parts.emplace_back(e.values.data(), bytes);
    offset += bytes;
  }
  index["data_bytes"] = offset;
  TAAS_RETURN_IF_ERROR(WriteAtomically(prefix + ".data", parts));
  const std::string index_text = index.dump(1);
  TAAS_RETURN_IF_ERROR(
      WriteAtomically(prefix + ".index", {{index_text.data(), index_text.size()}}));

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
    fs::remove(fs::path(dir) / (old + ".index"), ec);
    fs::remove(fs::path(dir) / (old + ".data"), ec);
  }
  return prefix;
}

absl::StatusOr<Checkpoint> Load(const std::string& prefix) {
  TAAS_ASSIGN_OR_RETURN(std::string index_text, ReadFile(prefix + ".index"));
  TAAS_ASSIGN_OR_RETURN(std::string data, ReadFile(prefix + ".data"));
  Checkpoint out;
  out.path = prefix;
  try {
    auto index = nlohmann::json::parse(index_text);
    if (index.value("format", "") != kFormat) {
      return absl::DataLossError(prefix + ".index: unknown format");
    }
    out.global_step = index.at("global_step").get<std::int64_t>();
    if (index.at("data_bytes").get<std::uint64_t>() != data.size()) {
      return absl::DataLossError(prefix + ".data: size " + std::to_string(data.size()) +
                                 " differs from the index's " +
                                 std::to_string(index.at("data_bytes").get<std::uint64_t>()));
    }
    for (const auto& e : index.at("entries")) {
      const auto offset = e.at("offset").get<std::uint64_t>();
      const auto count = e.at("count").get<std::uint64_t>();
      const std::size_t bytes = count * sizeof(float);
      if (offset + bytes > data.size()) {
        return absl::DataLossError(prefix + ".index: entry " + e.at("name").get<std::string>() +
                                   " lies outside the data file");
      }
      if (crc32c::Value(data.data() + offset, bytes) != e.at("crc32c").get<std::uint32_t>()) {
        return absl::DataLossError(prefix + ".data: checksum mismatch in " +
                                   e.at("name").get<std::string>());
      }
      Entry entry;
      entry.name = e.at("name").get<std::string>();
      entry.values.resize(count);
      std::memcpy(entry.values.data(), data.data() + offset, bytes);
      out.entries.push_back(std::move(entry));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(prefix + ".index: " + e.what());
  }
  return out;
}

absl::StatusOr<std::optional<Checkpoint>> LoadLatest(const std::string& dir,
                                                     std::vector<std::string>* skipped) {
  auto all = ListCheckpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    auto loaded = Load(*it);
    if (loaded.ok()) return std::optional<Checkpoint>(std::move(*loaded));
    if (skipped) skipped->push_back(*it + ": " + std::string(loaded.status().message()));
  }
  return std::optional<Checkpoint>();
}

}  // namespace taas::checkpoint
