#include "taas/base/random_token.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace taas {

absl::StatusOr<std::string> RandomHexToken(std::size_t bytes) {
  std::vector<unsigned char> random(bytes);
  std::size_t filled = 0;
  while (filled < bytes) {
    const ssize_t got = ::getrandom(random.data() + filled, bytes - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(std::string("getrandom for a token: ") + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes);
  for (unsigned char b : random) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xf]);
  }
  return hex;
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  // The loop above never exits early; `volatile` keeps the compiler from adding an early exit.
  volatile unsigned char result = diff;
  return result == 0;
}

}  // namespace taas
