// The JSON views the UI API returns, computed from what a JobSource gives (job_source.h): the
// job row from a TFJob and its replica rows, and the cluster page. Pure functions: no I/O, `now`
// is passed in, so each rule is tested on fixtures.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/ui_server/job_source.h"

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

// GPUs requested by every replica of the TFJob (replicas x nvidia.com/gpu of the template).
std::int64_t JobGpus(const nlohmann::json& tfjob);

// A TFJob row: {namespace, name, created, ageSeconds, state, reason, replicas: [{type, ready,
// desired}], replicasText ("PS 1/1 · Worker 3/4"), restarts, gpus, pods}, from the TFJob and its
// replica rows (JobRecord::replicas). `state` is one of Pending, Created, Running, Restarting,
// Succeeded, Failed; `reason` explains it and names replica-level failures that a plain
// "Running" would hide; `severity` is ok, warning or error; `pods` are the replica rows in the
// order shown (by type, then index).
nlohmann::json JobRow(const nlohmann::json& tfjob, std::vector<nlohmann::json> replicas,
                      std::int64_t now);

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

// Who may be placed on a node's GPUs, as the scheduler sees it: any pod (open), only pods that
// tolerate every one of its NoSchedule/NoExecute taints (tainted), or no new pod (cordoned,
// whatever its taints).
enum class GpuAccess { kOpen, kTainted, kCordoned };

struct GpuSlots {
  GpuAccess access = GpuAccess::kOpen;
  // Says so in words: "" when open, "usable only by pods that tolerate gpu=a100:NoSchedule" (each
  // taint, comma-separated), "cordoned: no new pods".
  std::string note;
};

// "key=value:Effect", or "key:Effect" for a taint without value.
std::string TaintText(const Taint& taint);

GpuSlots ClassifyGpuSlots(const NodeUsage& node);

// "open", "tainted" or "cordoned".
std::string_view GpuAccessName(GpuAccess access);

// The cluster page: {totals: {capacity, allocatable, inUse: {cpu, memory, gpu}, nodes,
// gpuSlots: {open, tainted, cordoned: {allocatable, inUse}}}, nodes: [{name, ready,
// unschedulable, taints: ["k=v:Effect"], gpuAccess, gpuNote, capacity, allocatable, inUse, pods}]
// by name, pending: [{namespace, job, pod, gpus, reason, message}], queues: null or
// {clusterQueues: [{name, gpuQuota, gpuReserved, gpuInUse, pendingWorkloads, reservingWorkloads,
// admittedWorkloads, localQueues: ["ns/name"]}], localQueues: [{namespace, name, clusterQueue,
// pendingWorkloads, admittedWorkloads}], error}}.
nlohmann::json ClusterPageJson(const ClusterPage& page);

}  // namespace taas::ui_server
