#include "taas/ui_server/views.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

#include "taas/base/json_fields.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/rfc3339.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;

constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// The replica types in the order a job's rows and pods are shown.
constexpr std::array<std::string_view, 5> kTypeOrder = {"Chief", "Master", "PS", "Worker",
                                                        "Evaluator"};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The value at `key` if it is a string, else "".
std::string Str(const json& object, std::string_view key) {
  return json_fields::StringOr(object, key, "");
}

// The value at `key` of any type; null when absent (or `object` is not an object).
const json& Child(const json& object, std::string_view key) {
  static const json kNull;  // NOLINT: an immutable empty value, not state.
  const json* found = json_fields::Find(object, key);
  return found ? *found : kNull;
}

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
  const json& items = Child(list, "items");
  return items.is_array() ? items : kEmpty;
}

std::string Label(const json& object, std::initializer_list<std::string_view> keys) {
  const json& labels = Child(Child(object, "metadata"), "labels");
  for (std::string_view key : keys) {
    std::string value = Str(labels, key);
    if (!value.empty()) return value;
  }
  return "";
}

int TypeRank(std::string_view type) {
  for (std::size_t i = 0; i < kTypeOrder.size(); ++i) {
    if (Lower(kTypeOrder[i]) == Lower(type)) return static_cast<int>(i);
  }
  return static_cast<int>(kTypeOrder.size());
}

// A quantity held as a JSON string or number; 0 for anything else, negative or not finite, and
// at most 1e18 (so sums and roundings stay finite and defined).
double QuantityOf(const json& value) {
  double q = 0;
  if (value.is_number()) q = value.get<double>();
  if (value.is_string()) q = ParseQuantity(value.get<std::string>()).value_or(0);
  return std::isfinite(q) && q > 0 ? std::min(q, 1e18) : 0;
}

struct Resources {
  double cpu = 0;
  double memory = 0;
  double gpu = 0;
};

Resources ResourcesOf(const json& list) {
  return {QuantityOf(Child(list, "cpu")), QuantityOf(Child(list, "memory")),
          QuantityOf(Child(list, kGpuResource))};
}

json ToJson(const Resources& r) {
  return {{"cpu", r.cpu}, {"memory", r.memory}, {"gpu", std::llround(r.gpu)}};
}

// What a pod asks of its node: the sum of its containers' requests, where a missing request
// defaults to the limit (as the API server defaults it).
Resources PodRequests(const json& pod) {
  Resources total;
  const json& containers = Child(Child(pod, "spec"), "containers");
  if (!containers.is_array()) return total;
  for (const json& c : containers) {
    const json& resources = Child(c, "resources");
    const json& requests = Child(resources, "requests");
    const json& limits = Child(resources, "limits");
    auto pick = [&](std::string_view key) {
      const json& r = Child(requests, key);
      return r.is_null() ? QuantityOf(Child(limits, key)) : QuantityOf(r);
    };
    total.cpu += pick("cpu");
    total.memory += pick("memory");
    total.gpu += pick(kGpuResource);
  }
  return total;
}

