// Each replica's output in a file of its own, <model dir>/logs/<replica>.log, as `kubectl logs`
// keeps a pod's: every line of every process of the replica, restarts appended, so the console can
// show one progress view and still nothing is lost. Like the kubelet's, a file is rotated at a size
// (<replica>.log becomes <replica>.log.1, replacing the older one), so a replica that prints
// without end cannot fill the disk.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas::launcher {

class ReplicaLogFiles {
 public:
  // A file is rotated once it holds this much (the kubelet's containerLogMaxSize is 10 MiB).
  static constexpr std::int64_t kDefaultRotateBytes = 64 << 20;

  // The folder `dir` (created when missing) holds the files.
  static absl::StatusOr<std::unique_ptr<ReplicaLogFiles>> Create(
      const std::string& dir, std::int64_t rotate_bytes = kDefaultRotateBytes);
  ~ReplicaLogFiles();
  ReplicaLogFiles(const ReplicaLogFiles&) = delete;
  ReplicaLogFiles& operator=(const ReplicaLogFiles&) = delete;

  // Appends `line` and a newline to the replica's file, written through at once (a `tail -f`
  // follows it). Thread-safe. An error names the file; the caller decides how loud to be.
  absl::Status Append(const std::string& replica, std::string_view line);

  // Where the replica's lines go.
  std::string PathOf(const std::string& replica) const;
  const std::string& dir() const { return dir_; }

 private:
  struct File {
    std::FILE* file = nullptr;
    std::int64_t bytes = 0;  // in the file now, counted from its size when opened
  };
  ReplicaLogFiles(std::string dir, std::int64_t rotate_bytes)
      : dir_(std::move(dir)), rotate_bytes_(rotate_bytes) {}
  // Opens the replica's file for appending (after moving a full one to .1).
  absl::Status Open(const std::string& replica, File& f);

  const std::string dir_;
  const std::int64_t rotate_bytes_;
  std::mutex mu_;
  std::map<std::string, File> files_;  // opened on a replica's first line
};

}  // namespace taas::launcher
