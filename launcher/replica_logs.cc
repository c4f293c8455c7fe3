#include "replica_logs.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace taas::launcher {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<ReplicaLogFiles>> ReplicaLogFiles::Create(
    const std::string& dir, std::int64_t rotate_bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create the log folder " + dir + ": " + ec.message());
  return std::unique_ptr<ReplicaLogFiles>(new ReplicaLogFiles(dir, rotate_bytes));
}

ReplicaLogFiles::~ReplicaLogFiles() {
  for (auto& [replica, f] : files_) std::fclose(f.file);
}

std::string ReplicaLogFiles::PathOf(const std::string& replica) const {
  return (fs::path(dir_) / (replica + ".log")).string();
}

absl::Status ReplicaLogFiles::Append(const std::string& replica, std::string_view line) {
  // Replica names are the launcher's own (tfjob::ReplicaName of a validated job name); a name
  // that could leave the folder is refused all the same.
  if (replica.empty() || replica.find('/') != std::string::npos || replica == "." ||
      replica == "..") {
    return absl::InvalidArgumentError("no log file for a replica named \"" + replica + "\"");
  }
  std::lock_guard<std::mutex> lock(mu_);
  File& f = files_[replica];
  if (f.file != nullptr && f.bytes >= rotate_bytes_) {
    std::fclose(f.file);
    f.file = nullptr;
  }
  if (f.file == nullptr) {
    if (absl::Status opened = Open(replica, f); !opened.ok()) {
      files_.erase(replica);
      return opened;
    }
  }
  if (std::fwrite(line.data(), 1, line.size(), f.file) != line.size() ||
      std::fputc('\n', f.file) == EOF || std::fflush(f.file) != 0) {
    return absl::InternalError("cannot write " + PathOf(replica) + ": " + std::strerror(errno));
  }
  f.bytes += static_cast<std::int64_t>(line.size()) + 1;
  return absl::OkStatus();
}

absl::Status ReplicaLogFiles::Open(const std::string& replica, File& f) {
  const std::string path = PathOf(replica);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  f.bytes = ec ? 0 : static_cast<std::int64_t>(size);
  if (f.bytes >= rotate_bytes_) {
    fs::rename(path, path + ".1", ec);
    if (ec) return absl::InternalError("cannot rotate " + path + ": " + ec.message());
    f.bytes = 0;
  }
  f.file = std::fopen(path.c_str(), "ae");
  if (f.file == nullptr) {
    return absl::InternalError("cannot open " + path + ": " + std::strerror(errno));
  }
  return absl::OkStatus();
}

}  // namespace taas::launcher
