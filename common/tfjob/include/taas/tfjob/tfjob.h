// TFJob API types (kubeflow.org/v1), shared by the operator and the local launcher.
//
// Pure data: no I/O. The structs mirror Kubeflow's Go types field by field, with Kubeflow's
// defaults as member initialisers, so a parsed manifest is already defaulted except for the pod
// template port (see defaults.h). The pod template stays a verbatim nlohmann::json so fields this
// library does not model survive a round trip unchanged.
//
// Companion headers: rfc3339.h (timestamps), serialization.h (JSON/YAML), defaults.h,
// validation.h (field errors), labels.h (names, labels, selectors), restart.h (exit codes),
// status.h (conditions and job status), progress.h (status.progress), tf_config.h (TF_CONFIG),
// settings.h (settings the replicas must share).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taas::tfjob {

inline constexpr std::string_view kGroup = "kubeflow.org";
inline constexpr std::string_view kVersion = "v1";
inline constexpr std::string_view kApiVersion = "kubeflow.org/v1";  // kGroup/kVersion
inline constexpr std::string_view kKind = "TFJob";
inline constexpr std::string_view kPlural = "tfjobs";
static_assert(kApiVersion.substr(0, kGroup.size()) == kGroup &&
              kApiVersion.substr(kGroup.size() + 1) == kVersion);

// The REST paths of TFJobs on the API server: the collection of namespace `ns` (of every
// namespace when `ns` is empty), and one job.
std::string TFJobsPath(std::string_view ns);
std::string TFJobPath(std::string_view ns, std::string_view name);
// The container that receives TF_CONFIG and whose exit code decides restarts.
inline constexpr std::string_view kDefaultContainerName = "tensorflow";
inline constexpr std::string_view kDefaultPortName = "tfjob-port";
inline constexpr int kDefaultPort = 2222;

// Kubernetes timestamps have whole-second precision (metav1.Time).
using Time = std::chrono::sys_seconds;

// ---------------------------------------------------------------------------------------------
// Enumerations. Each has ToString (the exact API spelling) and a Parse function returning
// std::nullopt for anything else (case-sensitive, like the API server).

// The replica types of a TFJob. `kMaster` is accepted as a synonym of `kChief` (both are "the
// chief" for success, labels and validation) but keeps its own name in replica names and
// TF_CONFIG, as Kubeflow does.
enum class ReplicaType { kChief, kMaster, kPS, kWorker, kEvaluator };

// Kubeflow's iteration order for status computation: Chief, Evaluator, Master, PS, Worker.
inline constexpr ReplicaType kStatusOrder[] = {ReplicaType::kChief, ReplicaType::kEvaluator,
                                               ReplicaType::kMaster, ReplicaType::kPS,
                                               ReplicaType::kWorker};

// The spelling used as a key of `spec.tfReplicaSpecs` ("Chief", "Master", "PS", ...).
std::string_view ReplicaTypeName(ReplicaType type);

// The lower-case spelling used in replica names, labels and TF_CONFIG ("chief", "ps", ...).
std::string_view ReplicaTypeKey(ReplicaType type);

// Parses a `spec.tfReplicaSpecs` key exactly ("Worker"); std::nullopt for an unknown type.
std::optional<ReplicaType> ParseReplicaType(std::string_view name);

// Parses a key in any letter case ("worker", "WORKER"), as Kubeflow's defaulting normalises
// `tfReplicaSpecs` keys to camel case. Used by the manifest parser.
std::optional<ReplicaType> ParseReplicaTypeIgnoringCase(std::string_view name);

// True for Chief and Master.
bool IsChiefOrMaster(ReplicaType type);

enum class RestartPolicy { kNever, kOnFailure, kAlways, kExitCode };
enum class CleanPodPolicy { kNone, kRunning, kAll };
// kDefault is the empty string "" in the API.
enum class SuccessPolicy { kDefault, kAllWorkers };
// kStuck is a taas extension (not in Kubeflow): a replica has been Pending, or waiting on an image
// pull or a crash loop, for longer than allowed; its reason is the pod's reason.
enum class ConditionType {
  kCreated,
  kRunning,
  kRestarting,
  kSucceeded,
  kSuspended,
  kFailed,
  kStuck
};
enum class ConditionStatus { kTrue, kFalse, kUnknown };

