// Reading the TFJob manifest `taas run` is given: a file of at most tfjob::kMaxYamlBytes, parsed
// as YAML in a child process with memory and time limits (taas::RunIsolated), since yaml-cpp 0.7
// loops allocating without bound on some malformed YAML that no check before it catches in full.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/isolated_call.h"
#include "taas/base/status.h"

namespace taas::launcher {

// The limits of one manifest's parse: far above what any TFJob needs (a 3 MiB manifest parses in
// well under a second and 100 MiB), far below what would hurt the machine.
IsolationLimits ManifestParseLimits();

// The documents of a YAML stream (tfjob::YamlToJson), parsed under `limits`: the parser's errors
// with their line and column, or InvalidArgument naming the limit it ran into.
absl::StatusOr<std::vector<nlohmann::json>> ParseYamlIsolated(
    std::string_view yaml, const IsolationLimits& limits = ManifestParseLimits());

// The one TFJob document of the file at `path` (not yet loaded or validated). Errors name the
// file: unreadable, over the size limit (checked while reading: a FIFO or /dev/zero cannot make
// it read without end), not YAML, or not exactly one document.
absl::StatusOr<nlohmann::json> ReadManifest(const std::string& path);

}  // namespace taas::launcher
