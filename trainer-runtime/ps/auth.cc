#include "taas/ps/auth.h"

#include "taas/base/random_token.h"
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

absl::StatusOr<PsTokens> NewTokens() {
  PsTokens tokens;
  TAAS_ASSIGN_OR_RETURN(tokens.job, RandomHexToken(contract::kTokenBytes));
  TAAS_ASSIGN_OR_RETURN(tokens.chief, RandomHexToken(contract::kTokenBytes));
  return tokens;
}

}  // namespace taas::ps