std::string_view ToString(RestartPolicy policy);
std::string_view ToString(CleanPodPolicy policy);
std::string_view ToString(SuccessPolicy policy);
std::string_view ToString(ConditionType type);
std::string_view ToString(ConditionStatus status);

std::optional<RestartPolicy> ParseRestartPolicy(std::string_view text);
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view text);
std::optional<SuccessPolicy> ParseSuccessPolicy(std::string_view text);
std::optional<ConditionType> ParseConditionType(std::string_view text);
std::optional<ConditionStatus> ParseConditionStatus(std::string_view text);

// ---------------------------------------------------------------------------------------------
// metadata

struct ObjectMeta {
  std::string name;
  std::string namespace_name = "default";
  std::string uid;
  std::string resource_version;
  std::int64_t generation = 0;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  // Every other metadata field (ownerReferences, finalizers, managedFields, generateName, ...)
  // verbatim, so reading and writing an object from the API server loses nothing. An object.
  nlohmann::json other = nlohmann::json::object();

  bool operator==(const ObjectMeta&) const = default;
};

// ---------------------------------------------------------------------------------------------
// spec

struct ReplicaSpec {
  std::int32_t replicas = 1;
  RestartPolicy restart_policy = RestartPolicy::kNever;
  // A core/v1 PodTemplateSpec ({"metadata":..., "spec":{"containers":[...]}}), verbatim.
  nlohmann::json pod_template = nlohmann::json::object();

  bool operator==(const ReplicaSpec&) const = default;
};

// `runPolicy.managedBy` (Kubeflow 1.9): who reconciles a job. Absent or kManagedByTrainingOperator:
// this operator (as Kubeflow's training-operator); kManagedByMultiKueue: Kueue's MultiKueue, which
// runs the job on another cluster and mirrors its status here, so this operator must not touch it.
// Kubeflow accepts no other value (the CRD's enum says the same; crd_limits_test pins it).
inline constexpr std::string_view kManagedByTrainingOperator = "kubeflow.org/training-operator";
inline constexpr std::string_view kManagedByMultiKueue = "kueue.x-k8s.io/multikueue";
inline constexpr std::string_view kSupportedManagers[] = {kManagedByTrainingOperator,
                                                          kManagedByMultiKueue};

struct RunPolicy {
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kNone;
  std::optional<std::int32_t> ttl_seconds_after_finished;  // unset: never delete the job
  std::optional<std::int64_t> active_deadline_seconds;     // from status.startTime
  std::optional<std::int32_t> backoff_limit;               // restarts allowed before Failed
  bool suspend = false;
  // Kubeflow's SchedulingPolicy (minAvailable, queue, minResources, priorityClass,
  // scheduleTimeoutSeconds), verbatim; an object when set.
  std::optional<nlohmann::json> scheduling_policy;
  // The controller that reconciles the job (Kubeflow 1.9); unset means kManagedByTrainingOperator.
  // Immutable; see ManagedByOtherController.
  std::optional<std::string> managed_by;

  bool operator==(const RunPolicy&) const = default;
};

struct TFJobSpec {
  std::map<ReplicaType, ReplicaSpec> replica_specs;  // `tfReplicaSpecs`
  RunPolicy run_policy;
  SuccessPolicy success_policy = SuccessPolicy::kDefault;
  bool enable_dynamic_worker = false;

  bool operator==(const TFJobSpec&) const = default;
};

// ---------------------------------------------------------------------------------------------
// status

struct JobCondition {
  ConditionType type = ConditionType::kCreated;
  ConditionStatus status = ConditionStatus::kTrue;
  std::string reason;   // e.g. "TFJobRunning"
  std::string message;  // e.g. "TFJob default/mnist is running."
  std::optional<Time> last_update_time;
  std::optional<Time> last_transition_time;

  bool operator==(const JobCondition&) const = default;
};

