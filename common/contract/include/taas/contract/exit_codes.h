// Exit codes a replica's process ends with, and what the rules that supervise it read from them.
// The runtime exits with these; the TFJob restart rules (taas::tfjob::DecideOnExit), and through
// them the operator and the launcher, decide from them. Kubeflow's `ExitCode` restart policy draws
// the line at 128: 1..127 are permanent (a restart of the same binary with the same input fails
// the same way), 128 and above are retryable (signals and our transient failures).
#pragma once

namespace taas::contract {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadConfig = 2;   // TF_CONFIG, flags, environment or tokens are wrong.
inline constexpr int kExitModelError = 3;  // the model's hooks, its data or a refused push failed.
// A newer incarnation of this replica replaced it (taas/base/fence.h): the process must not run
// beside it. No supervisor that counts the replica sees it (the operator and the launcher start a
// newer incarnation only once the older one is gone); permanent, so that a kubelet restarting the
// container in place (with the same, fenced incarnation) is not asked to.
inline constexpr int kExitFenced = 4;
// The first retryable exit code under restartPolicy ExitCode (128 + a signal number also is).
inline constexpr int kFirstRetryableExitCode = 128;
inline constexpr int kExitTransient = 150;  // a peer lost, a wait timed out: a restart can succeed.

static_assert(kExitBadConfig < kFirstRetryableExitCode &&
                  kExitModelError < kFirstRetryableExitCode &&
                  kExitFenced < kFirstRetryableExitCode,
              "permanent failures must not be retried");
static_assert(kExitTransient >= kFirstRetryableExitCode && kExitTransient <= 255,
              "transient failures must be retried, and an exit code is one byte");

}  // namespace taas::contract
