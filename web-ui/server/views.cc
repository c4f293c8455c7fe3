#include "taas/ui_server/views.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "taas/base/ascii.h"
#include "taas/base/json_fields.h"
#include "taas/tfjob/rfc3339.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;

// The replica types in the order a job's rows and pods are shown.
constexpr std::array<std::string_view, 5> kTypeOrder = {"Chief", "Master", "PS", "Worker",
                                                        "Evaluator"};

int TypeRank(std::string_view type) {
  for (std::size_t i = 0; i < kTypeOrder.size(); ++i) {
    if (AsciiLower(kTypeOrder[i]) == AsciiLower(type)) return static_cast<int>(i);
  }
  return static_cast<int>(kTypeOrder.size());
}

json ToJson(const Resources& r) {
  return {{"cpu", r.cpu}, {"memory", r.memory}, {"gpu", std::llround(r.gpu)}};
}

void Add(Resources& to, const Resources& r) {
  to.cpu += r.cpu;
  to.memory += r.memory;
  to.gpu += r.gpu;
}

// Replica rows in the order shown: by type (kTypeOrder), then index.
void SortReplicas(std::vector<json>* replicas) {
  std::sort(replicas->begin(), replicas->end(), [](const json& a, const json& b) {
    const int ra = TypeRank(a["replicaType"].get<std::string>());
    const int rb = TypeRank(b["replicaType"].get<std::string>());
    if (ra != rb) return ra < rb;
    return a["index"].get<int>() < b["index"].get<int>();
  });
}

// Replicas ready (running or done) over desired, per type: `replicas` and `replicasText`.
void AddReplicaCounts(const json& tfjob, const std::vector<json>& rows, json* view) {
  json replicas = json::array();
  std::string replicas_text;
  const json& specs =
      json_fields::MemberOrNull(json_fields::MemberOrNull(tfjob, "spec"), "tfReplicaSpecs");
  std::vector<std::pair<std::string, json>> ordered;
  if (specs.is_object()) {
    for (const auto& [type, spec] : specs.items()) ordered.emplace_back(type, spec);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return TypeRank(a.first) < TypeRank(b.first); });
  for (const auto& [type, spec] : ordered) {
    const std::int64_t desired = json_fields::Int(spec, "replicas").value_or(1);
    std::int64_t ready = 0;
    for (const json& p : rows) {
      const std::string phase = p["phase"].get<std::string>();
      if (p["replicaType"] == AsciiLower(type) && (phase == "Running" || phase == "Succeeded"))
        ++ready;
    }
    replicas.push_back({{"type", type}, {"ready", ready}, {"desired", desired}});
    if (!replicas_text.empty()) replicas_text += " \u00b7 ";
    replicas_text += type + " " + std::to_string(ready) + "/" + std::to_string(desired);
  }
  (*view)["replicas"] = replicas;
  (*view)["replicasText"] = replicas_text;
}

// Restarts as the operator counts them (a recreated pod starts again from 0), else the replicas'.
std::int64_t JobRestarts(const json& tfjob, const std::vector<json>& rows) {
  std::int64_t restarts = 0;
  const json& replica_statuses =
      json_fields::MemberOrNull(json_fields::MemberOrNull(tfjob, "status"), "replicaStatuses");
  if (replica_statuses.is_object()) {
    for (const auto& [type, status] : replica_statuses.items()) {
      const std::int64_t count = json_fields::Int(status, "restarts").value_or(0);
      restarts += std::clamp<std::int64_t>(count, 0, 1000000000);
    }
  }
  for (const json& p : rows) restarts = std::max<std::int64_t>(restarts, p["restarts"]);
  return restarts;
}

struct Verdict {
  std::string state;
  std::string reason;
  std::string severity;
};

