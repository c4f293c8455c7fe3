// The UI's rows computed from Kubernetes objects (TFJobs, pods, events, nodes): what the
// Kubernetes JobSource (kube_job_source.h) gives the API. Pure functions: no I/O, `now` is passed
// in, so each rule is tested on fixtures.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

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
nlohmann::json PodView(const nlohmann::json& pod);

// The job row (ui_server::JobRow) of a TFJob and its pods.
nlohmann::json JobView(const nlohmann::json& tfjob, const std::vector<nlohmann::json>& pods,
                       std::int64_t now);

// Events about the job or its pods, oldest first: {type, reason, message, object, count, time}.
nlohmann::json EventsView(const nlohmann::json& event_list, std::string_view job,
                          const std::vector<std::string>& pod_names);

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
// ui_server::ClusterPageJson of ClusterPageOf.
nlohmann::json ClusterView(const nlohmann::json& node_list, const nlohmann::json& active_pods,
                           const std::vector<nlohmann::json>& job_pods,
                           const nlohmann::json& events);

}  // namespace taas::ui_kube
