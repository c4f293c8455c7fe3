// The rows the UI API answers (rows.h), computed from what a JobSource gives (job_source.h): the
// job row from a TFJob and its replica rows, and the cluster page. Pure functions: no I/O, `now`
// is passed in, so each rule is tested on fixtures.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/tfjob/tfjob.h"
#include "taas/ui_server/job_source.h"
#include "taas/ui_server/rows.h"

namespace taas::ui_server {

// The extended resource GPUs are requested and counted by (NVIDIA's device plugin).
inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// A Kubernetes resource quantity ("500m", "2", "1.5Gi", "4e3") in base units (cores, bytes);
// std::nullopt when the text is not a quantity.
std::optional<double> ParseQuantity(std::string_view text);

// Seconds since the epoch of an RFC 3339 timestamp ("2026-11-22T00:40:00Z"), read by the TFJob
// library's parser (tfjob::ParseRfc3339); nullopt if malformed.
std::optional<std::int64_t> ParseTimestamp(std::string_view text);

// A quantity held as a JSON string ("8", "500m") or number, in base units; 0 for anything else,
// negative or not finite, and at most 1e18 (so sums and roundings stay finite and defined).
double QuantityOf(const nlohmann::json& value);

// A resource list ({"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}) in base units; a value
// that is not a quantity, negative or not finite counts 0, and each is at most 1e18.
Resources ResourcesOf(const nlohmann::json& list);

// What a pod (or a pod template) asks of its node: the sum of its containers' requests, where a
// missing request defaults to the limit (as the API server defaults it).
Resources PodRequests(const nlohmann::json& pod);

// GPUs requested by every replica of the job (replicas x nvidia.com/gpu of each template).
std::int64_t JobGpus(const tfjob::TFJobSpec& spec);

// A job's progress as the API shows it: the figures of `progress` plus the derived ones of the
// TFJob rules (percent, the ETA's text; taas/tfjob/progress.h).
ProgressRow ProgressRowOf(const tfjob::JobProgress& progress);

// The progress a TFJob's status says (the operator's), each figure it lacks taken from what the
// UI scraped itself (a local run, whose status has only the final metrics; an operator with
// progress off; the first interval before its first write). Once the status holds final
// metrics, training has ended: no scraped rate or time left is added. A stall is the scrape's
// (the fresher word; tfjob::ApplyStall): while it lasts, neither says a rate or a time left.
// nullopt when neither has one.
std::optional<tfjob::JobProgress> MergeProgress(std::optional<tfjob::JobProgress> status,
                                                const std::optional<tfjob::JobProgress>& scraped);

// The job row of a TFJob and its replica rows (JobRecord::replicas). `state` comes from the
// operator's conditions; `reason` explains it and names replica-level failures that a plain
// "Running" would hide; `replicas` counts them per type; `pods` holds the replica rows in the
// order shown: by type (in tfjob::ReplicaType order, as the spec's replica types iterate), then
// index; `progress` is the status's (ProgressRowOf).
JobRow JobRowOf(const tfjob::TFJob& job, std::vector<ReplicaRow> replicas, std::int64_t now);

// The same for a TFJob object as a source stores it (any JSON): read by the TFJob rules
// (taas::tfjob::TFJobFromJson), or, when they cannot read it, a row of state Invalid with their
// message as the reason (and its name, namespace and age, as far as they can be read).
JobRow JobRowOf(const nlohmann::json& tfjob, std::vector<ReplicaRow> replicas, std::int64_t now);

// The conditions of the job's status, as the operator wrote them.
std::vector<ConditionRow> ConditionRows(const tfjob::JobStatus& status);

// Largest allocatable cpu (cores), memory (bytes) and nvidia.com/gpu over Ready nodes, and the
// cluster's total allocatable GPUs: the bounds of a request that can ever be scheduled.
struct ClusterLimits {
  double max_node_cpu = 0;
  double max_node_memory = 0;
  std::int64_t max_node_gpus = 0;
  std::int64_t total_gpus = 0;
  int nodes = 0;
};
ClusterLimits LimitsOf(const std::vector<NodeUsage>& nodes);

struct GpuSlots {
  GpuAccess access = GpuAccess::kOpen;
  // Says so in words: "" when open, "usable only by pods that tolerate gpu=a100:NoSchedule" (each
  // taint, comma-separated), "cordoned: no new pods".
  std::string note;
};

// "key=value:Effect", or "key:Effect" for a taint without value.
std::string TaintText(const Taint& taint);

GpuSlots ClassifyGpuSlots(const NodeUsage& node);

// The cluster page as the API answers it: totals (GPUs also by who may take them), every node
// by name with its taints, GPU access and use, the pending replicas, and Kueue's queues (each
// ClusterQueue by name with the LocalQueues of the UI's namespaces that submit to it).
ClusterView ClusterViewOf(const ClusterPage& page);

}  // namespace taas::ui_server
