// Globs of many files, for every reader that streams from disk: "/data/train-*.tfrecord" and
// plain paths alike (glob(3) patterns: *, ?, [...]).
#pragma once

#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::data {

// The files the patterns match, sorted by path and each once, so every replica numbers them the
// same way (sharding by file depends on it). NotFound naming the first pattern that matches
// nothing (a plain path that does not exist included); InvalidArgument for no patterns; Internal
// naming the pattern when the file system fails (an unreadable folder).
absl::StatusOr<std::vector<std::string>> MatchFiles(const std::vector<std::string>& patterns);

}  // namespace taas::data
