// The TFJob status write with optimistic concurrency, private to the controller: the decided
// status is PUT through `/status` onto the job as last read (its resourceVersion); a 409 Conflict
// means someone else changed the job in between, so the job is read again, the status decided
// again from the fresh object and written onto it (keeping what others wrote: labels, spec), a
// bounded number of times.
#pragma once

#include <absl/status/statusor.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "taas/base/log.h"

namespace taas::controller {

// PUTs of one status before a run of 409s is given up: the reconcile then fails, is logged and
// is retried from the work queue with backoff.
inline constexpr int kStatusWriteAttempts = 5;

// The body of a `/status` PUT: `object` (the job as last read: metadata with its resourceVersion,
// spec) with `status` in place of its own.
nlohmann::json StatusBody(const nlohmann::json& object, const nlohmann::json& status);

// What the status writer needs from the API server and from the controller.
struct StatusWriteOps {
  // PUT `body` to the job's `/status`.
  std::function<absl::StatusOr<nlohmann::json>(const nlohmann::json& body)> put;
  // GET the job again.
  std::function<absl::StatusOr<nlohmann::json>()> get;
  // Decide again from the fresh job: the status to write now, none when nothing is left to
  // write, or `gone` when the fresh job is invalid (the callee reports it).
  struct Redecision {
    bool gone = false;
    std::optional<nlohmann::json> status;
  };
  std::function<absl::StatusOr<Redecision>(const nlohmann::json& fresh)> redecide;
};

struct StatusWrite {
  std::optional<nlohmann::json> written;  // what the API server stored, when it was written
  bool gone = false;  // the job no longer exists (or became invalid): nothing else to do
};

// Writes `status` onto `object`, retrying on 409 as above. Every 409 counts in `conflicts`; a
// write still conflicting after kStatusWriteAttempts is logged as an error and returned
// (Aborted). Errors other than 404 (gone) and 409 are returned at once.
absl::StatusOr<StatusWrite> WriteStatusRetryingConflicts(nlohmann::json object,
                                                         nlohmann::json status,
                                                         const StatusWriteOps& ops,
                                                         const Logger& log,
                                                         std::atomic<std::uint64_t>& conflicts);

}  // namespace taas::controller
