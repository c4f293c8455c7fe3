// Secrets made on this machine (job and chief tokens): random bytes from the kernel, hex-encoded;
// and how any server compares a secret it was sent.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "taas/base/status.h"

namespace taas {

// `bytes` random bytes from getrandom(2) as 2 * `bytes` lower-case hex digits; an error only when
// the kernel cannot give them.
absl::StatusOr<std::string> RandomHexToken(std::size_t bytes);

// True when `a` and `b` are equal, in time that depends only on their lengths (a token's length
// is public, its bytes are not): a peer cannot learn a secret a byte at a time from reply times.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

}  // namespace taas
