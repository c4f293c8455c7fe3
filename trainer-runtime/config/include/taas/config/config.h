// Everything a trainer process is told, read and validated in one place: TF_CONFIG (Kubeflow's
// format), command-line flags and TF_*/TAAS_* environment variables. Nothing else in the runtime
// reads the environment.
//
// Flags override environment variables, which override defaults. Errors name the flag or variable
// (and, for TF_CONFIG, the JSON field): `TF_CONFIG.task.index: 3 is out of range ...`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "taas/base/cpus.h"
#include "taas/base/status.h"
#include "taas/runtime/dist_model.h"

namespace taas::config {

struct RuntimeConfig {
  TrainerInfo info;  // role, index, chief, sync, replicas, max steps, model dir, model args

  // True when there is no TF_CONFIG: one process trains with an in-process parameter server.
  bool local = false;
  // TF_CONFIG is Kubeflow's sparse form (enableDynamicWorker): workers are not listed, so
  // info.num_workers is only a lower bound (this worker's rank + 1); asynchronous training only.
  bool dynamic_workers = false;
  std::vector<std::string> ps_addresses;
  // Training replicas in order: the chief (if the cluster has a chief/master) then the workers.
  std::vector<std::string> worker_addresses;
  // Their names as the stall lines name a peer (taas::PeerName: "chief-0", "worker-1"), in the same
  // order; empty for a sparse TF_CONFIG and without TF_CONFIG.
  std::vector<std::string> worker_names;
  std::string listen_address;  // This replica's own address from TF_CONFIG ("" if none).
  std::string job_name;        // For log lines (TAAS_JOB_NAME), may be empty.
  // This replica as its peers name it (taas::PeerName of TF_CONFIG's task: "worker-1"), and which
  // (re)creation of its pod or process this is (TAAS_REPLICA_INCARNATION, taas/base/fence.h): both
  // named in every connection, so that peers refuse an older incarnation. "" and 0 without them.
  std::string replica_name;
  std::uint64_t replica_incarnation = 0;

  // Checkpoints and summaries are each due when either period passed since the last one, 0 = that
  // period off (taas/runtime's schedule.h).
  double save_checkpoints_secs = 600;
  std::int64_t save_checkpoints_steps = 0;  // 0: by time only.
  int keep_checkpoints = 5;
  std::int64_t save_summaries_steps = 100;
  double save_summaries_secs = 0;  // 0: by steps only.
  bool summary_histograms = true;  // The chief's summaries include a histogram of each variable.
  std::int64_t log_steps = 10;
  double wait_timeout_secs = 600;  // Longest any wait for a peer may last.
  // A wait for a peer this long is a stall: logged with whom and since when, again with backoff,
  // and reported on the metrics page (taas/base/stall_watch.h); 0: stalls are not watched.
  double stall_secs = 30;
  // From SIGTERM (or SIGINT) on, the time the replica has to finish its step, save the job's state
  // (the chief) or serve that save (a PS), and exit with the transient code; below Kubernetes'
  // default grace period of 30 s, with room for the process's own exit.
  double termination_grace_secs = 25;
  double eval_interval_secs = 5;  // Evaluator's poll period for new checkpoints.
  // evaluate() on the chief (TAAS_EVAL_ON_CHIEF): once training ends when set, and also every
  // eval_on_chief_steps global steps when that is > 0.
  bool eval_on_chief = false;
  std::int64_t eval_on_chief_steps = 0;
  // Predicting (TAAS_PREDICT_OUTPUT set): the process builds the model as an evaluator
  // (info.predicting), restores predict_checkpoint (empty: the model dir's newest that verifies),
  // runs it on predict_inputs in batches of predict_batch_size and writes predict_output; it
  // ignores TF_CONFIG's role and trains nothing.
  std::string predict_output;
  std::vector<std::string> predict_inputs;
  std::string predict_checkpoint;
  std::int64_t predict_batch_size = 100;
  // The evaluator's nice value (0: as started). Where it shares cores with training (a local
  // run), a higher one leaves training the CPU; the evaluator then scores what it gets to.
  int evaluator_nice = 0;
  std::int64_t partition_bytes = 1 << 20;  // Variables this large are split across all PS.
  // Lanes per PS task (taas/ps/client.h): stores, each over its own connection, that a large
  // partitioned variable is spread over. Every replica of a job must use the same value.
  int ps_lanes = 2;
  int metrics_port = 0;  // 0: no metrics endpoint.
  // Threads of each model replica's compute (taas::SetHostComputeThreads); 0: chosen at start-up
  // from the CPUs the process may use.
  int compute_threads = 0;
  // TAAS_DEVICE / --device: "cpu", "cuda" or "" (the GPUs when any is visible), and which of the
  // two set it; the choice itself is ChooseDevices', at start-up.
  std::string device_setting;
  std::string device_source;
  // CUDA_VISIBLE_DEVICES as the process got it, for messages; "unset" when it was not set.
  std::string cuda_visible_devices = "unset";
  // NVIDIA_VISIBLE_DEVICES (what NVIDIA's device plugin sets in a pod), quoted, for messages;
  // empty when it was not set.
  std::string nvidia_visible_devices;
  // Whether TAAS_REPLICAS_PER_WORKER / --replicas_per_worker was given (else, on GPUs, one model
  // replica per visible GPU).
  bool replicas_per_worker_set = false;
  // The device of each model replica of this process, chosen at start-up (ChooseDevices); empty
  // until then. info.device is the first.
  std::vector<Device> devices;

