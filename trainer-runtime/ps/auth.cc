#include "taas/ps/auth.h"

#include <cstdio>
#include <memory>

#include "taas/contract/job_secret.h"

namespace taas::ps {

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

namespace {

absl::StatusOr<std::string> NewToken(std::FILE* random) {
  unsigned char bytes[contract::kTokenBytes];
  if (std::fread(bytes, 1, sizeof(bytes), random) != sizeof(bytes)) {
    return absl::InternalError("cannot read " + std::to_string(sizeof(bytes)) +
                               " bytes from /dev/urandom for a PS token");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * sizeof(bytes));
  for (unsigned char b : bytes) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xf]);
  }
  return hex;
}

}  // namespace

absl::StatusOr<PsTokens> NewTokens() {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> random(std::fopen("/dev/urandom", "rb"),
                                                         &std::fclose);
  if (!random) return absl::InternalError("cannot open /dev/urandom for PS tokens");
  PsTokens tokens;
  TAAS_ASSIGN_OR_RETURN(tokens.job, NewToken(random.get()));
  TAAS_ASSIGN_OR_RETURN(tokens.chief, NewToken(random.get()));
  return tokens;
}

}  // namespace taas::ps
