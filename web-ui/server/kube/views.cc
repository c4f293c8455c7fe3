#include "taas/ui_kube/views.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

#include "taas/base/ascii.h"
#include "taas/base/json_fields.h"
#include "taas/tfjob/labels.h"
#include "taas/ui_server/views.h"

namespace taas::ui_kube {

using ui_server::ClusterLimits;
using ui_server::ClusterPage;
using ui_server::NodeUsage;
using ui_server::ParseTimestamp;
using ui_server::PendingReplica;
using ui_server::PodRequests;
using ui_server::Resources;
using ui_server::ResourcesOf;
namespace {

using nlohmann::json;

// A whole number in a label ("3"), clamped to int; 0 when it is not one.
int LabelNumber(const std::string& text) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return 0;
  }
  return std::stoi(text);
}

// An integer field as int, clamped (a count such as restartCount); `fallback` when absent or of
// another type.
int IntField(const json& object, std::string_view key, int fallback) {
  const auto value = json_fields::Int(object, key);
  if (!value) return fallback;
  return static_cast<int>(std::clamp<std::int64_t>(*value, -1000000000, 1000000000));
}

const json& Items(const json& list) {
  static const json kEmpty = json::array();  // NOLINT: immutable.
  const json& items = json_fields::MemberOrNull(list, "items");
  return items.is_array() ? items : kEmpty;
}

std::string Label(const json& object, std::initializer_list<std::string_view> keys) {
  const json& labels =
      json_fields::MemberOrNull(json_fields::MemberOrNull(object, "metadata"), "labels");
  for (std::string_view key : keys) {
    std::string value = json_fields::StringOr(labels, key);
    if (!value.empty()) return value;
  }
  return "";
}

