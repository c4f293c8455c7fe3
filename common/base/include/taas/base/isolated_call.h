// Running a third-party parser on a user's input in a child process, so that a bug of the parser
// (an endless loop, unbounded allocation, a crash) costs an error, not the caller. yaml-cpp 0.7,
// Debian bookworm's, loops allocating without bound on some malformed YAML: every YAML manifest
// `taas run` reads goes through here (docs/operator.md, "Limits").
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas {

struct IsolationLimits {
  // Resident memory of the child; past it the child is stopped.
  std::size_t max_memory_bytes = std::size_t{512} << 20;
  // From the fork to the child's last output byte; past it the child is killed.
  std::chrono::milliseconds deadline{std::chrono::seconds(10)};
  // What the child may hand back.
  std::size_t max_output_bytes = std::size_t{64} << 20;
};

// Runs `work` in a forked child under `limits` and returns what it returned: its value, or its
// error with the same code and message. `what` names the work in the errors of the limits:
// ResourceExhausted (memory or output), DeadlineExceeded (time), Internal (the child crashed or
// could not be started). Fork-safe only for work that needs no lock another thread may hold, as
// malloc (glibc makes it safe across fork) or parsing: call it before starting threads where
// possible. The child never returns to the caller (it ends with _exit).
absl::StatusOr<std::string> RunIsolated(const std::function<absl::StatusOr<std::string>()>& work,
                                        const IsolationLimits& limits, std::string_view what);

}  // namespace taas