bool IsPodScheduledFalse(const json& pod, std::string* reason, std::string* message) {
  const json& conditions = Child(Child(pod, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (Str(c, "type") == "PodScheduled" && Str(c, "status") == "False") {
      *reason = Str(c, "reason");
      *message = Str(c, "message");
      return true;
    }
  }
  return false;
}

bool NodeReady(const json& node) {
  const json& conditions = Child(Child(node, "status"), "conditions");
  if (!conditions.is_array()) return false;
  for (const json& c : conditions) {
    if (Str(c, "type") == "Ready") return Str(c, "status") == "True";
  }
  return false;
}

bool NodeCordoned(const json& node) {
  const json& unschedulable = Child(Child(node, "spec"), "unschedulable");
  return unschedulable.is_boolean() && unschedulable.get<bool>();
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

bool PodBelongsToJob(const json& pod, std::string_view job) {
  if (Label(pod, {tfjob::kLabelJobName, tfjob::kLegacyLabelJobName}) == job) return true;
  const json& owners = Child(Child(pod, "metadata"), "ownerReferences");
  if (!owners.is_array()) return false;
  for (const json& owner : owners) {
    if (Str(owner, "kind") == tfjob::kKind && Str(owner, "name") == job) return true;
  }
  return false;
}

std::string JobNameOfPod(const json& pod) {
  std::string job = Label(pod, {tfjob::kLabelJobName, tfjob::kLegacyLabelJobName});
  if (!job.empty()) return job;
  const json& owners = Child(Child(pod, "metadata"), "ownerReferences");
  if (owners.is_array()) {
    for (const json& owner : owners) {
      if (Str(owner, "kind") == tfjob::kKind) return Str(owner, "name");
    }
  }
  return "";
}

json PodView(const json& pod) {
  const json& metadata = Child(pod, "metadata");
  const json& spec = Child(pod, "spec");
  const json& status = Child(pod, "status");
  json view;
  const std::string name = Str(metadata, "name");
  view["name"] = name;
  std::string type = Label(pod, {tfjob::kLabelReplicaType, tfjob::kLegacyLabelReplicaType,
                                 tfjob::kLegacyLabelTfReplicaType});
  std::string index = Label(pod, {tfjob::kLabelReplicaIndex, tfjob::kLegacyLabelReplicaIndex,
                                  tfjob::kLegacyLabelTfReplicaIndex});
  if (type.empty() || index.empty()) {
    // Fall back on the `{job}-{type}-{index}` name.
    const auto last = name.rfind('-');
    const auto previous =
        last == std::string::npos || last == 0 ? std::string::npos : name.rfind('-', last - 1);
    if (previous != std::string::npos) {
      type = name.substr(previous + 1, last - previous - 1);
      index = name.substr(last + 1);
    }
  }
  view["replicaType"] = Lower(type);
  view["index"] = LabelNumber(index);
  view["node"] = Str(spec, "nodeName");
  std::string phase = Str(status, "phase");
  if (phase.empty()) phase = "Pending";
  if (!Child(metadata, "deletionTimestamp").is_null()) phase = "Terminating";
  view["phase"] = phase;

  std::string reason = Str(status, "reason");
  std::string message = Str(status, "message");
  int restarts = 0;
  bool ready = phase == "Running";
  json exit_code = nullptr;
  const json& containers = Child(status, "containerStatuses");
  if (containers.is_array()) {
    for (const json& c : containers) {
      restarts = static_cast<int>(std::min<std::int64_t>(
          std::int64_t{restarts} + std::max(0, IntField(c, "restartCount", 0)), 1000000000));
      if (!json_fields::Bool(c, "ready").value_or(false)) ready = false;
      const json& state = Child(c, "state");
      const json& last = Child(Child(c, "lastState"), "terminated");
      if (const json& waiting = Child(state, "waiting"); waiting.is_object()) {
        const std::string why = Str(waiting, "reason");
        if (!why.empty() && why != "ContainerCreating" && why != "PodInitializing") {
          reason = why;
          message = Str(waiting, "message");
          if (last.is_object() && !Str(last, "reason").empty()) {
            reason += " (last: " + Str(last, "reason") + ")";
          }
        } else if (reason.empty()) {
          reason = why;
        }
      } else if (const json& terminated = Child(state, "terminated"); terminated.is_object()) {
        if (reason.empty() || Str(terminated, "reason") != "Completed") {
          reason = Str(terminated, "reason");
          message = Str(terminated, "message");
        }
        if (json_fields::Int(terminated, "exitCode")) {
          exit_code = IntField(terminated, "exitCode", 0);
        }
      } else if (last.is_object() && reason.empty()) {
        reason = "Restarted (last: " + Str(last, "reason") + ")";
      }
      if (exit_code.is_null() && json_fields::Int(last, "exitCode")) {
        exit_code = IntField(last, "exitCode", 0);
      }
    }
  }
  std::string scheduled_reason, scheduled_message;
  if (phase == "Pending" && IsPodScheduledFalse(pod, &scheduled_reason, &scheduled_message)) {
    reason = scheduled_reason.empty() ? "Unschedulable" : scheduled_reason;
    message = scheduled_message;
  }
  view["reason"] = reason;
  view["message"] = message;
  view["ready"] = ready;
  view["restarts"] = restarts;
  view["exitCode"] = exit_code;
  view["gpus"] = std::llround(PodRequests(pod).gpu);
  view["startTime"] = Str(status, "startTime");
  return view;
}

std::int64_t JobGpus(const json& tfjob) {
  const json& specs = Child(Child(tfjob, "spec"), "tfReplicaSpecs");
  if (!specs.is_object()) return 0;
  double total = 0;
  for (const auto& [type, spec] : specs.items()) {
    const json& replicas = Child(spec, "replicas");
    const double count = replicas.is_number() ? std::clamp(replicas.get<double>(), 0.0, 1e9) : 1;
    total += count * PodRequests(Child(spec, "template")).gpu;
  }
  // Clamped so that rounding stays defined for absurd replica counts.
  return std::llround(std::clamp(total, 0.0, 1e15));
}

json JobView(const json& tfjob, const std::vector<json>& pods, std::int64_t now) {
  const json& metadata = Child(tfjob, "metadata");
  json view;
  view["namespace"] = Str(metadata, "namespace");
  view["name"] = Str(metadata, "name");
  const std::string created = Str(metadata, "creationTimestamp");
  view["created"] = created;
  const auto created_at = ParseTimestamp(created);
  view["ageSeconds"] = created_at ? std::max<std::int64_t>(0, now - *created_at) : 0;
  view["gpus"] = JobGpus(tfjob);

  std::vector<json> pod_views;
  for (const json& pod : pods) pod_views.push_back(PodView(pod));
  std::sort(pod_views.begin(), pod_views.end(), [](const json& a, const json& b) {
    const int ra = TypeRank(a["replicaType"].get<std::string>());
    const int rb = TypeRank(b["replicaType"].get<std::string>());
    if (ra != rb) return ra < rb;
    return a["index"].get<int>() < b["index"].get<int>();
  });

  // Replicas ready (running or done) over desired, per type.
  json replicas = json::array();
  std::string replicas_text;
  const json& specs = Child(Child(tfjob, "spec"), "tfReplicaSpecs");
  std::vector<std::pair<std::string, json>> ordered;
  if (specs.is_object()) {
    for (const auto& [type, spec] : specs.items()) ordered.emplace_back(type, spec);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return TypeRank(a.first) < TypeRank(b.first); });
  for (const auto& [type, spec] : ordered) {
    const std::int64_t desired = json_fields::Int(spec, "replicas").value_or(1);
    std::int64_t ready = 0;
    for (const json& p : pod_views) {
      const std::string phase = p["phase"].get<std::string>();
      if (p["replicaType"] == Lower(type) && (phase == "Running" || phase == "Succeeded")) ++ready;
    }
    replicas.push_back({{"type", type}, {"ready", ready}, {"desired", desired}});
    if (!replicas_text.empty()) replicas_text += " \u00b7 ";
    replicas_text += type + " " + std::to_string(ready) + "/" + std::to_string(desired);
  }
  view["replicas"] = replicas;
  view["replicasText"] = replicas_text;

  // Restarts as the operator counts them (a recreated pod starts again from 0), else the pods'.
  std::int64_t restarts = 0;
  const json& replica_statuses = Child(Child(tfjob, "status"), "replicaStatuses");
  if (replica_statuses.is_object()) {
    for (const auto& [type, status] : replica_statuses.items()) {
      const std::int64_t count = json_fields::Int(status, "restarts").value_or(0);
      restarts += std::clamp<std::int64_t>(count, 0, 1000000000);
    }
  }
  for (const json& p : pod_views) restarts = std::max<std::int64_t>(restarts, p["restarts"]);
  view["restarts"] = restarts;

  // The job's state from its conditions (the operator's verdict), most decisive first.
  std::map<std::string, json> true_conditions;
  const json& conditions = Child(Child(tfjob, "status"), "conditions");
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (Str(c, "status") == "True") true_conditions[Str(c, "type")] = c;
    }
  }
  std::string state = "Pending";
  std::string reason = "waiting for the operator to create its replicas";
  for (const char* candidate : {"Failed", "Succeeded", "Restarting", "Running", "Created"}) {
    if (auto it = true_conditions.find(candidate); it != true_conditions.end()) {
      state = candidate;
      reason = Str(it->second, "message");
      if (reason.empty()) reason = Str(it->second, "reason");
      break;
    }
  }
  std::string severity = state == "Failed" ? "error" : state == "Restarting" ? "warning" : "ok";

  // Pod-level trouble that a job-level "Running" would otherwise hide.
  std::vector<std::string> problems;
  bool any_unschedulable = false;
  for (const json& p : pod_views) {
    const std::string why = p["reason"].get<std::string>();
    const std::string phase = p["phase"].get<std::string>();
    const bool failed_exit = p["exitCode"].is_number_integer() && p["exitCode"].get<int>() != 0;
    if (why.empty() && !failed_exit && p["restarts"].get<int>() == 0) continue;
    if (why == "Completed" && !failed_exit) continue;
    std::string line = p["replicaType"].get<std::string>() + "-" +
                       std::to_string(p["index"].get<int>()) + ": " + (why.empty() ? phase : why);
    std::vector<std::string> details;
    if (failed_exit) details.push_back("exit " + std::to_string(p["exitCode"].get<int>()));
    if (p["restarts"].get<int>() > 0) {
      details.push_back(std::to_string(p["restarts"].get<int>()) + " restarts");
    }
    if (why == "Unschedulable") {
      any_unschedulable = true;
      if (!p["message"].get<std::string>().empty()) details.push_back(p["message"]);
    }
    if (!details.empty()) {
      line += " (";
      for (std::size_t i = 0; i < details.size(); ++i) line += (i ? ", " : "") + details[i];
      line += ")";
    }
    problems.push_back(line);
  }
  if (!problems.empty()) {
    if (state == "Created") state = any_unschedulable ? "Pending" : state;
    if (severity == "ok" && state != "Succeeded") severity = "warning";
    std::string joined;
    for (const std::string& p : problems) joined += (joined.empty() ? "" : "; ") + p;
    reason = reason.empty() ? joined : reason + " \u2014 " + joined;
  }
  view["state"] = state;
  view["reason"] = reason;
  view["severity"] = severity;
  view["pods"] = pod_views;
  return view;
}

