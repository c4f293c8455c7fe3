// Each replica's output in a file of its own, <model dir>/logs/<replica>.log, as `kubectl logs`
// keeps a pod's: every line of every process of the replica, restarts appended, so the console can
// show one progress view and still nothing is lost.
#pragma once

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
  // The folder `dir` (created when missing) holds the files.
  static absl::StatusOr<std::unique_ptr<ReplicaLogFiles>> Create(const std::string& dir);
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
  explicit ReplicaLogFiles(std::string dir) : dir_(std::move(dir)) {}

  const std::string dir_;
  std::mutex mu_;
  std::map<std::string, std::FILE*> files_;  // opened on a replica's first line
};

}  // namespace taas::launcher
