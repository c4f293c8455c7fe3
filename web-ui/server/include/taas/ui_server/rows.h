// The rows of the UI's API: what the job seam (job_source.h) returns and what the API answers
// (docs/web-ui.md), as plain structs. Each has one field list (schema.h) that writes its JSON and
// the front end's TypeScript type (web-ui/src/api_types.ts, generated: api_types.h).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "taas/ui_server/schema.h"

namespace taas::ui_server {

// ---- a job and its replicas ----

// One replica of a job: a pod on Kubernetes, a process in a local run.
struct ReplicaRow {
  std::string name;          // "mnist-worker-1"
  std::string replica_type;  // lower case, as in replica names: "worker"
  int index = 0;
  std::string node;  // "" while not placed
  std::string phase;
  // The most telling reason (OOMKilled, CrashLoopBackOff, Unschedulable...) and its message.
  std::string reason;
  std::string message;
  bool ready = false;
  int restarts = 0;
  std::optional<int> exit_code = std::nullopt;  // the latest exit, when the replica exited
  std::int64_t gpus = 0;
  std::string start_time;  // RFC 3339, "" before it started
  // The devices its model replicas run on ("cuda:0 NVIDIA H100 80GB HBM3", "cpu"), as the
  // replica reported them; unset while unknown (the job page only: DeviceBook).
  std::optional<std::vector<std::string>> devices = std::nullopt;
};

// Replicas ready (running or done) over desired, for one replica type ("Worker").
struct ReplicaCount {
  std::string type;
  std::int64_t ready = 0;
  std::int64_t desired = 0;
};

// The job's state from the operator's conditions; kInvalid: the TFJob rules cannot read the job
// (so no operator runs it), the reason says why.
enum class JobState { kPending, kCreated, kRunning, kRestarting, kSucceeded, kFailed, kInvalid };
enum class Severity { kOk, kWarning, kError };

// A named figure of a job's result ("accuracy" 0.9087).
struct MetricValue {
  std::string name;
  double value = 0;
};

// A job's training progress (tfjob::JobProgress, read from the TFJob's status.progress, which the
// operator writes; what the status lacks, from the UI's own scrape: docs/web-ui.md, "Progress").
// A figure not known is unset.
struct ProgressRow {
  std::optional<std::int64_t> step = std::nullopt;  // the chief's global step
  std::optional<std::int64_t> max_steps = std::nullopt;
  std::optional<int> percent = std::nullopt;  // step / max_steps, rounded down, 0-100
  std::optional<double> examples_per_second = std::nullopt;
  std::optional<std::int64_t> eta_seconds = std::nullopt;
  std::string eta;                            // eta_seconds as read at a glance ("1m05s"), or ""
  std::optional<double> loss = std::nullopt;  // the latest
  std::optional<double> accuracy = std::nullopt;  // the latest evaluation's
  std::vector<MetricValue> final_metrics;         // by name; none until training ended
  std::string final_error;  // why there are none: the chief's final evaluation failed, or ""
  // "stalled 12s, waiting on ps-0" while a training replica waits on a peer too long
  // (tfjob::DescribeStall; the rate and the ETA are unknown then), or ""
  std::string stall;
  std::string updated;  // RFC 3339: when read from the trainer, or ""
};

struct JobRow {
  std::string namespace_name;
  std::string name;
  std::string created;  // RFC 3339
  std::int64_t age_seconds = 0;
  JobState state = JobState::kPending;
  // Explains the state, and names replica-level trouble a plain "Running" would hide.
  std::string reason;
  Severity severity = Severity::kOk;
  std::vector<ReplicaCount> replicas;  // per replica type, in tfjob::ReplicaType order
  std::string replicas_text;           // "PS 1/1 · Worker 3/4"
  std::int64_t restarts = 0;
  std::int64_t gpus = 0;
  std::optional<ProgressRow> progress = std::nullopt;  // unset while nothing is known
  // The replica rows in the order shown (by type, then index); the job page only.
  std::optional<std::vector<ReplicaRow>> pods = std::nullopt;
};

// An event about the job or one of its replicas.
struct EventRow {
  std::string type;  // Normal or Warning
  std::string reason;
  std::string message;
  std::string object;  // "Pod/mnist-worker-0"
  int count = 1;
  std::string time;  // RFC 3339
};

// Why a job waits (docs/web-ui.md, "Why a job waits").
enum class WaitingReason {
  kQueued,
  kSuspended,
  kGangIncomplete,
  kInsufficientGpus,
  kUnschedulable
};

struct Waiting {
  WaitingReason reason = WaitingReason::kUnschedulable;
  std::string message;
  std::string detail;
};

// A condition of the TFJob's status, as the operator wrote it.
struct ConditionRow {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  std::optional<std::string> last_transition_time = std::nullopt;
  std::optional<std::string> last_update_time = std::nullopt;
};

// ---- the cluster page ----

// CPU cores, memory bytes, whole GPUs.
struct ResourceAmounts {
  double cpu = 0;
  double memory = 0;
  std::int64_t gpu = 0;
};

struct GpuCount {
  std::int64_t allocatable = 0;
  std::int64_t in_use = 0;
};

// Who may be placed on a node's GPUs, as the scheduler sees it: any pod (open), only pods that
// tolerate every one of its NoSchedule/NoExecute taints (tainted), or no new pod (cordoned,
// whatever its taints).
enum class GpuAccess { kOpen, kTainted, kCordoned };

// The cluster's GPUs by who may take them.
struct GpuSlotCounts {
  GpuCount open;
  GpuCount tainted;
  GpuCount cordoned;
};

struct ClusterTotals {
  ResourceAmounts capacity;
  ResourceAmounts allocatable;
  ResourceAmounts in_use;
  std::int64_t nodes = 0;
  GpuSlotCounts gpu_slots;
};

struct NodeRow {
  std::string name;
  bool ready = false;
  bool unschedulable = false;
  std::vector<std::string> taints;  // "key=value:Effect"
  GpuAccess gpu_access = GpuAccess::kOpen;
  std::string gpu_note;  // gpu_access in words
  ResourceAmounts capacity;
  ResourceAmounts allocatable;
  ResourceAmounts in_use;
  std::int64_t pods = 0;
};

struct PendingRow {
  std::string namespace_name;
  std::string job;
  std::string pod;
  std::int64_t gpus = 0;
  std::string reason;
  std::string message;
};

// A queue of a quota system (Kueue's ClusterQueue): its GPU quota, the GPUs of the workloads it
// admitted or reserved quota for, and how many workloads wait in it.
struct ClusterQueueRow {
  std::string name;
  std::int64_t gpu_quota = 0;     // nominal quota, over every flavor
  std::int64_t gpu_reserved = 0;  // held by workloads with reserved quota
  std::int64_t gpu_in_use = 0;    // held by admitted workloads
  std::int64_t pending_workloads = 0;
  std::int64_t reserving_workloads = 0;
  std::int64_t admitted_workloads = 0;
  std::vector<std::string> local_queues = {};  // "namespace/name" of the UI's namespaces
};

// A namespace's queue (Kueue's LocalQueue) and the ClusterQueue it submits to.
struct LocalQueueRow {
  std::string namespace_name;
  std::string name;
  std::string cluster_queue;
  std::int64_t pending_workloads = 0;
  std::int64_t admitted_workloads = 0;
};

// Kueue's queues.
struct QueuesView {
  std::vector<ClusterQueueRow> cluster_queues;  // by name
  std::vector<LocalQueueRow> local_queues;
  std::string error;  // why they could not all be read
};

struct ClusterView {
  ClusterTotals totals;
  std::vector<NodeRow> nodes;  // by name
  std::vector<PendingRow> pending;
  std::optional<QueuesView> queues = std::nullopt;  // unset without Kueue
};

// ---- errors ----

// A problem with one field: `field` names it in the TFJob (as the API server names fields),
// `form_key` the New-job form's input it belongs to, when one does (job_form.h FormKeyOf).
struct FieldError {
  std::string field;
  std::string message;
  std::optional<std::string> form_key = std::nullopt;
};

// Every error answer: the first problem's message and fields, and all of them when several.
struct ErrorAnswer {
  std::string error;
  std::optional<std::string> field = std::nullopt;
  std::optional<std::string> form_key = std::nullopt;
  std::optional<std::vector<FieldError>> errors = std::nullopt;
};

// ---- answers ----

struct ConfigAnswer {
  std::vector<std::string> namespaces;
  bool read_only = false;
  bool local_run = false;  // served by `taas run` for its one job
  std::string version;
};

struct JobListAnswer {
  std::vector<JobRow> items;  // newest first
  std::int64_t total = 0;
  bool truncated = false;
};

struct JobDetailAnswer {
  JobRow job;            // with its pods
  nlohmann::json tfjob;  // the TFJob as stored
  std::vector<ConditionRow> conditions;
  std::vector<EventRow> events;  // oldest first
  std::optional<Waiting> waiting = std::nullopt;
};

// A dry run (the form's preview): the TFJob built, null when the form or the TFJob rules refuse
// it, and every problem found (none when the API server accepts it).
struct DryRunAnswer {
  std::optional<nlohmann::json> tfjob = std::nullopt;
  std::vector<FieldError> errors;
};

struct CreatedAnswer {
  nlohmann::json tfjob;
  std::optional<std::string> name = std::nullopt;  // a clone's name
};

struct DeletedAnswer {
  std::string deleted;
  std::string namespace_name;
};

}  // namespace taas::ui_server

