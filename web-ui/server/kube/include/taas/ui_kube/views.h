// The UI's rows computed from Kubernetes objects (TFJobs, pods, events, nodes): what the
// Kubernetes JobSource (kube_job_source.h) gives the API. Pure functions: no I/O, `now` is passed
// in, so each rule is tested on fixtures.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/tfjob/tfjob.h"
#include "taas/ui_server/job_source.h"
#include "taas/ui_server/views.h"

namespace taas::ui_kube {

// Whether `pod` was created for the TFJob named `job` (by the Kubeflow job-name labels or an
// owner reference of kind TFJob).
bool PodBelongsToJob(const nlohmann::json& pod, std::string_view job);

// The TFJob a pod was created for ("" when none), by the same labels and owner references.
std::string JobNameOfPod(const nlohmann::json& pod);

// One replica's pod as a replica row (ui_server::JobRecord::replicas). `reason` is the most
// telling container-level reason (OOMKilled, CrashLoopBackOff, ImagePullBackOff, Error...) or
// the scheduler's (Unschedulable).
ui_server::ReplicaRow PodView(const nlohmann::json& pod);

// The job row (ui_server::JobRowOf) of a TFJob object and its pods.
ui_server::JobRow JobView(const nlohmann::json& tfjob, const std::vector<nlohmann::json>& pods,
                          std::int64_t now);

// Events about the job or its pods, oldest first.
std::vector<ui_server::EventRow> EventsView(const nlohmann::json& event_list, std::string_view job,
                                            const std::vector<std::string>& pod_names);

// Whether a replica row (PodView) waits for a node: Pending and not yet bound.
bool ReplicaUnplaced(const ui_server::ReplicaRow& replica);

// Why a job waits ({reason, message, detail}, ui_server::JobDetail::waiting), from what
// Kubernetes says, first rule that applies:
// - suspended (spec.runPolicy.suspend) with a Kueue LocalQueue label: queued in that LocalQueue,
//   with the message of the Workload's QuotaReserved or Admitted condition that is not yet True
//   (the Workload owned by the TFJob, by name and uid, in `workloads`, a Kueue Workload list,
//   may be null);
// - suspended: suspended;
// - a replica not yet placed on a node and a PodGroup (`pod_group`, scheduler-plugins' or
//   Volcano's, may be null) with fewer than minMember pods placed and not scheduled: gang
//   incomplete;
// - a replica the scheduler could not place (PodScheduled False, Unschedulable): insufficient
//   GPUs when the scheduler says `Insufficient nvidia.com/gpu`, else its message.
// Unset for a finished job, when no replica waits for a node, or when nothing says why.
// `replicas` are PodView rows. Any field of the Kueue and PodGroup objects may hold any JSON type.
std::optional<ui_server::Waiting> WaitingOf(const tfjob::TFJob& job,
                                            const std::vector<ui_server::ReplicaRow>& replicas,
                                            const nlohmann::json& workloads,
                                            const nlohmann::json& pod_group);

// Every node of a node list, with its capacity and allocatable resources (nothing in use).
std::vector<ui_server::NodeUsage> NodesOf(const nlohmann::json& node_list);

// ui_server::LimitsOf the nodes of a node list.
ui_server::ClusterLimits ComputeClusterLimits(const nlohmann::json& node_list);

// The cluster page: `active_pods` are all pods not yet Succeeded/Failed in every namespace (what
// occupies nodes); `job_pods` are the pods of TFJobs in the UI's namespaces (for the pending
// list); `events` are FailedScheduling events.
ui_server::ClusterPage ClusterPageOf(const nlohmann::json& node_list,
                                     const nlohmann::json& active_pods,
                                     const std::vector<nlohmann::json>& job_pods,
                                     const nlohmann::json& events);
// Kueue's queues: ClusterQueues (a clusterqueues list) with their nvidia.com/gpu nominal quota,
// reservation and usage over every flavor, and workload counts; LocalQueues (a localqueues list)
// with the ClusterQueue each submits to.
ui_server::QueuesView QueuesOf(const nlohmann::json& cluster_queues,
                               const nlohmann::json& local_queues);

// ui_server::ClusterViewOf of ClusterPageOf.
ui_server::ClusterView ClusterView(const nlohmann::json& node_list,
                                   const nlohmann::json& active_pods,
                                   const std::vector<nlohmann::json>& job_pods,
                                   const nlohmann::json& events);

}  // namespace taas::ui_kube