bool IsPodScheduledFalse(const json& pod, std::string* reason, std::string* message) {
  const json& conditions =
      json_fields::MemberOrNull(json_fields::MemberOrNull(pod, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (json_fields::StringOr(c, "type") == "PodScheduled" &&
        json_fields::StringOr(c, "status") == "False") {
      *reason = json_fields::StringOr(c, "reason");
      *message = json_fields::StringOr(c, "message");
      return true;
    }
  }
  return false;
}

bool NodeReady(const json& node) {
  const json& conditions =
      json_fields::MemberOrNull(json_fields::MemberOrNull(node, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (json_fields::StringOr(c, "type") == "Ready")
      return json_fields::StringOr(c, "status") == "True";
  }
  return false;
}

bool NodeCordoned(const json& node) {
  const json& unschedulable =
      json_fields::MemberOrNull(json_fields::MemberOrNull(node, "spec"), "unschedulable");
  return unschedulable.is_boolean() && unschedulable.get<bool>();
}

// The NoSchedule and NoExecute taints of a node, at most kMaxTaints (a node has a handful).
std::vector<ui_server::Taint> TaintsOf(const json& node) {
  constexpr std::size_t kMaxTaints = 32;
  std::vector<ui_server::Taint> taints;
  const json& list = json_fields::MemberOrNull(json_fields::MemberOrNull(node, "spec"), "taints");
  if (!list.is_array()) return taints;
  for (const json& t : list) {
    ui_server::Taint taint{json_fields::StringOr(t, "key"), json_fields::StringOr(t, "value"),
                           json_fields::StringOr(t, "effect")};
    if (taint.key.empty() || (taint.effect != "NoSchedule" && taint.effect != "NoExecute")) {
      continue;
    }
    if (taints.size() == kMaxTaints) break;
    taints.push_back(std::move(taint));
  }
  return taints;
}

// A count in an object's field (pendingWorkloads...), 0 when absent, of another type or negative.
std::int64_t CountField(const json& object, std::string_view key) {
  return std::clamp<std::int64_t>(json_fields::Int(object, key).value_or(0), 0, 1000000000);
}

// The nvidia.com/gpu quantity over every flavor of a Kueue flavors list
// ([{name, resources: [{name, <field>}]}]).
double GpuOverFlavors(const json& flavors, std::string_view field) {
  double total = 0;
  if (!flavors.is_array()) return 0;
  for (const json& flavor : flavors) {
    const json& resources = json_fields::MemberOrNull(flavor, "resources");
    if (!resources.is_array()) continue;
    for (const json& r : resources) {
      if (json_fields::StringOr(r, "name") == ui_server::kGpuResource) {
        total += ui_server::QuantityOf(json_fields::MemberOrNull(r, field));
      }
    }
  }
  return std::min(total, 1e18);
}

// The Workload that Kueue made for the TFJob (owned by it: kind, name and, when both are known,
// uid, so that a Workload left from an earlier job of the same name is not taken), or null.
const json& WorkloadOf(const json& workloads, const tfjob::ObjectMeta& tfjob_metadata) {
  static const json kNull;  // NOLINT: immutable.
  const std::string& job = tfjob_metadata.name;
  const std::string& uid = tfjob_metadata.uid;
  for (const json& w : Items(workloads)) {
    const json& owners =
        json_fields::MemberOrNull(json_fields::MemberOrNull(w, "metadata"), "ownerReferences");
    if (!owners.is_array()) continue;
    for (const json& owner : owners) {
      const std::string owner_uid = json_fields::StringOr(owner, "uid");
      if (json_fields::StringOr(owner, "kind") == tfjob::kKind &&
          json_fields::StringOr(owner, "name") == job &&
          (uid.empty() || owner_uid.empty() || owner_uid == uid)) {
        return w;
      }
    }
  }
  return kNull;
}

// The message of the first condition of `types` that is not True ("" when none says more).
std::string PendingConditionMessage(const json& object,
                                    std::initializer_list<std::string_view> types) {
  const json& conditions =
      json_fields::MemberOrNull(json_fields::MemberOrNull(object, "status"), "conditions");
  if (!conditions.is_array()) return "";
  for (std::string_view type : types) {
    for (const json& c : conditions) {
      if (json_fields::StringOr(c, "type") == type &&
          json_fields::StringOr(c, "status") != "True") {
        return json_fields::StringOr(c, "message");
      }
    }
  }
  return "";
}

// Whether a PodGroup says its gang is not (yet) scheduled: Volcano's Unschedulable condition, or
// a phase before Scheduled/Running in either scheduler's vocabulary.
bool GangNotScheduled(const json& pod_group, std::string* message) {
  const json& status = json_fields::MemberOrNull(pod_group, "status");
  const json& conditions = json_fields::MemberOrNull(status, "conditions");
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (json_fields::StringOr(c, "type") == "Unschedulable" &&
          json_fields::StringOr(c, "status") == "True") {
        *message = json_fields::StringOr(c, "message");
        return true;
      }
    }
  }
  const std::string phase = json_fields::StringOr(status, "phase");
  return phase.empty() || phase == "Pending" || phase == "Inqueue" || phase == "PreScheduling" ||
         phase == "Scheduling" || phase == "Unknown";
}

bool SaysInsufficientGpus(std::string_view message) {
  return message.find("Insufficient " + std::string(ui_server::kGpuResource)) != std::string::npos;
}

// A pod's replica type and index: from its labels, else from its `{job}-{type}-{index}` name.
std::pair<std::string, std::string> ReplicaOfPod(const json& pod) {
  std::string type = Label(pod, {tfjob::kLabelReplicaType, tfjob::kLegacyLabelReplicaType,
                                 tfjob::kLegacyLabelTfReplicaType});
  std::string index = Label(pod, {tfjob::kLabelReplicaIndex, tfjob::kLegacyLabelReplicaIndex,
                                  tfjob::kLegacyLabelTfReplicaIndex});
  if (type.empty() || index.empty()) {
    const std::string name =
        json_fields::StringOr(json_fields::MemberOrNull(pod, "metadata"), "name");
    const auto last = name.rfind('-');
    const auto previous =
        last == std::string::npos || last == 0 ? std::string::npos : name.rfind('-', last - 1);
    if (previous != std::string::npos) {
      type = name.substr(previous + 1, last - previous - 1);
      index = name.substr(last + 1);
    }
  }
  return {type, index};
}

