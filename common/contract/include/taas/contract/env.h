// Environment variables one component sets and another reads: the operator and the launcher set
// them on replicas (and the UI's New-job form in its manifests); the runtime reads them
// (trainer-runtime/config, which documents every variable it reads).
#pragma once

#include <string_view>

namespace taas::contract {

// The cluster and the replica's task, as Kubeflow's training-operator writes it.
inline constexpr std::string_view kTfConfigEnv = "TF_CONFIG";
// The shared model dir: checkpoints and TensorBoard summaries.
inline constexpr std::string_view kModelDirEnv = "TF_LOGDIR";
// The global step at which training stops; the local launcher reads it too, for its estimate of
// the time left.
inline constexpr std::string_view kMaxStepsEnv = "TF_MAX_STEPS";
// Synchronous (true) or asynchronous parameter-server training.
inline constexpr std::string_view kSyncEnv = "TF_SYNC";
// Settings every replica that reads them must be given alike (taas/tfjob/settings.h compares them
// across a job's replica specs; docs/trainer-runtime.md, "Job-level settings"): gradients averaged
// per synchronous step; lanes per parameter server; the size from which a variable is split across
// the parameter servers; model replicas per all-reduce worker; the all-reduce's bucket and chunk
// sizes; the steps between the workers' variable checks.
inline constexpr std::string_view kReplicasToAggregateEnv = "TF_REPLICAS_TO_AGGREGATE";
inline constexpr std::string_view kPsLanesEnv = "TAAS_PS_LANES";
inline constexpr std::string_view kPartitionBytesEnv = "TAAS_PARTITION_BYTES";
inline constexpr std::string_view kReplicasPerWorkerEnv = "TAAS_REPLICAS_PER_WORKER";
inline constexpr std::string_view kAllReduceBucketBytesEnv = "TAAS_ALLREDUCE_BUCKET_BYTES";
inline constexpr std::string_view kAllReduceChunkBytesEnv = "TAAS_ALLREDUCE_CHUNK_BYTES";
inline constexpr std::string_view kCheckVariablesStepsEnv = "TAAS_CHECK_VARIABLES_STEPS";
// Seconds between the chief's TensorBoard summaries (0: off), beside TF_SAVE_SUMMARIES_STEPS: a
// summary is due when either period passed since the last one, as with checkpoints.
inline constexpr std::string_view kSaveSummariesSecsEnv = "TAAS_SAVE_SUMMARIES_SECS";
// Seconds a replica has from SIGTERM to save the job's state and exit (docs/trainer-runtime.md,
// "Faults"): under the pod's terminationGracePeriodSeconds, whose Kubernetes default is below, so
// that the kubelet's SIGKILL never cuts a save; `taas run` waits a replica's grace period too.
inline constexpr std::string_view kTerminationGraceSecsEnv = "TAAS_TERMINATION_GRACE_SECS";
inline constexpr int kKubernetesTerminationGracePeriodSecs = 30;
// Predicting (`taas predict` sets them for the model's binary; docs/trainer-runtime.md "Predict"):
// the output file (.csv or .npy; set, the process predicts instead of taking its TF_CONFIG role),
// the input patterns (comma-separated), a checkpoint prefix (default: the model dir's newest that
// verifies) and the examples per batch.
inline constexpr std::string_view kPredictOutputEnv = "TAAS_PREDICT_OUTPUT";
inline constexpr std::string_view kPredictInputEnv = "TAAS_PREDICT_INPUT";
inline constexpr std::string_view kPredictCheckpointEnv = "TAAS_PREDICT_CHECKPOINT";
inline constexpr std::string_view kPredictBatchSizeEnv = "TAAS_PREDICT_BATCH_SIZE";
// Which (re)creation of its replica this pod or process is (taas/base/fence.h): the operator
// numbers each pod it creates for a replica above every pod of it it still sees (its
// taas.dev/replica-incarnation annotation, read through the downward API), the local launcher each
// start of a replica's process; the runtime names it in every connection, and its peers refuse an
// older incarnation than one they have seen. Unset: 0 (unnumbered).
inline constexpr std::string_view kReplicaIncarnationEnv = "TAAS_REPLICA_INCARNATION";
// The TFJob's name, for the replicas' log lines.
inline constexpr std::string_view kJobNameEnv = "TAAS_JOB_NAME";
// The port of the replica's Prometheus endpoint (ports.h).
inline constexpr std::string_view kMetricsPortEnv = "TAAS_METRICS_PORT";
// How the training replicas share their work, when a job overrides what TF_CONFIG implies (no
// `ps` means all-reduce); the UI's New-job form offers the same two words.
inline constexpr std::string_view kStrategyEnv = "TAAS_STRATEGY";
inline constexpr std::string_view kParameterServerStrategy = "parameter_server";
inline constexpr std::string_view kCollectiveStrategy = "collective";
// Threads of a replica's compute (0 or unset: the runtime chooses from the CPUs it may use); the
// local launcher gives each replica its share of the machine's cores through it.
inline constexpr std::string_view kComputeThreadsEnv = "TAAS_COMPUTE_THREADS";
// Where a replica computes: "cpu" or "cuda"; unset: the CUDA devices visible to the process when
// there are any (one model replica per GPU under all-reduce), else the CPU.
inline constexpr std::string_view kDeviceEnv = "TAAS_DEVICE";
// Where the chief leaves the job's report (taas/job_report/job_report.h) when training ended:
// the local launcher names a file per replica; unset, the runtime writes Kubernetes' default
// terminationMessagePath when it exists (in a pod), which the kubelet copies into the pod's status.
inline constexpr std::string_view kTerminationMessagePathEnv = "TAAS_TERMINATION_MESSAGE_PATH";
inline constexpr std::string_view kKubernetesTerminationMessagePath = "/dev/termination-log";
// The GPUs NVIDIA's device plugin gives a pod asking for nvidia.com/gpu: the NVIDIA container
// runtime reads it and exposes only those GPUs to the container, whose CUDA then enumerates them
// from 0 (the plugin does not set CUDA_VISIBLE_DEVICES). The runtime names it in messages.
inline constexpr std::string_view kNvidiaVisibleDevicesEnv = "NVIDIA_VISIBLE_DEVICES";
// Which of the GPUs the process sees CUDA itself enumerates, when someone sets it (the user, the
// local launcher, a bench): CUDA applies it; the runtime names it in messages.
inline constexpr std::string_view kCudaVisibleDevicesEnv = "CUDA_VISIBLE_DEVICES";
// OpenMP's wait policy, read once when the library loads: PASSIVE makes idle compute threads
// sleep instead of spinning on cores that other replicas share. The local launcher sets it for
// every replica that does not set it itself (in a pod the runtime sizes its threads to the pod's
// CPU limit, so no other replica shares those cores).
inline constexpr std::string_view kOmpWaitPolicyEnv = "OMP_WAIT_POLICY";
inline constexpr std::string_view kOmpWaitPolicyPassive = "PASSIVE";

}  // namespace taas::contract