json EventsView(const json& event_list, std::string_view job,
                const std::vector<std::string>& pod_names) {
  std::vector<json> events;
  for (const json& e : Items(event_list)) {
    const json& object = Child(e, "involvedObject");
    const std::string kind = Str(object, "kind");
    const std::string name = Str(object, "name");
    const bool about_job = kind == "TFJob" && name == job;
    const bool about_pod =
        kind == "Pod" && std::find(pod_names.begin(), pod_names.end(), name) != pod_names.end();
    if (!about_job && !about_pod) continue;
    std::string time = Str(e, "lastTimestamp");
    if (time.empty()) time = Str(e, "eventTime");
    if (time.empty()) time = Str(e, "firstTimestamp");
    if (time.empty()) time = Str(Child(e, "metadata"), "creationTimestamp");
    events.push_back({{"type", Str(e, "type")},
                      {"reason", Str(e, "reason")},
                      {"message", Str(e, "message")},
                      {"object", kind + "/" + name},
                      {"count", IntField(e, "count", 1)},
                      {"time", time}});
  }
  std::stable_sort(events.begin(), events.end(), [](const json& a, const json& b) {
    return ParseTimestamp(a["time"].get<std::string>()).value_or(0) <
           ParseTimestamp(b["time"].get<std::string>()).value_or(0);
  });
  return events;
}

