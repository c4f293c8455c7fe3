// For tests that form a TCP ring on loopback: addresses whose ports were free a moment ago.
#pragma once

#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::collective_testing {

// `n` "127.0.0.1:<port>" addresses, each port bound once and released (a race with another
// process taking it is possible, as with any free-port picker); an error naming the call that
// failed.
absl::StatusOr<std::vector<std::string>> FreeLoopbackAddresses(int n);

}  // namespace taas::collective_testing