// ---- the field lists ----

namespace taas::ui_server::schema {

TAAS_SCHEMA_ENUM(JobState, Spelled(JobState::kPending, "Pending"),
                 Spelled(JobState::kCreated, "Created"), Spelled(JobState::kRunning, "Running"),
                 Spelled(JobState::kRestarting, "Restarting"),
                 Spelled(JobState::kSucceeded, "Succeeded"), Spelled(JobState::kFailed, "Failed"),
                 Spelled(JobState::kInvalid, "Invalid"));
TAAS_SCHEMA_ENUM(Severity, Spelled(Severity::kOk, "ok"), Spelled(Severity::kWarning, "warning"),
                 Spelled(Severity::kError, "error"));
TAAS_SCHEMA_ENUM(WaitingReason, Spelled(WaitingReason::kQueued, "queued"),
                 Spelled(WaitingReason::kSuspended, "suspended"),
                 Spelled(WaitingReason::kGangIncomplete, "gangIncomplete"),
                 Spelled(WaitingReason::kInsufficientGpus, "insufficientGpus"),
                 Spelled(WaitingReason::kUnschedulable, "unschedulable"));
TAAS_SCHEMA_ENUM(GpuAccess, Spelled(GpuAccess::kOpen, "open"),
                 Spelled(GpuAccess::kTainted, "tainted"),
                 Spelled(GpuAccess::kCordoned, "cordoned"));

TAAS_SCHEMA_ROW(ReplicaRow, Field("name", &ReplicaRow::name),
                Field("replicaType", &ReplicaRow::replica_type), Field("index", &ReplicaRow::index),
                Field("node", &ReplicaRow::node), Field("phase", &ReplicaRow::phase),
                Field("reason", &ReplicaRow::reason), Field("message", &ReplicaRow::message),
                Field("ready", &ReplicaRow::ready), Field("restarts", &ReplicaRow::restarts),
                Field("exitCode", &ReplicaRow::exit_code), Field("gpus", &ReplicaRow::gpus),
                Field("startTime", &ReplicaRow::start_time),
                Field("devices", &ReplicaRow::devices));
TAAS_SCHEMA_ROW(ReplicaCount, Field("type", &ReplicaCount::type),
                Field("ready", &ReplicaCount::ready), Field("desired", &ReplicaCount::desired));
TAAS_SCHEMA_ROW(MetricValue, Field("name", &MetricValue::name),
                Field("value", &MetricValue::value));
TAAS_SCHEMA_ROW(ProgressRow, Field("step", &ProgressRow::step),
                Field("maxSteps", &ProgressRow::max_steps), Field("percent", &ProgressRow::percent),
                Field("examplesPerSecond", &ProgressRow::examples_per_second),
                Field("etaSeconds", &ProgressRow::eta_seconds), Field("eta", &ProgressRow::eta),
                Field("loss", &ProgressRow::loss), Field("accuracy", &ProgressRow::accuracy),
                Field("finalMetrics", &ProgressRow::final_metrics),
                Field("finalError", &ProgressRow::final_error), Field("stall", &ProgressRow::stall),
                Field("updated", &ProgressRow::updated));
TAAS_SCHEMA_ROW(JobRow, Field("namespace", &JobRow::namespace_name), Field("name", &JobRow::name),
                Field("created", &JobRow::created), Field("ageSeconds", &JobRow::age_seconds),
                Field("state", &JobRow::state), Field("reason", &JobRow::reason),
                Field("severity", &JobRow::severity), Field("replicas", &JobRow::replicas),
                Field("replicasText", &JobRow::replicas_text), Field("restarts", &JobRow::restarts),
                Field("gpus", &JobRow::gpus), Field("progress", &JobRow::progress),
                Field("pods", &JobRow::pods, Unset::kOmit));
TAAS_SCHEMA_ROW(EventRow, Field("type", &EventRow::type), Field("reason", &EventRow::reason),
                Field("message", &EventRow::message), Field("object", &EventRow::object),
                Field("count", &EventRow::count), Field("time", &EventRow::time));
TAAS_SCHEMA_ROW(Waiting, Field("reason", &Waiting::reason), Field("message", &Waiting::message),
                Field("detail", &Waiting::detail));
TAAS_SCHEMA_ROW(ConditionRow, Field("type", &ConditionRow::type),
                Field("status", &ConditionRow::status), Field("reason", &ConditionRow::reason),
                Field("message", &ConditionRow::message),
                Field("lastTransitionTime", &ConditionRow::last_transition_time),
                Field("lastUpdateTime", &ConditionRow::last_update_time));

TAAS_SCHEMA_ROW(ResourceAmounts, Field("cpu", &ResourceAmounts::cpu),
                Field("memory", &ResourceAmounts::memory), Field("gpu", &ResourceAmounts::gpu));
TAAS_SCHEMA_ROW(GpuCount, Field("allocatable", &GpuCount::allocatable),
                Field("inUse", &GpuCount::in_use));
TAAS_SCHEMA_ROW(GpuSlotCounts, Field("open", &GpuSlotCounts::open),
                Field("tainted", &GpuSlotCounts::tainted),
                Field("cordoned", &GpuSlotCounts::cordoned));
TAAS_SCHEMA_ROW(ClusterTotals, Field("capacity", &ClusterTotals::capacity),
                Field("allocatable", &ClusterTotals::allocatable),
                Field("inUse", &ClusterTotals::in_use), Field("nodes", &ClusterTotals::nodes),
                Field("gpuSlots", &ClusterTotals::gpu_slots));
TAAS_SCHEMA_ROW(NodeRow, Field("name", &NodeRow::name), Field("ready", &NodeRow::ready),
                Field("unschedulable", &NodeRow::unschedulable), Field("taints", &NodeRow::taints),
                Field("gpuAccess", &NodeRow::gpu_access), Field("gpuNote", &NodeRow::gpu_note),
                Field("capacity", &NodeRow::capacity), Field("allocatable", &NodeRow::allocatable),
                Field("inUse", &NodeRow::in_use), Field("pods", &NodeRow::pods));
TAAS_SCHEMA_ROW(PendingRow, Field("namespace", &PendingRow::namespace_name),
                Field("job", &PendingRow::job), Field("pod", &PendingRow::pod),
                Field("gpus", &PendingRow::gpus), Field("reason", &PendingRow::reason),
                Field("message", &PendingRow::message));
TAAS_SCHEMA_ROW(ClusterQueueRow, Field("name", &ClusterQueueRow::name),
                Field("gpuQuota", &ClusterQueueRow::gpu_quota),
                Field("gpuReserved", &ClusterQueueRow::gpu_reserved),
                Field("gpuInUse", &ClusterQueueRow::gpu_in_use),
                Field("pendingWorkloads", &ClusterQueueRow::pending_workloads),
                Field("reservingWorkloads", &ClusterQueueRow::reserving_workloads),
                Field("admittedWorkloads", &ClusterQueueRow::admitted_workloads),
                Field("localQueues", &ClusterQueueRow::local_queues));
TAAS_SCHEMA_ROW(LocalQueueRow, Field("namespace", &LocalQueueRow::namespace_name),
                Field("name", &LocalQueueRow::name),
                Field("clusterQueue", &LocalQueueRow::cluster_queue),
                Field("pendingWorkloads", &LocalQueueRow::pending_workloads),
                Field("admittedWorkloads", &LocalQueueRow::admitted_workloads));
TAAS_SCHEMA_ROW(QueuesView, Field("clusterQueues", &QueuesView::cluster_queues),
                Field("localQueues", &QueuesView::local_queues),
                Field("error", &QueuesView::error));
TAAS_SCHEMA_ROW(ClusterView, Field("totals", &ClusterView::totals),
                Field("nodes", &ClusterView::nodes), Field("pending", &ClusterView::pending),
                Field("queues", &ClusterView::queues));

TAAS_SCHEMA_ROW(FieldError, Field("field", &FieldError::field),
                Field("message", &FieldError::message),
                Field("formKey", &FieldError::form_key, Unset::kOmit, "FormKey"));
TAAS_SCHEMA_ROW(ErrorAnswer, Field("error", &ErrorAnswer::error),
                Field("field", &ErrorAnswer::field, Unset::kOmit),
                Field("formKey", &ErrorAnswer::form_key, Unset::kOmit, "FormKey"),
                Field("errors", &ErrorAnswer::errors, Unset::kOmit));

TAAS_SCHEMA_ROW(ConfigAnswer, Field("namespaces", &ConfigAnswer::namespaces),
                Field("readOnly", &ConfigAnswer::read_only),
                Field("localRun", &ConfigAnswer::local_run),
                Field("version", &ConfigAnswer::version));
TAAS_SCHEMA_ROW(JobListAnswer, Field("items", &JobListAnswer::items),
                Field("total", &JobListAnswer::total),
                Field("truncated", &JobListAnswer::truncated));
TAAS_SCHEMA_ROW(JobDetailAnswer, Field("job", &JobDetailAnswer::job),
                Field("tfjob", &JobDetailAnswer::tfjob),
                Field("conditions", &JobDetailAnswer::conditions),
                Field("events", &JobDetailAnswer::events),
                Field("waiting", &JobDetailAnswer::waiting));
TAAS_SCHEMA_ROW(DryRunAnswer, Field("tfjob", &DryRunAnswer::tfjob),
                Field("errors", &DryRunAnswer::errors));
TAAS_SCHEMA_ROW(CreatedAnswer, Field("tfjob", &CreatedAnswer::tfjob),
                Field("name", &CreatedAnswer::name, Unset::kOmit));
TAAS_SCHEMA_ROW(DeletedAnswer, Field("deleted", &DeletedAnswer::deleted),
                Field("namespace", &DeletedAnswer::namespace_name));

}  // namespace taas::ui_server::schema