  // Collective training (info.strategy). The strategy as TAAS_STRATEGY / --strategy named it, and
  // which of the two did ("" when inferred from TF_CONFIG: no `ps` means collective).
  std::string strategy_setting;
  std::string strategy_source;
  // Gradients travel in all-reduces of about this many bytes (buckets), cut into pieces of
  // allreduce_chunk_bytes that pipeline around the ring.
  std::int64_t allreduce_bucket_bytes = std::int64_t{4} << 20;
  std::int64_t allreduce_chunk_bytes = std::int64_t{1} << 20;
  // Every this many steps the workers compare a checksum of their variables (0: never); a
  // difference fails the job, since replicas that drifted apart train different models.
  std::int64_t check_variables_steps = 1000;

  // The job's secrets (taas/contract/job_secret.h): hex text read from the files named by
  // TAAS_JOB_TOKEN_FILE and TAAS_CHIEF_TOKEN_FILE. A distributed run needs the job token, the
  // chief and the PS the chief token too. Without TF_CONFIG no file is read: the in-process PS
  // gets fresh tokens that only this process knows.
  std::string job_token;
  std::string chief_token;
  std::string pod_ip;  // TAAS_POD_IP: where a PS binds (validated as an IP); "" when unset.
  // Largest gRPC message a PS or its client accepts: Initialize and Snapshot carry a lane's
  // shards and optimizer slots in one message.
  std::int64_t ps_max_message_bytes = std::int64_t{1} << 30;
  // Where the chief writes the job's report when training ended (TAAS_TERMINATION_MESSAGE_PATH);
  // empty: Kubernetes' terminationMessagePath if the file exists, else nowhere.
  std::string termination_message_path;
};

// `args` excludes argv[0]; `env` maps variable names to values.
absl::StatusOr<RuntimeConfig> ParseConfig(const std::vector<std::string>& args,
                                          const std::map<std::string, std::string>& env);

// The job's token files and the pod IP (RuntimeConfig::job_token, chief_token, pod_ip), read from
// the files `env` names (taas/contract/job_secret.h); errors name the variable and the fix.
absl::Status ReadSecrets(const std::map<std::string, std::string>& env, RuntimeConfig& config);

// The threads each model replica computes with, and what chose them: the compute_threads
// setting (its environment name), else the CPUs the process may use divided among the model
// replicas it runs (a collective worker's replicas_per_worker, else 1), at least 1 (`cpus`'s
// limited_by: "cgroup cpu limit" or "cpu affinity").
struct ComputeThreadsChoice {
  int threads = 1;
  std::string chosen_by;
};
ComputeThreadsChoice ChooseComputeThreads(const RuntimeConfig& config, const AvailableCpus& cpus);

// Where this process's model replicas compute, one device each, in replica order, and why (for
// the startup line). `cuda_devices`: the CUDA devices the process sees (what the registered CUDA
// memory counts; NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES applied), -1 when this binary
// has no CUDA device at all.
//  - a parameter server: the host (it holds host tensors);
//  - TAAS_DEVICE=cpu, or unset without a visible CUDA device: the host, for every replica;
//  - TAAS_DEVICE=cuda, or unset with CUDA devices visible: under all-reduce one model replica per
//    GPU (cuda:0..N-1; an explicit TAAS_REPLICAS_PER_WORKER may use fewer, never more), else (a
//    parameter-server worker, the evaluator) one replica on cuda:0;
//  - TAAS_DEVICE=cuda without a visible CUDA device: kFailedPrecondition (permanent) naming
//    CUDA_VISIBLE_DEVICES (and NVIDIA_VISIBLE_DEVICES when set) and the fix.
struct DeviceChoice {
  std::vector<Device> devices;  // one per model replica of this process
  std::string chosen_by;
};
absl::StatusOr<DeviceChoice> ChooseDevices(const RuntimeConfig& config, int cuda_devices);

// Reads argv and the process environment, then ParseConfig and ReadSecrets.
absl::StatusOr<RuntimeConfig> ConfigFromProcess(int argc, char** argv);

// One line per setting with its value, for the start-up log and `--help`.
std::string RoleName(Role role);
// "parameter_server" or "collective", as TAAS_STRATEGY spells them.
std::string StrategyName(Strategy strategy);
std::string HelpText();

}  // namespace taas::config