// The job's state from its conditions (the operator's verdict), most decisive first.
Verdict VerdictOf(const json& tfjob) {
  std::map<std::string, json> true_conditions;
  const json& conditions =
      json_fields::MemberOrNull(json_fields::MemberOrNull(tfjob, "status"), "conditions");
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (json_fields::StringOr(c, "status") == "True")
        true_conditions[json_fields::StringOr(c, "type")] = c;
    }
  }
  Verdict verdict{"Pending", "waiting for the operator to create its replicas", "ok"};
  for (const char* candidate : {"Failed", "Succeeded", "Restarting", "Running", "Created"}) {
    if (auto it = true_conditions.find(candidate); it != true_conditions.end()) {
      verdict.state = candidate;
      verdict.reason = json_fields::StringOr(it->second, "message");
      if (verdict.reason.empty()) verdict.reason = json_fields::StringOr(it->second, "reason");
      break;
    }
  }
  if (verdict.state == "Failed") verdict.severity = "error";
  if (verdict.state == "Restarting") verdict.severity = "warning";
  return verdict;
}

// What is wrong with a replica ("worker-1: OOMKilled (exit 137, 2 restarts)"); "" when nothing.
std::string ProblemOf(const json& p) {
  const std::string why = p["reason"].get<std::string>();
  const std::string phase = p["phase"].get<std::string>();
  const bool failed_exit = p["exitCode"].is_number_integer() && p["exitCode"].get<int>() != 0;
  if (why.empty() && !failed_exit && p["restarts"].get<int>() == 0) return "";
  if (why == "Completed" && !failed_exit) return "";
  std::string line = p["replicaType"].get<std::string>() + "-" +
                     std::to_string(p["index"].get<int>()) + ": " + (why.empty() ? phase : why);
  std::vector<std::string> details;
  if (failed_exit) details.push_back("exit " + std::to_string(p["exitCode"].get<int>()));
  if (p["restarts"].get<int>() > 0) {
    details.push_back(std::to_string(p["restarts"].get<int>()) + " restarts");
  }
  if (why == "Unschedulable" && !p["message"].get<std::string>().empty()) {
    details.push_back(p["message"]);
  }
  if (!details.empty()) {
    line += " (";
    for (std::size_t i = 0; i < details.size(); ++i) line += (i ? ", " : "") + details[i];
    line += ")";
  }
  return line;
}

json QueuesJson(const QueuesPage& queues) {
  std::map<std::string, json> local_by_cluster_queue;
  json local_queues = json::array();
  for (const LocalQueueUsage& q : queues.local_queues) {
    local_by_cluster_queue[q.cluster_queue].push_back(q.namespace_name + "/" + q.name);
    local_queues.push_back({{"namespace", q.namespace_name},
                            {"name", q.name},
                            {"clusterQueue", q.cluster_queue},
                            {"pendingWorkloads", q.pending},
                            {"admittedWorkloads", q.admitted}});
  }
  json cluster_queues = json::array();
  for (const ClusterQueueUsage& q : queues.cluster_queues) {
    const json& locals = local_by_cluster_queue[q.name];
    cluster_queues.push_back({{"name", q.name},
                              {"gpuQuota", std::llround(q.gpu_quota)},
                              {"gpuReserved", std::llround(q.gpu_reserved)},
                              {"gpuInUse", std::llround(q.gpu_in_use)},
                              {"pendingWorkloads", q.pending},
                              {"reservingWorkloads", q.reserving},
                              {"admittedWorkloads", q.admitted},
                              {"localQueues", locals.is_null() ? json::array() : locals}});
  }
  std::sort(cluster_queues.begin(), cluster_queues.end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });
  return {
      {"clusterQueues", cluster_queues}, {"localQueues", local_queues}, {"error", queues.error}};
}

}  // namespace

std::optional<double> ParseQuantity(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::size_t i = 0;
  if (text[0] == '+') i = 1;
  const std::size_t number_start = i;
  std::size_t digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string number(text.substr(number_start, i - number_start));
  const double value = std::strtod(number.c_str(), nullptr);
  const std::string_view suffix = text.substr(i);
  static const std::map<std::string_view, double> kSuffixes = {
      {"", 1},        {"n", 1e-9},    {"u", 1e-6},    {"m", 1e-3},   {"k", 1e3},    {"M", 1e6},
      {"G", 1e9},     {"T", 1e12},    {"P", 1e15},    {"E", 1e18},   {"Ki", 1024.}, {"Mi", 0x1p20},
      {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60}};
  if (auto it = kSuffixes.find(suffix); it != kSuffixes.end()) return value * it->second;
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::size_t j = 1;
    if (suffix[j] == '+' || suffix[j] == '-') ++j;
    if (j >= suffix.size() || suffix.size() - j > 3) return std::nullopt;
    for (std::size_t k = j; k < suffix.size(); ++k) {
      if (!std::isdigit(static_cast<unsigned char>(suffix[k]))) return std::nullopt;
    }
    return value * std::pow(10.0, std::atoi(std::string(suffix.substr(1)).c_str()));
  }
  return std::nullopt;
}