// What a pod's container statuses say: the most telling reason and its message, readiness,
// restarts and the latest exit code (null when none exited).
struct ContainerSummary {
  std::string reason;
  std::string message;
  bool ready = false;
  int restarts = 0;
  std::optional<int> exit_code;
};

ContainerSummary SummarizeContainers(const json& status, bool running) {
  ContainerSummary out{json_fields::StringOr(status, "reason"),
                       json_fields::StringOr(status, "message"), running, 0, std::nullopt};
  const json& containers = json_fields::MemberOrNull(status, "containerStatuses");
  if (!containers.is_array()) return out;
  for (const json& c : containers) {
    out.restarts = static_cast<int>(std::min<std::int64_t>(
        std::int64_t{out.restarts} + std::max(0, IntField(c, "restartCount", 0)), 1000000000));
    if (!json_fields::Bool(c, "ready").value_or(false)) out.ready = false;
    const json& state = json_fields::MemberOrNull(c, "state");
    const json& last =
        json_fields::MemberOrNull(json_fields::MemberOrNull(c, "lastState"), "terminated");
    if (const json& waiting = json_fields::MemberOrNull(state, "waiting"); waiting.is_object()) {
      const std::string why = json_fields::StringOr(waiting, "reason");
      if (!why.empty() && why != "ContainerCreating" && why != "PodInitializing") {
        out.reason = why;
        out.message = json_fields::StringOr(waiting, "message");
        if (last.is_object() && !json_fields::StringOr(last, "reason").empty()) {
          out.reason += " (last: " + json_fields::StringOr(last, "reason") + ")";
        }
      } else if (out.reason.empty()) {
        out.reason = why;
      }
    } else if (const json& terminated = json_fields::MemberOrNull(state, "terminated");
               terminated.is_object()) {
      if (out.reason.empty() || json_fields::StringOr(terminated, "reason") != "Completed") {
        out.reason = json_fields::StringOr(terminated, "reason");
        out.message = json_fields::StringOr(terminated, "message");
      }
      if (json_fields::Int(terminated, "exitCode")) {
        out.exit_code = IntField(terminated, "exitCode", 0);
      }
    } else if (last.is_object() && out.reason.empty()) {
      out.reason = "Restarted (last: " + json_fields::StringOr(last, "reason") + ")";
    }
    if (!out.exit_code && json_fields::Int(last, "exitCode")) {
      out.exit_code = IntField(last, "exitCode", 0);
    }
  }
  return out;
}

}  // namespace

bool PodBelongsToJob(const json& pod, std::string_view job) {
  if (Label(pod, {tfjob::kLabelJobName, tfjob::kLegacyLabelJobName}) == job) return true;
  const json& owners =
      json_fields::MemberOrNull(json_fields::MemberOrNull(pod, "metadata"), "ownerReferences");
  if (!owners.is_array()) return false;
  for (const json& owner : owners) {
    if (json_fields::StringOr(owner, "kind") == tfjob::kKind &&
        json_fields::StringOr(owner, "name") == job)
      return true;
  }
  return false;
}

std::string JobNameOfPod(const json& pod) {
  std::string job = Label(pod, {tfjob::kLabelJobName, tfjob::kLegacyLabelJobName});
  if (!job.empty()) return job;
  const json& owners =
      json_fields::MemberOrNull(json_fields::MemberOrNull(pod, "metadata"), "ownerReferences");
  if (owners.is_array()) {
    for (const json& owner : owners) {
      if (json_fields::StringOr(owner, "kind") == tfjob::kKind)
        return json_fields::StringOr(owner, "name");
    }
  }
  return "";
}

