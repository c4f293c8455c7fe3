// What each replica of a local job runs with: a name, two loopback ports (gRPC and metrics), its
// container's command resolved to a local executable, and the environment the operator would give
// its pod (the manifest's env, the job secret's files, TF_LOGDIR, TF_CONFIG from the TFJob rules
// library with 127.0.0.1 addresses, and TAAS_TERMINATION_MESSAGE_PATH for what a pod's
// /dev/termination-log holds).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "binary_locator.h"
#include "job_secret_files.h"
#include "taas/base/status.h"
#include "taas/contract/env.h"
#include "taas/tfjob/restart.h"
#include "taas/tfjob/tfjob.h"

namespace taas::launcher {

struct ReplicaLaunch {
  tfjob::ReplicaType type = tfjob::ReplicaType::kWorker;
  int index = 0;
  std::string name;  // tfjob::ReplicaName
  int port = 0;
  int metrics_port = 0;
  tfjob::RestartPolicy policy = tfjob::RestartPolicy::kNever;
  std::vector<std::string> argv;
  // Set for the replica, over the launcher's own environment (see ProcessEnvironment).
  std::map<std::string, std::string> env;
  // Between SIGTERM and SIGKILL when the whole job is interrupted, as the kubelet gives a pod:
  // its template's terminationGracePeriodSeconds (TerminationGraceOf).
  std::chrono::seconds termination_grace{contract::kKubernetesTerminationGracePeriodSecs};
};

struct ReplicaSettings {
  // Where a command `/opt/taas/bin/<name>` is looked up (LocateBinary).
  std::vector<BinaryPlace> binary_places;
  // The shared model dir, an absolute path: TF_LOGDIR of every replica.
  std::string model_dir;
  // `--env`: after the manifest's env, before the launcher's own variables.
  std::map<std::string, std::string> env;
  // Set only where neither the manifest nor --env set them (LocalComputeDefaults).
  std::map<std::string, std::string> defaults;
};

// What the launcher gives every replica unless told otherwise, since they all share this
// machine's `cpus`: TAAS_COMPUTE_THREADS, an equal share of the CPUs among the replicas that
// compute (all but parameter servers), at least 1; and OMP_WAIT_POLICY=PASSIVE, so that idle
// compute threads sleep instead of spinning on cores another replica needs. Variables already in
// the launcher's environment (`inherited`, null-terminated like `environ`) are left to it.
std::map<std::string, std::string> LocalComputeDefaults(const tfjob::TFJobSpec& spec, int cpus,
                                                        char* const* inherited);

// Replicas' ports are chosen from kLowestChosenPort up to the start of the kernel's ephemeral
// range (ip_local_port_range), never inside it: the kernel gives ports of that range to every
// outgoing connection on the machine, and one that took a chosen port between the choice and the
// replica's listen made that replica fail on every restart (the launcher keeps its ports).
inline constexpr int kLowestChosenPort = 10000;
inline constexpr int kDefaultEphemeralPortsStart = 32768;  // Linux's default range: 32768-60999

// The first port of the ephemeral range from the text of /proc/sys/net/ipv4/ip_local_port_range
// ("32768\t60999"); kDefaultEphemeralPortsStart when the text says nothing usable or leaves fewer
// than 1024 ports above kLowestChosenPort.
int EphemeralPortsStart(std::string_view ip_local_port_range);

// `count` distinct TCP ports on 127.0.0.1 free when chosen (nothing holds them after), below the
// ephemeral range.
absl::StatusOr<std::vector<int>> FreePorts(int count);

// A pod template's spec.terminationGracePeriodSeconds, Kubernetes' 30 s when absent; an error
// naming `path` (the template's field) when it is not a whole number of seconds >= 0.
absl::StatusOr<std::chrono::seconds> TerminationGraceOf(const nlohmann::json& pod_template,
                                                        const std::string& path);

// Every replica of `job`, in tfjob::kStatusOrder then by index, the i-th taking ports[2i] and
// ports[2i+1] (so `ports` holds 2 * tfjob::TotalReplicas), its termination message in
// TerminationMessagePath (job_result.h) under the model dir, whatever the manifest says, and its
// pod's termination grace (TerminationGraceOf). Errors
// name the manifest field: a replica type without a `tensorflow` container, or without a command,
// or a command
// `/opt/taas/bin/<name>` whose executable is nowhere in `binary_places`. `say` gets a line for
// what the user should know (which executable a command runs, env entries skipped or replaced).
absl::StatusOr<std::vector<ReplicaLaunch>> PlanReplicas(
    const tfjob::TFJob& job, const ReplicaSettings& settings, const std::vector<int>& ports,
    const JobSecretFiles& secrets, const std::function<void(const std::string&)>& say);

// The warning `taas run` prints at start when the job's replica specs disagree on a setting
// their replicas must share (tfjob::DisagreeingSettings, the operator's rule too), the values the
// launcher gives every replica itself (`settings.env`, from --env, and TF_LOGDIR) counting for
// every spec; nullopt when they agree. The launcher's own environment is not consulted: it fills
// only what a spec leaves unset.
std::optional<std::string> SettingsWarning(const tfjob::TFJob& job,
                                           const ReplicaSettings& settings);

// The whole environment of a replica's process, KEY=VALUE each, sorted by key: `inherited` (the
// launcher's own, null-terminated like `environ`) without TF_CONFIG, then `replica_env` over it.
// The launcher's TF_CONFIG (set when it runs inside a replica itself) would name another cluster.
std::vector<std::string> ProcessEnvironment(const std::map<std::string, std::string>& replica_env,
                                            char* const* inherited);

}  // namespace taas::launcher