ClusterLimits ComputeClusterLimits(const json& node_list) {
  ClusterLimits limits;
  for (const json& node : Items(node_list)) {
    if (!NodeReady(node) || NodeCordoned(node)) continue;
    const Resources a = ResourcesOf(Child(Child(node, "status"), "allocatable"));
    limits.max_node_cpu = std::max(limits.max_node_cpu, a.cpu);
    limits.max_node_memory = std::max(limits.max_node_memory, a.memory);
    limits.max_node_gpus = std::max<std::int64_t>(limits.max_node_gpus, std::llround(a.gpu));
    limits.total_gpus += std::llround(a.gpu);
    ++limits.nodes;
  }
  return limits;
}

json ClusterView(const json& node_list, const json& active_pods, const std::vector<json>& job_pods,
                 const json& events) {
  std::map<std::string, Resources> in_use;
  std::map<std::string, int> pod_counts;
  for (const json& pod : Items(active_pods)) {
    const std::string node = Str(Child(pod, "spec"), "nodeName");
    const std::string phase = Str(Child(pod, "status"), "phase");
    if (node.empty() || phase == "Succeeded" || phase == "Failed") continue;
    const Resources r = PodRequests(pod);
    Resources& sum = in_use[node];
    sum.cpu += r.cpu;
    sum.memory += r.memory;
    sum.gpu += r.gpu;
    ++pod_counts[node];
  }
  json nodes = json::array();
  Resources total_capacity, total_allocatable, total_in_use;
  auto add = [](Resources& to, const Resources& r) {
    to.cpu += r.cpu;
    to.memory += r.memory;
    to.gpu += r.gpu;
  };
  for (const json& node : Items(node_list)) {
    const std::string name = Str(Child(node, "metadata"), "name");
    const bool ready = NodeReady(node);
    const Resources capacity = ResourcesOf(Child(Child(node, "status"), "capacity"));
    const Resources allocatable = ResourcesOf(Child(Child(node, "status"), "allocatable"));
    const Resources used = in_use[name];
    add(total_capacity, capacity);
    add(total_allocatable, allocatable);
    add(total_in_use, used);
    nodes.push_back({{"name", name},
                     {"ready", ready},
                     {"unschedulable", NodeCordoned(node)},
                     {"capacity", ToJson(capacity)},
                     {"allocatable", ToJson(allocatable)},
                     {"inUse", ToJson(used)},
                     {"pods", pod_counts[name]}});
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });

  // The latest FailedScheduling message per pod (namespace/name).
  std::map<std::string, std::pair<std::int64_t, std::string>> scheduling;
  for (const json& e : Items(events)) {
    if (Str(e, "reason") != "FailedScheduling") continue;
    const json& object = Child(e, "involvedObject");
    std::string ns = Str(object, "namespace");
    if (ns.empty()) ns = Str(Child(e, "metadata"), "namespace");
    const std::string key = ns + "/" + Str(object, "name");
    std::string time = Str(e, "lastTimestamp");
    if (time.empty()) time = Str(e, "eventTime");
    const std::int64_t t = ParseTimestamp(time).value_or(0);
    auto it = scheduling.find(key);
    if (it == scheduling.end() || it->second.first <= t) scheduling[key] = {t, Str(e, "message")};
  }
  json pending = json::array();
  for (const json& pod : job_pods) {
    if (Str(Child(pod, "status"), "phase") != "Pending" ||
        !Str(Child(pod, "spec"), "nodeName").empty()) {
      continue;
    }
    const json& metadata = Child(pod, "metadata");
    const std::string key = Str(metadata, "namespace") + "/" + Str(metadata, "name");
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
    pending.push_back({{"namespace", Str(metadata, "namespace")},
                       {"job", job},
                       {"pod", Str(metadata, "name")},
                       {"gpus", std::llround(PodRequests(pod).gpu)},
                       {"reason", reason},
                       {"message", message}});
  }
  return {{"totals",
           {{"capacity", ToJson(total_capacity)},
            {"allocatable", ToJson(total_allocatable)},
            {"inUse", ToJson(total_in_use)},
            {"nodes", nodes.size()}}},
          {"nodes", nodes},
          {"pending", pending}};
}

}  // namespace taas::ui_server