std::optional<std::int64_t> ParseTimestamp(std::string_view text) {
  auto time = tfjob::ParseRfc3339(text);
  if (!time.ok()) return std::nullopt;
  return time->time_since_epoch().count();
}

double QuantityOf(const json& value) {
  double q = 0;
  if (value.is_number()) q = value.get<double>();
  if (value.is_string()) q = ParseQuantity(value.get<std::string>()).value_or(0);
  return std::isfinite(q) && q > 0 ? std::min(q, 1e18) : 0;
}

Resources ResourcesOf(const json& list) {
  return {QuantityOf(json_fields::MemberOrNull(list, "cpu")),
          QuantityOf(json_fields::MemberOrNull(list, "memory")),
          QuantityOf(json_fields::MemberOrNull(list, kGpuResource))};
}

Resources PodRequests(const json& pod) {
  Resources total;
  const json& containers =
      json_fields::MemberOrNull(json_fields::MemberOrNull(pod, "spec"), "containers");
  if (!containers.is_array()) return total;
  for (const json& c : containers) {
    const json& resources = json_fields::MemberOrNull(c, "resources");
    const json& requests = json_fields::MemberOrNull(resources, "requests");
    const json& limits = json_fields::MemberOrNull(resources, "limits");
    auto pick = [&](std::string_view key) {
      const json& r = json_fields::MemberOrNull(requests, key);
      return r.is_null() ? QuantityOf(json_fields::MemberOrNull(limits, key)) : QuantityOf(r);
    };
    total.cpu += pick("cpu");
    total.memory += pick("memory");
    total.gpu += pick(kGpuResource);
  }
  return total;
}

std::int64_t JobGpus(const json& tfjob) {
  const json& specs =
      json_fields::MemberOrNull(json_fields::MemberOrNull(tfjob, "spec"), "tfReplicaSpecs");
  if (!specs.is_object()) return 0;
  double total = 0;
  for (const auto& [type, spec] : specs.items()) {
    const json& replicas = json_fields::MemberOrNull(spec, "replicas");
    const double count = replicas.is_number() ? std::clamp(replicas.get<double>(), 0.0, 1e9) : 1;
    total += count * PodRequests(json_fields::MemberOrNull(spec, "template")).gpu;
  }
  // Clamped so that rounding stays defined for absurd replica counts.
  return std::llround(std::clamp(total, 0.0, 1e15));
}

json JobRow(const json& tfjob, std::vector<json> replicas, std::int64_t now) {
  const json& metadata = json_fields::MemberOrNull(tfjob, "metadata");
  json view;
  view["namespace"] = json_fields::StringOr(metadata, "namespace");
  view["name"] = json_fields::StringOr(metadata, "name");
  const std::string created = json_fields::StringOr(metadata, "creationTimestamp");
  view["created"] = created;
  const auto created_at = ParseTimestamp(created);
  view["ageSeconds"] = created_at ? std::max<std::int64_t>(0, now - *created_at) : 0;
  view["gpus"] = JobGpus(tfjob);
  SortReplicas(&replicas);
  AddReplicaCounts(tfjob, replicas, &view);
  view["restarts"] = JobRestarts(tfjob, replicas);

  Verdict verdict = VerdictOf(tfjob);
  // Replica-level trouble that a job-level "Running" would otherwise hide.
  bool any_unschedulable = false;
  std::string problems;
  for (const json& replica : replicas) {
    const std::string line = ProblemOf(replica);
    if (line.empty()) continue;
    any_unschedulable |= replica["reason"] == "Unschedulable";
    problems += (problems.empty() ? "" : "; ") + line;
  }
  if (!problems.empty()) {
    if (verdict.state == "Created" && any_unschedulable) verdict.state = "Pending";
    if (verdict.severity == "ok" && verdict.state != "Succeeded") verdict.severity = "warning";
    verdict.reason = verdict.reason.empty() ? problems : verdict.reason + " \u2014 " + problems;
  }
  view["state"] = verdict.state;
  view["reason"] = verdict.reason;
  view["severity"] = verdict.severity;
  view["pods"] = replicas;
  return view;
}