struct ReplicaStatus {
  std::int32_t active = 0;     // running replicas
  std::int32_t succeeded = 0;  // replicas that exited successfully
  std::int32_t failed = 0;     // replicas that failed (including those being restarted)
  // Deprecated by Kubeflow in favour of `selector`, still written: {"matchLabels":{...}}.
  std::optional<nlohmann::json> label_selector;
  // "k1=v1,k2=v2": the pods of this replica type (labels.h).
  std::string selector;
  // taas extensions, written only when non-empty/non-zero so the JSON stays Kubeflow's otherwise:
  // indices that have succeeded (never run again, even when their pod disappears); every restart
  // of a replica of this type, counted for backoffLimit: the controller's (deleting and recreating
  // a replica) and the kubelet's in place (a container's restartCount going up); and, per index,
  // the restartCount last seen on the current pod, so each in-place restart is counted once.
  std::vector<int> succeeded_indexes;  // sorted, unique; JSON "succeededIndexes": [0, 2]
  std::int32_t restarts = 0;           // JSON "restarts"
  std::map<int, std::int32_t> container_restarts;  // JSON "containerRestarts": {"1": 3}; no zeros

  bool operator==(const ReplicaStatus&) const = default;
};

// status.progress, a taas extension: the job's training progress as its chief reports it (the
// field by field meaning, the derived fields and the rules: progress.h).
// A stalled job: a training replica has waited on a peer longer than its stall threshold
// (TAAS_STALL_SECS), as its metrics page says (contract::kStallSecondsMetric).
struct ProgressStall {
  std::int64_t seconds = 0;  // how long the longest such wait has lasted
  std::string waiting_on;    // whom it waits for: "ps-0" (at most kMaxProgressPeerBytes)

  bool operator==(const ProgressStall&) const = default;
};

struct JobProgress {
  std::optional<std::int64_t> global_step;
  std::optional<std::int64_t> max_steps;
  std::optional<double> examples_per_second;
  std::optional<std::int64_t> eta_seconds;
  std::map<std::string, double> metrics;        // latest, by name ("loss", "accuracy")
  std::map<std::string, double> final_metrics;  // the job's result, once training ended
  // Why the job has no result: its chief's evaluation failed (its report's error,
  // taas/job_report); empty otherwise. At most kMaxProgressErrorBytes (progress.h).
  std::string final_error;
  std::optional<ProgressStall> stall;  // while the job is stalled (ApplyStall, progress.h)
  std::optional<Time> update_time;     // when these were read from the trainer

  bool operator==(const JobProgress&) const = default;
};

struct JobStatus {
  std::vector<JobCondition> conditions;  // in the order they were first set
  std::map<ReplicaType, ReplicaStatus> replica_statuses;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::optional<Time> last_reconcile_time;
  std::optional<JobProgress> progress;  // JSON "progress"; absent until the operator read one

  bool operator==(const JobStatus&) const = default;
};

// ---------------------------------------------------------------------------------------------
// the object

struct TFJob {
  ObjectMeta metadata;
  TFJobSpec spec;
  JobStatus status;

  bool operator==(const TFJob&) const = default;
};

// "namespace/name", the key used in messages, logs and work queues.
std::string JobKey(const ObjectMeta& metadata);

// `{job}-{type}-{index}`: the name of a replica's pod and headless service (lower-case type).
std::string ReplicaName(std::string_view job_name, ReplicaType type, int index);

// The controller named by `spec.runPolicy.managedBy` of a TFJob object (raw JSON, read before
// parsing, so a job another controller manages is left alone even when this operator could not
// parse or validate it) when it is not this operator; std::nullopt when the field is absent,
// null, kManagedByTrainingOperator, or not a string (the parser reports that one).
std::optional<std::string> ManagedByOtherController(const nlohmann::json& object);

// True when this operator reconciles jobs with this `managedBy`.
bool IsSupportedManager(std::string_view manager);

// True when the spec has a Chief or a Master replica type (with any replica count).
bool HasChiefOrMaster(const TFJobSpec& spec);

// The sum of `replicas` over every replica type.
int TotalReplicas(const TFJobSpec& spec);

// The `tensorflow` container of a pod template (template.spec.containers[name=tensorflow]), or
// nullptr when there is none.
const nlohmann::json* FindDefaultContainer(const nlohmann::json& pod_template);

}  // namespace taas::tfjob
