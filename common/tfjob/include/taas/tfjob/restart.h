// What happens when a replica's `tensorflow` container exits: Kubernetes' kubelet semantics for
// Always/OnFailure/Never plus Kubeflow's ExitCode policy. Shared by the operator (which sees pod
// states) and the launcher (which plays kubelet for local processes).
#pragma once

#include <string_view>

#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

enum class ExitAction {
  kRestart,  // run the replica again
  kFail,     // the replica failed for good
  kSucceed,  // the replica finished successfully
};

std::string_view ToString(ExitAction action);

// Kubeflow's rule for the ExitCode policy: 128 and above (signals: 130 SIGINT, 137 SIGKILL,
// 143 SIGTERM, ...) are transient and retried; 1-127 are permanent.
bool IsRetryableExitCode(int exit_code);

// The decision for a container that exited with `exit_code`:
//   Always:    restart, even after exit 0 (a replica under Always never "succeeds");
//   OnFailure: 0 succeed, anything else restart;
//   Never:     0 succeed, anything else fail;
//   ExitCode:  0 succeed, >= 128 restart, anything else fail.
ExitAction DecideOnExit(RestartPolicy policy, int exit_code);

// The policy the kubelet applies to the pod's containers: ExitCode becomes Never (the operator
// deletes and recreates retryable pods itself); Always, OnFailure and Never are the kubelet's
// own, and under them it restarts containers in place.
RestartPolicy KubeletRestartPolicy(RestartPolicy policy);

// The restartPolicy written into the pod spec: KubeletRestartPolicy's, spelled.
std::string_view PodRestartPolicy(RestartPolicy policy);

// Whether a replica that exited with `exit_code` is restarted in place (the same pod, its restart
// count raised) rather than recreated or left: the kubelet's decision under KubeletRestartPolicy.
// The operator observes such restarts; the launcher, which is its own kubelet, performs them.
bool RestartsInPlace(RestartPolicy policy, int exit_code);

}  // namespace taas::tfjob
