#include "taas/tfjob/restart.h"

#include "taas/contract/exit_codes.h"

namespace taas::tfjob {

std::string_view ToString(ExitAction action) {
  switch (action) {
    case ExitAction::kRestart:
      return "restart";
    case ExitAction::kFail:
      return "fail";
    case ExitAction::kSucceed:
      return "succeed";
  }
  return "unknown";
}

bool IsRetryableExitCode(int exit_code) { return exit_code >= contract::kFirstRetryableExitCode; }

ExitAction DecideOnExit(RestartPolicy policy, int exit_code) {
  switch (policy) {
    case RestartPolicy::kAlways:
      return ExitAction::kRestart;
    case RestartPolicy::kOnFailure:
      return exit_code == 0 ? ExitAction::kSucceed : ExitAction::kRestart;
    case RestartPolicy::kNever:
      return exit_code == 0 ? ExitAction::kSucceed : ExitAction::kFail;
    case RestartPolicy::kExitCode:
      if (exit_code == 0) return ExitAction::kSucceed;
      return IsRetryableExitCode(exit_code) ? ExitAction::kRestart : ExitAction::kFail;
  }
  return ExitAction::kFail;
}

RestartPolicy KubeletRestartPolicy(RestartPolicy policy) {
  return policy == RestartPolicy::kExitCode ? RestartPolicy::kNever : policy;
}

std::string_view PodRestartPolicy(RestartPolicy policy) {
  return ToString(KubeletRestartPolicy(policy));
}

bool RestartsInPlace(RestartPolicy policy, int exit_code) {
  return DecideOnExit(KubeletRestartPolicy(policy), exit_code) == ExitAction::kRestart;
}

}  // namespace taas::tfjob
