#include "taas/tfjob/restart.h"

#include <doctest/doctest.h>

#include "taas/contract/exit_codes.h"

namespace taas::tfjob {
namespace {

TEST_CASE("the runtime's exit codes are read as the runtime means them") {
  CHECK_FALSE(IsRetryableExitCode(contract::kExitBadConfig));
  CHECK_FALSE(IsRetryableExitCode(contract::kExitModelError));
  CHECK(IsRetryableExitCode(contract::kExitTransient));
  CHECK(DecideOnExit(RestartPolicy::kExitCode, contract::kExitTransient) == ExitAction::kRestart);
  CHECK(DecideOnExit(RestartPolicy::kExitCode, contract::kExitModelError) == ExitAction::kFail);
}

TEST_CASE("retryable exit codes are 128 and above, as Kubeflow's IsRetryableExitCode") {
  CHECK_FALSE(IsRetryableExitCode(0));
  CHECK_FALSE(IsRetryableExitCode(1));
  CHECK_FALSE(IsRetryableExitCode(127));
  CHECK(IsRetryableExitCode(128));
  CHECK(IsRetryableExitCode(137));
  CHECK(IsRetryableExitCode(143));
  CHECK(IsRetryableExitCode(255));
  CHECK_FALSE(IsRetryableExitCode(-1));
}

TEST_CASE("the exit decision per restart policy and exit code") {
  using enum ExitAction;
  struct Case {
    RestartPolicy policy;
    int exit_code;
    ExitAction expected;
  };
  const Case cases[] = {
      {RestartPolicy::kAlways, 0, kRestart},     {RestartPolicy::kAlways, 1, kRestart},
      {RestartPolicy::kAlways, 137, kRestart},   {RestartPolicy::kOnFailure, 0, kSucceed},
      {RestartPolicy::kOnFailure, 1, kRestart},  {RestartPolicy::kOnFailure, 143, kRestart},
      {RestartPolicy::kNever, 0, kSucceed},      {RestartPolicy::kNever, 1, kFail},
      {RestartPolicy::kNever, 137, kFail},       {RestartPolicy::kExitCode, 0, kSucceed},
      {RestartPolicy::kExitCode, 1, kFail},      {RestartPolicy::kExitCode, 2, kFail},
      {RestartPolicy::kExitCode, 127, kFail},    {RestartPolicy::kExitCode, 128, kRestart},
      {RestartPolicy::kExitCode, 130, kRestart}, {RestartPolicy::kExitCode, 137, kRestart},
      {RestartPolicy::kExitCode, 143, kRestart}, {RestartPolicy::kExitCode, 255, kRestart},
  };
  for (const Case& c : cases) {
    CAPTURE(ToString(c.policy));
    CAPTURE(c.exit_code);
    CHECK(ToString(DecideOnExit(c.policy, c.exit_code)) == ToString(c.expected));
  }
}

TEST_CASE("pods get the kubelet restart policy; ExitCode becomes Never") {
  CHECK(PodRestartPolicy(RestartPolicy::kExitCode) == "Never");
  CHECK(PodRestartPolicy(RestartPolicy::kNever) == "Never");
  CHECK(PodRestartPolicy(RestartPolicy::kOnFailure) == "OnFailure");
  CHECK(PodRestartPolicy(RestartPolicy::kAlways) == "Always");
}

TEST_CASE("the kubelet restarts in place under Always and OnFailure only") {
  CHECK(RestartsInPlace(RestartPolicy::kAlways, 0));
  CHECK(RestartsInPlace(RestartPolicy::kAlways, 1));
  CHECK_FALSE(RestartsInPlace(RestartPolicy::kOnFailure, 0));
  CHECK(RestartsInPlace(RestartPolicy::kOnFailure, 137));
  CHECK_FALSE(RestartsInPlace(RestartPolicy::kNever, 137));
  // Under ExitCode a retryable exit is restarted, but by recreating the pod, not in place.
  CHECK(DecideOnExit(RestartPolicy::kExitCode, 137) == ExitAction::kRestart);
  CHECK_FALSE(RestartsInPlace(RestartPolicy::kExitCode, 137));
}

}  // namespace
}  // namespace taas::tfjob
