// Node failure: a job's pods on a node that has been NotReady or unreachable for too long are
// replaced elsewhere instead of waiting for Kubernetes' own eviction (the 300 s toleration of
// node.kubernetes.io/unreachable that every pod gets by default). Pure: the controller observes
// nodes (ObserveNode, on its node informer's objects), decides here which pods to replace
// (PlanNodeFailures), and acts (force deletions; the reconcile then recreates the replicas).
// docs/operator.md, "Node failure", says what was chosen and why.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/controller/plan.h"
#include "taas/tfjob/tfjob.h"

namespace taas::controller {

// The taints the node lifecycle controller puts on a node whose Ready condition is Unknown (its
// kubelet stopped reporting) or False.
inline constexpr std::string_view kTaintNodeUnreachable = "node.kubernetes.io/unreachable";
inline constexpr std::string_view kTaintNodeNotReady = "node.kubernetes.io/not-ready";
// The reason of the Warning Event that names a failed node and the replicas replaced.
inline constexpr std::string_view kReasonNodeFailure = "NodeFailure";

// What the operator reads of a node.
struct NodeHealth {
  // Ready is False or Unknown, or the node carries kTaintNodeUnreachable or kTaintNodeNotReady.
  bool failed = false;
  // How the failure reads in an Event: "NotReady" (Ready False, the not-ready taint) or
  // "unreachable" (Ready Unknown, the unreachable taint); empty while not failed.
  std::string state;
  // Since when the node says it failed: the earliest of the failed Ready condition's
  // lastTransitionTime and those taints' timeAdded; std::nullopt when none is a valid time. Set
  // by the node lifecycle controller or the kubelet, on the control plane's clock.
  std::optional<taas::tfjob::Time> reported_since;
  // When this operator first saw the node failed, on its own clock (the controller keeps it).
  std::optional<taas::tfjob::Time> seen_since;
};

// A Node object as NodeHealth (seen_since left empty). Any JSON type in any field is tolerated:
// what cannot be read counts as not said (a node with no readable Ready condition and no such
// taint is not failed).
NodeHealth ObserveNode(const nlohmann::json& node);

// What the operator's node cache keeps of a Node: its metadata's name and resourceVersion, the
// Ready condition (type, status, lastTransitionTime) and the two taints above (key, effect,
// timeAdded); ObserveNode(node) == ObserveNode(trimmed). A heartbeat alone (lastHeartbeatTime)
// changes nothing kept.
void TrimCachedNode(nlohmann::json& node);

// Since when a failed node counts as failed: its reported_since unless that is missing or ahead
// of `now` (another clock, or a hostile value), else seen_since. So an operator that restarts
// does not wait a whole threshold again, and no clock ahead of the operator's shortens the wait.
std::optional<taas::tfjob::Time> FailedSince(const NodeHealth& node, taas::tfjob::Time now);

// Replicas of one job to replace because their node failed.
struct NodeFailurePlan {
  // Pods to delete now, forced (a failed node's kubelet cannot confirm the end), each with why:
  // "node n1 NotReady for 61s". They are no failure and no restart (Observation::lost_pods).
  std::map<std::string, std::string> lost_pods;  // uid -> why
  // One message per failed node with pods replaced, for an Event (kReasonNodeFailure):
  // "node n1 NotReady for 61s: replaced worker-1, ps-0".
  std::vector<std::string> events;
  // When a failed node with pods of the job reaches the threshold: reconcile again then.
  std::optional<taas::tfjob::Time> requeue_at;
};

// Which of a job's `pods` to replace: every Pending, Running or Unknown pod (a finished one stays
// as it ended) on a node of `nodes` (by name; a node missing there is not failed) that has
// failed for at least `threshold` (FailedSince). A pod already terminating is replaced too: only
// a forced deletion ends it on a node that cannot confirm. A pod this controller already deletes
// (ObservedPod::deleting) stays in lost_pods, so its deletion stays forced, but in no event.
// `threshold` zero: nothing (the feature is off). Pure.
NodeFailurePlan PlanNodeFailures(const std::map<std::string, NodeHealth>& nodes,
                                 const std::vector<ObservedPod>& pods, taas::tfjob::Time now,
                                 std::chrono::seconds threshold);

}  // namespace taas::controller