ui_server::ReplicaRow PodView(const json& pod) {
  const json& metadata = json_fields::MemberOrNull(pod, "metadata");
  const json& status = json_fields::MemberOrNull(pod, "status");
  ui_server::ReplicaRow row;
  row.name = json_fields::StringOr(metadata, "name");
  const auto [type, index] = ReplicaOfPod(pod);
  row.replica_type = AsciiLower(type);
  row.index = LabelNumber(index);
  row.node = json_fields::StringOr(json_fields::MemberOrNull(pod, "spec"), "nodeName");
  row.phase = json_fields::StringOr(status, "phase");
  if (row.phase.empty()) row.phase = "Pending";
  if (!json_fields::MemberOrNull(metadata, "deletionTimestamp").is_null())
    row.phase = "Terminating";

  ContainerSummary summary = SummarizeContainers(status, row.phase == "Running");
  std::string scheduled_reason, scheduled_message;
  if (row.phase == "Pending" && IsPodScheduledFalse(pod, &scheduled_reason, &scheduled_message)) {
    summary.reason = scheduled_reason.empty() ? "Unschedulable" : scheduled_reason;
    summary.message = scheduled_message;
  }
  row.reason = std::move(summary.reason);
  row.message = std::move(summary.message);
  row.ready = summary.ready;
  row.restarts = summary.restarts;
  row.exit_code = summary.exit_code;
  row.gpus = std::llround(PodRequests(pod).gpu);
  row.start_time = json_fields::StringOr(status, "startTime");
  return row;
}

ui_server::JobRow JobView(const json& tfjob, const std::vector<json>& pods, std::int64_t now) {
  std::vector<ui_server::ReplicaRow> replicas;
  for (const json& pod : pods) replicas.push_back(PodView(pod));
  return ui_server::JobRowOf(tfjob, std::move(replicas), now);
}

std::vector<ui_server::EventRow> EventsView(const json& event_list, std::string_view job,
                                            const std::vector<std::string>& pod_names) {
  std::vector<ui_server::EventRow> events;
  for (const json& e : Items(event_list)) {
    const json& object = json_fields::MemberOrNull(e, "involvedObject");
    const std::string kind = json_fields::StringOr(object, "kind");
    const std::string name = json_fields::StringOr(object, "name");
    const bool about_job = kind == "TFJob" && name == job;
    const bool about_pod =
        kind == "Pod" && std::find(pod_names.begin(), pod_names.end(), name) != pod_names.end();
    if (!about_job && !about_pod) continue;
    std::string time = json_fields::StringOr(e, "lastTimestamp");
    if (time.empty()) time = json_fields::StringOr(e, "eventTime");
    if (time.empty()) time = json_fields::StringOr(e, "firstTimestamp");
    if (time.empty())
      time = json_fields::StringOr(json_fields::MemberOrNull(e, "metadata"), "creationTimestamp");
    events.push_back({json_fields::StringOr(e, "type"), json_fields::StringOr(e, "reason"),
                      json_fields::StringOr(e, "message"), kind + "/" + name,
                      IntField(e, "count", 1), time});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const ui_server::EventRow& a, const ui_server::EventRow& b) {
                     return ParseTimestamp(a.time).value_or(0) < ParseTimestamp(b.time).value_or(0);
                   });
  return events;
}

std::vector<NodeUsage> NodesOf(const json& node_list) {
  std::vector<NodeUsage> nodes;
  for (const json& node : Items(node_list)) {
    NodeUsage usage;
    usage.name = json_fields::StringOr(json_fields::MemberOrNull(node, "metadata"), "name");
    usage.ready = NodeReady(node);
    usage.unschedulable = NodeCordoned(node);
    usage.taints = TaintsOf(node);
    usage.capacity = ResourcesOf(
        json_fields::MemberOrNull(json_fields::MemberOrNull(node, "status"), "capacity"));
    usage.allocatable = ResourcesOf(
        json_fields::MemberOrNull(json_fields::MemberOrNull(node, "status"), "allocatable"));
    nodes.push_back(std::move(usage));
  }
  return nodes;
}

ClusterLimits ComputeClusterLimits(const json& node_list) {
  return ui_server::LimitsOf(NodesOf(node_list));
}

