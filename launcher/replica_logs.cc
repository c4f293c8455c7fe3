#include "replica_logs.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace taas::launcher {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<ReplicaLogFiles>> ReplicaLogFiles::Create(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create the log folder " + dir + ": " + ec.message());
  return std::unique_ptr<ReplicaLogFiles>(new ReplicaLogFiles(dir));
}

ReplicaLogFiles::~ReplicaLogFiles() {
  for (auto& [replica, file] : files_) std::fclose(file);
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
  std::FILE*& file = files_[replica];
  if (file == nullptr) {
    file = std::fopen(PathOf(replica).c_str(), "ae");
    if (file == nullptr) {
      files_.erase(replica);
      return absl::InternalError("cannot open " + PathOf(replica) + ": " + std::strerror(errno));
    }
  }
  if (std::fwrite(line.data(), 1, line.size(), file) != line.size() ||
      std::fputc('\n', file) == EOF || std::fflush(file) != 0) {
    return absl::InternalError("cannot write " + PathOf(replica) + ": " + std::strerror(errno));
  }
  return absl::OkStatus();
}

}  // namespace taas::launcher
