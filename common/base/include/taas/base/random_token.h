// Secrets made on this machine (job and chief tokens): random bytes from the kernel, hex-encoded.
#pragma once

#include <cstddef>
#include <string>

#include "taas/base/status.h"

namespace taas {

// `bytes` random bytes from getrandom(2) as 2 * `bytes` lower-case hex digits; an error only when
// the kernel cannot give them.
absl::StatusOr<std::string> RandomHexToken(std::size_t bytes);

}  // namespace taas
