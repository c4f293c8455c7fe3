#include "taas/ps/auth.h"

#include "taas/base/random_token.h"
#include "taas/contract/job_secret.h"

namespace taas::ps {

absl::StatusOr<PsTokens> NewTokens() {
  PsTokens tokens;
  TAAS_ASSIGN_OR_RETURN(tokens.job, RandomHexToken(contract::kTokenBytes));
  TAAS_ASSIGN_OR_RETURN(tokens.chief, RandomHexToken(contract::kTokenBytes));
  return tokens;
}

}  // namespace taas::ps