ClusterPage ClusterPageOf(const json& node_list, const json& active_pods,
                          const std::vector<json>& job_pods, const json& events) {
  ClusterPage page;
  page.nodes = NodesOf(node_list);
  std::map<std::string, NodeUsage*> by_name;
  for (NodeUsage& usage : page.nodes) by_name.emplace(usage.name, &usage);
  for (const json& pod : Items(active_pods)) {
    const std::string node =
        json_fields::StringOr(json_fields::MemberOrNull(pod, "spec"), "nodeName");
    const std::string phase =
        json_fields::StringOr(json_fields::MemberOrNull(pod, "status"), "phase");
    auto it = by_name.find(node);
    if (node.empty() || phase == "Succeeded" || phase == "Failed" || it == by_name.end()) continue;
    const Resources r = PodRequests(pod);
    it->second->in_use.cpu += r.cpu;
    it->second->in_use.memory += r.memory;
    it->second->in_use.gpu += r.gpu;
    ++it->second->pods;
  }
  // The latest FailedScheduling message per pod (namespace/name).
  std::map<std::string, std::pair<std::int64_t, std::string>> scheduling;
  for (const json& e : Items(events)) {
    if (json_fields::StringOr(e, "reason") != "FailedScheduling") continue;
    const json& object = json_fields::MemberOrNull(e, "involvedObject");
    std::string ns = json_fields::StringOr(object, "namespace");
    if (ns.empty())
      ns = json_fields::StringOr(json_fields::MemberOrNull(e, "metadata"), "namespace");
    const std::string key = ns + "/" + json_fields::StringOr(object, "name");
    std::string time = json_fields::StringOr(e, "lastTimestamp");
    if (time.empty()) time = json_fields::StringOr(e, "eventTime");
    const std::int64_t t = ParseTimestamp(time).value_or(0);
    auto it = scheduling.find(key);
    if (it == scheduling.end() || it->second.first <= t)
      scheduling[key] = {t, json_fields::StringOr(e, "message")};
  }
  for (const json& pod : job_pods) {
    if (json_fields::StringOr(json_fields::MemberOrNull(pod, "status"), "phase") != "Pending" ||
        !json_fields::StringOr(json_fields::MemberOrNull(pod, "spec"), "nodeName").empty()) {
      continue;
    }
    const json& metadata = json_fields::MemberOrNull(pod, "metadata");
    const std::string key = json_fields::StringOr(metadata, "namespace") + "/" +
                            json_fields::StringOr(metadata, "name");
    std::string reason = "waiting to be scheduled";
    std::string message;
    std::string scheduled_reason;
    if (IsPodScheduledFalse(pod, &scheduled_reason, &message) && !scheduled_reason.empty()) {
      reason = scheduled_reason;
    }
    if (auto it = scheduling.find(key); it != scheduling.end() && !it->second.second.empty()) {
      reason = "FailedScheduling";
      message = it->second.second;
    }
    const std::string job = JobNameOfPod(pod);
    page.pending.push_back({json_fields::StringOr(metadata, "namespace"), job,
                            json_fields::StringOr(metadata, "name"),
                            std::llround(PodRequests(pod).gpu), reason, message});
  }
  return page;
}

bool ReplicaUnplaced(const ui_server::ReplicaRow& replica) {
  return replica.node.empty() && replica.phase == "Pending";
}

