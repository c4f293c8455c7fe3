// The JSON views the UI API returns, computed from Kubernetes objects (TFJobs, pods, events,
// nodes). Pure functions: no I/O, `now` is passed in, so each rule is tested on fixtures.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taas::ui_server {

// A Kubernetes resource quantity ("500m", "2", "1.5Gi", "4e3") in base units (cores, bytes);
// std::nullopt when the text is not a quantity.
std::optional<double> ParseQuantity(std::string_view text);

// Seconds since the epoch of an RFC 3339 timestamp ("2026-11-22T00:40:00Z"), read by the TFJob
// library's parser (tfjob::ParseRfc3339); nullopt if malformed.
std::optional<std::int64_t> ParseTimestamp(std::string_view text);

// Whether `pod` was created for the TFJob named `job` (by the Kubeflow job-name labels or an
// owner reference of kind TFJob).
bool PodBelongsToJob(const nlohmann::json& pod, std::string_view job);

// The TFJob a pod was created for ("" when none), by the same labels and owner references.
std::string JobNameOfPod(const nlohmann::json& pod);

// One replica's pod: {name, replicaType, index, node, phase, reason, message, ready, restarts,
// exitCode, gpus, startTime}. `reason` is the most telling container-level reason (OOMKilled,
// CrashLoopBackOff, ImagePullBackOff, Error...) or the scheduler's (Unschedulable).
nlohmann::json PodView(const nlohmann::json& pod);

// A TFJob row: {namespace, name, created, ageSeconds, state, reason, replicas: [{type, ready,
// desired}], replicasText ("PS 1/1 · Worker 3/4"), restarts, gpus, pods}. `state` is one of
// Pending, Created, Running, Restarting, Succeeded, Failed; `reason` explains it and names
// pod-level failures that a plain "Running" would hide; `severity` is ok, warning or error.
nlohmann::json JobView(const nlohmann::json& tfjob, const std::vector<nlohmann::json>& pods,
                       std::int64_t now);

// Events about the job or its pods, oldest first: {type, reason, message, object, count, time}.
nlohmann::json EventsView(const nlohmann::json& event_list, std::string_view job,
                          const std::vector<std::string>& pod_names);

// GPUs requested by every replica of the TFJob (replicas x nvidia.com/gpu of the template).
std::int64_t JobGpus(const nlohmann::json& tfjob);

// The cluster page: {totals: {cpu, memory, gpu} x {capacity, allocatable, inUse}, nodes: [...],
// pending: [{namespace, job, pod, reason, message}]}. `active_pods` are all pods not yet
// Succeeded/Failed in every namespace (what occupies nodes); `job_pods` are the pods of TFJobs in
// the UI's namespaces (for the pending list); `events` are FailedScheduling events.
nlohmann::json ClusterView(const nlohmann::json& node_list, const nlohmann::json& active_pods,
                           const std::vector<nlohmann::json>& job_pods,
                           const nlohmann::json& events);

// Largest allocatable cpu (cores), memory (bytes) and nvidia.com/gpu over Ready nodes, and the
// cluster's total allocatable GPUs: the bounds of a request that can ever be scheduled.
struct ClusterLimits {
  double max_node_cpu = 0;
  double max_node_memory = 0;
  std::int64_t max_node_gpus = 0;
  std::int64_t total_gpus = 0;
  int nodes = 0;
};
ClusterLimits ComputeClusterLimits(const nlohmann::json& node_list);

}  // namespace taas::ui_server
