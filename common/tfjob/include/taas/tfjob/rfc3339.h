// RFC 3339 timestamps as Kubernetes writes them (metav1.Time): "2024-05-01T12:30:00Z".
#pragma once

#include <string>
#include <string_view>

#include "taas/base/status.h"
#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// Always UTC with a `Z` suffix and whole seconds, like metav1.Time.
std::string FormatRfc3339(Time time);

// Accepts `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (also a lower-case `t`/`z`); fractions are
// truncated to whole seconds and offsets converted to UTC. InvalidArgument naming the text
// otherwise.
absl::StatusOr<Time> ParseRfc3339(std::string_view text);

}  // namespace taas::tfjob