std::optional<ui_server::Waiting> WaitingOf(const tfjob::TFJob& job,
                                            const std::vector<ui_server::ReplicaRow>& replicas,
                                            const json& workloads, const json& pod_group) {
  using ui_server::WaitingReason;
  for (const tfjob::JobCondition& c : job.status.conditions) {
    if ((c.type == tfjob::ConditionType::kSucceeded || c.type == tfjob::ConditionType::kFailed) &&
        c.status == tfjob::ConditionStatus::kTrue) {
      return std::nullopt;
    }
  }
  if (job.spec.run_policy.suspend) {
    const auto queue = job.metadata.labels.find(std::string(tfjob::kLabelKueueQueueName));
    if (queue == job.metadata.labels.end() || queue->second.empty()) {
      return ui_server::Waiting{WaitingReason::kSuspended, "suspended (spec.runPolicy.suspend)",
                                ""};
    }
    const json& workload = WorkloadOf(workloads, job.metadata);
    return ui_server::Waiting{WaitingReason::kQueued,
                              "queued in LocalQueue " + queue->second + " (Kueue)",
                              PendingConditionMessage(workload, {"QuotaReserved", "Admitted"})};
  }

  // Replicas not yet on a node, and the scheduler's word on them.
  int placed = 0;
  int unplaced = 0;
  std::string scheduler_message;
  for (const ui_server::ReplicaRow& r : replicas) {
    if (!r.node.empty()) ++placed;
    if (!ReplicaUnplaced(r)) continue;
    ++unplaced;
    // The GPU shortage is the message worth showing when replicas differ.
    if (r.reason == "Unschedulable" &&
        (scheduler_message.empty() || SaysInsufficientGpus(r.message))) {
      scheduler_message = r.message;
    }
  }
  if (unplaced == 0) return std::nullopt;

  const std::int64_t min_member =
      json_fields::Int(json_fields::MemberOrNull(pod_group, "spec"), "minMember").value_or(0);
  std::string gang_message;
  if (min_member > 0 && placed < min_member && GangNotScheduled(pod_group, &gang_message)) {
    std::string detail = gang_message.empty() ? scheduler_message : gang_message;
    std::string message = "gang incomplete: " + std::to_string(placed) + " of minMember " +
                          std::to_string(std::min<std::int64_t>(min_member, 1000000000)) +
                          " pods placed";
    if (SaysInsufficientGpus(detail)) message += " (insufficient GPUs)";
    return ui_server::Waiting{WaitingReason::kGangIncomplete, std::move(message),
                              std::move(detail)};
  }
  if (scheduler_message.empty()) return std::nullopt;
  if (SaysInsufficientGpus(scheduler_message)) {
    return ui_server::Waiting{WaitingReason::kInsufficientGpus, "insufficient GPUs",
                              scheduler_message};
  }
  return ui_server::Waiting{WaitingReason::kUnschedulable, scheduler_message, scheduler_message};
}

ui_server::QueuesView QueuesOf(const json& cluster_queues, const json& local_queues) {
  ui_server::QueuesView page;
  for (const json& q : Items(cluster_queues)) {
    double quota = 0;
    const json& groups =
        json_fields::MemberOrNull(json_fields::MemberOrNull(q, "spec"), "resourceGroups");
    if (groups.is_array()) {
      for (const json& group : groups) {
        quota = std::min(
            quota + GpuOverFlavors(json_fields::MemberOrNull(group, "flavors"), "nominalQuota"),
            1e18);
      }
    }
    const json& status = json_fields::MemberOrNull(q, "status");
    page.cluster_queues.push_back(
        {json_fields::StringOr(json_fields::MemberOrNull(q, "metadata"), "name"),
         std::llround(quota),
         std::llround(
             GpuOverFlavors(json_fields::MemberOrNull(status, "flavorsReservation"), "total")),
         std::llround(GpuOverFlavors(json_fields::MemberOrNull(status, "flavorsUsage"), "total")),
         CountField(status, "pendingWorkloads"), CountField(status, "reservingWorkloads"),
         CountField(status, "admittedWorkloads")});
  }
  for (const json& q : Items(local_queues)) {
    const json& metadata = json_fields::MemberOrNull(q, "metadata");
    const json& status = json_fields::MemberOrNull(q, "status");
    page.local_queues.push_back(
        {json_fields::StringOr(metadata, "namespace"), json_fields::StringOr(metadata, "name"),
         json_fields::StringOr(json_fields::MemberOrNull(q, "spec"), "clusterQueue"),
         CountField(status, "pendingWorkloads"), CountField(status, "admittedWorkloads")});
  }
  return page;
}

ui_server::ClusterView ClusterView(const json& node_list, const json& active_pods,
                                   const std::vector<json>& job_pods, const json& events) {
  return ui_server::ClusterViewOf(ClusterPageOf(node_list, active_pods, job_pods, events));
}

}  // namespace taas::ui_kube
