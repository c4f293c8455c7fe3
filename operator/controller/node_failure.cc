#include "taas/controller/node_failure.h"

#include <algorithm>

#include "taas/base/json_fields.h"
#include "taas/tfjob/rfc3339.h"

namespace taas::controller {

namespace tf = taas::tfjob;
using nlohmann::json;
namespace fields = taas::json_fields;

namespace {

constexpr std::string_view kNotReady = "NotReady";
constexpr std::string_view kUnreachable = "unreachable";

// A node has a handful of taints; a hostile list is not walked further.
constexpr std::size_t kMaxTaintsRead = 64;
// Nor a hostile list of conditions (a kubelet writes about five).
constexpr std::size_t kMaxConditionsRead = 64;

std::optional<tf::Time> TimeField(const json& object, std::string_view key) {
  const std::optional<std::string> text = fields::String(object, key);
  if (!text) return std::nullopt;
  absl::StatusOr<tf::Time> parsed = tf::ParseRfc3339(*text);
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

void KeepEarliest(std::optional<tf::Time>& earliest, const std::optional<tf::Time>& candidate) {
  if (candidate && (!earliest || *candidate < *earliest)) earliest = candidate;
}

// The Ready condition, or nullptr.
const json* ReadyCondition(const json& node) {
  const json* status = fields::Object(node, "status");
  const json* conditions = status == nullptr ? nullptr : fields::Array(*status, "conditions");
  if (conditions == nullptr) return nullptr;
  std::size_t read = 0;
  for (const json& condition : *conditions) {
    if (++read > kMaxConditionsRead) break;
    if (fields::StringOr(condition, "type") == "Ready") return &condition;
  }
  return nullptr;
}

// The failure taints (kTaintNodeUnreachable, kTaintNodeNotReady), in the node's order.
std::vector<const json*> FailureTaints(const json& node) {
  std::vector<const json*> found;
  const json* spec = fields::Object(node, "spec");
  const json* taints = spec == nullptr ? nullptr : fields::Array(*spec, "taints");
  if (taints == nullptr) return found;
  std::size_t read = 0;
  for (const json& taint : *taints) {
    if (++read > kMaxTaintsRead) break;
    const std::string key = fields::StringOr(taint, "key");
    if (key == kTaintNodeUnreachable || key == kTaintNodeNotReady) found.push_back(&taint);
  }
  return found;
}

// The replica's short name in an Event: "worker-1".
std::string ShortReplicaName(const ObservedPod& pod) {
  if (!pod.replica) return pod.name;
  return std::string(tf::ReplicaTypeKey(pod.replica->type)) + "-" +
         std::to_string(pod.replica->index);
}

bool Active(const ObservedPod& pod) {
  if (!pod.replica) return false;
  switch (pod.replica->phase) {
    case tf::ReplicaPhase::kPending:
    case tf::ReplicaPhase::kRunning:
    case tf::ReplicaPhase::kUnknown:
      return true;
    case tf::ReplicaPhase::kSucceeded:
    case tf::ReplicaPhase::kFailed:
      return false;
  }
  return false;
}

}  // namespace

NodeHealth ObserveNode(const json& node) {
  NodeHealth health;
  if (const json* ready = ReadyCondition(node)) {
    const std::string status = fields::StringOr(*ready, "status");
    if (status == "False" || status == "Unknown") {
      health.failed = true;
      health.state = std::string(status == "False" ? kNotReady : kUnreachable);
      KeepEarliest(health.reported_since, TimeField(*ready, "lastTransitionTime"));
    }
  }
  for (const json* taint : FailureTaints(node)) {
    if (!health.failed) {
      health.failed = true;
      health.state = std::string(
          fields::StringOr(*taint, "key") == kTaintNodeUnreachable ? kUnreachable : kNotReady);
    }
    KeepEarliest(health.reported_since, TimeField(*taint, "timeAdded"));
  }
  return health;
}

void TrimCachedNode(json& node) {
  json metadata = json::object();
  if (const json* meta = fields::Object(node, "metadata")) {
    for (const char* key : {"name", "resourceVersion"}) {
      if (const json* value = fields::Find(*meta, key); value != nullptr && value->is_string())
        metadata[key] = *value;
    }
  }
  json out = {{"metadata", std::move(metadata)}};
  if (const json* ready = ReadyCondition(node)) {
    json kept = json::object();
    for (const char* key : {"type", "status", "lastTransitionTime"}) {
      if (const json* value = fields::Find(*ready, key)) kept[key] = *value;
    }
    out["status"] = {{"conditions", json::array({std::move(kept)})}};
  }
  json taints = json::array();
  for (const json* taint : FailureTaints(node)) {
    json kept = json::object();
    for (const char* key : {"key", "effect", "timeAdded"}) {
      if (const json* value = fields::Find(*taint, key)) kept[key] = *value;
    }
    taints.push_back(std::move(kept));
  }
  if (!taints.empty()) out["spec"] = {{"taints", std::move(taints)}};
  node = std::move(out);
}

std::optional<tf::Time> FailedSince(const NodeHealth& node, tf::Time now) {
  if (!node.failed) return std::nullopt;
  if (node.reported_since && *node.reported_since <= now) return node.reported_since;
  return node.seen_since;
}

NodeFailurePlan PlanNodeFailures(const std::map<std::string, NodeHealth>& nodes,
                                 const std::vector<ObservedPod>& pods, tf::Time now,
                                 std::chrono::seconds threshold) {
  NodeFailurePlan plan;
  if (threshold.count() <= 0) return plan;
  std::map<std::string, std::vector<std::string>> replaced;  // node -> replicas, in pod order
  std::map<std::string, std::string> why_by_node;
  for (const ObservedPod& pod : pods) {
    if (pod.node.empty() || !Active(pod)) continue;
    const auto node = nodes.find(pod.node);
    if (node == nodes.end()) continue;
    const std::optional<tf::Time> since = FailedSince(node->second, now);
    if (!since) continue;
    const tf::Time due = *since + threshold;
    if (now < due) {
      if (!plan.requeue_at || due < *plan.requeue_at) plan.requeue_at = due;
      continue;
    }
    auto [why, first] = why_by_node.try_emplace(pod.node);
    if (first) {
      why->second = "node " + pod.node + " " + node->second.state + " for " +
                    std::to_string((now - *since).count()) + "s";
    }
    plan.lost_pods[pod.uid] = why->second;
    // Deleted already (its Event posted): deleted forced again until the informer shows it gone,
    // so a forced deletion that failed is never retried gracefully, but not reported again.
    if (!pod.deleting) replaced[pod.node].push_back(ShortReplicaName(pod));
  }
  for (const auto& [node, replicas] : replaced) {
    std::string message = why_by_node[node] + ": replaced ";
    for (std::size_t i = 0; i < replicas.size(); ++i) {
      if (i > 0) message += ", ";
      message += replicas[i];
    }
    plan.events.push_back(std::move(message));
  }
  return plan;
}

}  // namespace taas::controller