ClusterLimits LimitsOf(const std::vector<NodeUsage>& nodes) {
  ClusterLimits limits;
  for (const NodeUsage& node : nodes) {
    if (!node.ready || node.unschedulable) continue;
    const Resources& a = node.allocatable;
    limits.max_node_cpu = std::max(limits.max_node_cpu, a.cpu);
    limits.max_node_memory = std::max(limits.max_node_memory, a.memory);
    limits.max_node_gpus = std::max<std::int64_t>(limits.max_node_gpus, std::llround(a.gpu));
    limits.total_gpus += std::llround(a.gpu);
    ++limits.nodes;
  }
  return limits;
}

std::string TaintText(const Taint& taint) {
  return taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" + taint.effect;
}

GpuSlots ClassifyGpuSlots(const NodeUsage& node) {
  // A cordoned node takes no new pod, whatever it tolerates: that is the stronger statement.
  if (node.unschedulable) return {GpuAccess::kCordoned, "cordoned: no new pods"};
  if (node.taints.empty()) return {GpuAccess::kOpen, ""};
  std::string note = "usable only by pods that tolerate ";
  for (std::size_t i = 0; i < node.taints.size(); ++i) {
    note += (i ? ", " : "") + TaintText(node.taints[i]);
  }
  return {GpuAccess::kTainted, note};
}

std::string_view GpuAccessName(GpuAccess access) {
  switch (access) {
    case GpuAccess::kTainted:
      return "tainted";
    case GpuAccess::kCordoned:
      return "cordoned";
    case GpuAccess::kOpen:
      break;
  }
  return "open";
}

json ClusterPageJson(const ClusterPage& page) {
  json nodes = json::array();
  Resources total_capacity, total_allocatable, total_in_use;
  // GPUs allocatable and in use by who may take them (GpuAccess).
  std::map<std::string_view, std::pair<double, double>> slots = {
      {"open", {0, 0}}, {"tainted", {0, 0}}, {"cordoned", {0, 0}}};
  for (const NodeUsage& node : page.nodes) {
    Add(total_capacity, node.capacity);
    Add(total_allocatable, node.allocatable);
    Add(total_in_use, node.in_use);
    const GpuSlots gpu_slots = ClassifyGpuSlots(node);
    auto& [allocatable, in_use] = slots[GpuAccessName(gpu_slots.access)];
    allocatable += node.allocatable.gpu;
    in_use += node.in_use.gpu;
    json taints = json::array();
    for (const Taint& taint : node.taints) taints.push_back(TaintText(taint));
    nodes.push_back({{"name", node.name},
                     {"ready", node.ready},
                     {"unschedulable", node.unschedulable},
                     {"taints", taints},
                     {"gpuAccess", GpuAccessName(gpu_slots.access)},
                     {"gpuNote", gpu_slots.note},
                     {"capacity", ToJson(node.capacity)},
                     {"allocatable", ToJson(node.allocatable)},
                     {"inUse", ToJson(node.in_use)},
                     {"pods", node.pods}});
  }
  json gpu_slots = json::object();
  for (const auto& [access, counts] : slots) {
    gpu_slots[std::string(access)] = {{"allocatable", std::llround(counts.first)},
                                      {"inUse", std::llround(counts.second)}};
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });
  json pending = json::array();
  for (const PendingReplica& p : page.pending) {
    pending.push_back({{"namespace", p.namespace_name},
                       {"job", p.job},
                       {"pod", p.replica},
                       {"gpus", p.gpus},
                       {"reason", p.reason},
                       {"message", p.message}});
  }
  return {{"totals",
           {{"capacity", ToJson(total_capacity)},
            {"allocatable", ToJson(total_allocatable)},
            {"inUse", ToJson(total_in_use)},
            {"nodes", nodes.size()},
            {"gpuSlots", gpu_slots}}},
          {"nodes", nodes},
          {"pending", pending},
          {"queues", page.queues ? QueuesJson(*page.queues) : json(nullptr)}};
}

}  // namespace taas::ui_server
