#include "status_write.h"

#include <string>

#include "internal.h"
#include "taas/tfjob/tfjob.h"

namespace taas::controller {

using nlohmann::json;

json StatusBody(const json& object, const json& status) {
  json body = object;
  body["apiVersion"] = std::string(taas::tfjob::kApiVersion);
  body["kind"] = std::string(taas::tfjob::kKind);
  body["status"] = status;
  return body;
}

absl::StatusOr<StatusWrite> WriteStatusRetryingConflicts(json object, json status,
                                                         const StatusWriteOps& ops,
                                                         const Logger& log,
                                                         std::atomic<std::uint64_t>& conflicts) {
  const std::string uid = internal::MetaString(object, "uid");
  for (int attempt = 1;; ++attempt) {
    auto written = ops.put(StatusBody(object, status));
    if (written.ok()) return StatusWrite{std::move(*written), false};
    if (written.status().code() == absl::StatusCode::kNotFound) return StatusWrite{{}, true};
    if (written.status().code() != absl::StatusCode::kAborted) return written.status();
    conflicts.fetch_add(1);
    if (attempt >= kStatusWriteAttempts) {
      log.Error("status write still conflicts; giving up until the next reconcile",
                {{"attempts", attempt}, {"error", std::string(written.status().message())}});
      return written.status();
    }
    // 409: someone else changed the job; decide again from a fresh read.
    auto fresh = ops.get();
    if (!fresh.ok() && fresh.status().code() != absl::StatusCode::kNotFound) return fresh.status();
    if (!fresh.ok() || internal::MetaString(*fresh, "uid") != uid) return StatusWrite{{}, true};
    auto again = ops.redecide(*fresh);
    if (!again.ok()) return again.status();
    if (again->gone) return StatusWrite{{}, true};
    if (!again->status) return StatusWrite{};
    object = std::move(*fresh);
    status = std::move(*again->status);
  }
}

}  // namespace taas::controller
