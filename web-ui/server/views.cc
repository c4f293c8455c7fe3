#include "taas/ui_server/views.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "taas/base/ascii.h"
#include "taas/base/json_fields.h"
#include "taas/tfjob/progress.h"
#include "taas/tfjob/rfc3339.h"
#include "taas/tfjob/serialization.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;

// Where a replica row's type ranks among the job's: tfjob::ReplicaType's order (Chief, Master,
// PS, Worker, Evaluator, as a spec's replica types iterate); unknown types last.
int TypeRank(std::string_view type) {
  const auto parsed = tfjob::ParseReplicaTypeIgnoringCase(type);
  return parsed ? static_cast<int>(*parsed) : 1 << 20;
}

void SortReplicaRows(std::vector<ReplicaRow>* replicas) {
  std::stable_sort(replicas->begin(), replicas->end(),
                   [](const ReplicaRow& a, const ReplicaRow& b) {
                     const int ra = TypeRank(a.replica_type);
                     const int rb = TypeRank(b.replica_type);
                     return ra != rb ? ra < rb : a.index < b.index;
                   });
}

// Replicas ready (running or done) over desired, per type: `replicas` and `replicasText`.
void AddReplicaCounts(const tfjob::TFJobSpec& spec, const std::vector<ReplicaRow>& rows,
                      JobRow* view) {
  for (const auto& [type, replica_spec] : spec.replica_specs) {
    ReplicaCount count{std::string(tfjob::ReplicaTypeName(type)), 0, replica_spec.replicas};
    for (const ReplicaRow& r : rows) {
      if (AsciiLower(r.replica_type) == tfjob::ReplicaTypeKey(type) &&
          (r.phase == "Running" || r.phase == "Succeeded")) {
        ++count.ready;
      }
    }
    if (!view->replicas_text.empty()) view->replicas_text += " \u00b7 ";
    view->replicas_text +=
        count.type + " " + std::to_string(count.ready) + "/" + std::to_string(count.desired);
    view->replicas.push_back(std::move(count));
  }
}

// Restarts as the operator counts them (a recreated pod starts again from 0), else the replicas'.
std::int64_t JobRestarts(const tfjob::JobStatus& status, const std::vector<ReplicaRow>& rows) {
  std::int64_t restarts = 0;
  for (const auto& [type, replica_status] : status.replica_statuses) {
    restarts += std::max(0, replica_status.restarts);
  }
  for (const ReplicaRow& r : rows) restarts = std::max<std::int64_t>(restarts, r.restarts);
  return restarts;
}

struct Verdict {
  JobState state = JobState::kPending;
  std::string reason;
  Severity severity = Severity::kOk;
};

// The job's state from its conditions (the operator's verdict), most decisive first.
Verdict VerdictOf(const tfjob::JobStatus& status) {
  using tfjob::ConditionType;
  static constexpr std::pair<ConditionType, JobState> kDecisive[] = {
      {ConditionType::kFailed, JobState::kFailed},
      {ConditionType::kSucceeded, JobState::kSucceeded},
      {ConditionType::kRestarting, JobState::kRestarting},
      {ConditionType::kRunning, JobState::kRunning},
      {ConditionType::kCreated, JobState::kCreated}};
  for (const auto& [type, state] : kDecisive) {
    for (const tfjob::JobCondition& c : status.conditions) {
      if (c.type != type || c.status != tfjob::ConditionStatus::kTrue) continue;
      Verdict verdict{state, c.message.empty() ? c.reason : c.message, Severity::kOk};
      if (state == JobState::kFailed) verdict.severity = Severity::kError;
      if (state == JobState::kRestarting) verdict.severity = Severity::kWarning;
      return verdict;
    }
  }
  return {JobState::kPending, "waiting for the operator to create its replicas", Severity::kOk};
}

// What is wrong with a replica ("worker-1: OOMKilled (exit 137, 2 restarts)"); "" when nothing.
std::string ProblemOf(const ReplicaRow& r) {
  const bool failed_exit = r.exit_code.value_or(0) != 0;
  if (r.reason.empty() && !failed_exit && r.restarts == 0) return "";
  if (r.reason == "Completed" && !failed_exit) return "";
  std::string line = r.replica_type + "-" + std::to_string(r.index) + ": " +
                     (r.reason.empty() ? r.phase : r.reason);
  std::vector<std::string> details;
  if (failed_exit) details.push_back("exit " + std::to_string(*r.exit_code));
  if (r.restarts > 0) details.push_back(std::to_string(r.restarts) + " restarts");
  if (r.reason == "Unschedulable" && !r.message.empty()) details.push_back(r.message);
  if (!details.empty()) {
    line += " (";
    for (std::size_t i = 0; i < details.size(); ++i) line += (i ? ", " : "") + details[i];
    line += ")";
  }
  return line;
}

// Adds the replicas' trouble that a job-level "Running" would otherwise hide to the verdict.
void AddReplicaProblems(const std::vector<ReplicaRow>& replicas, Verdict* verdict) {
  bool any_unschedulable = false;
  std::string problems;
  for (const ReplicaRow& replica : replicas) {
    const std::string line = ProblemOf(replica);
    if (line.empty()) continue;
    any_unschedulable |= replica.reason == "Unschedulable";
    problems += (problems.empty() ? "" : "; ") + line;
  }
  if (problems.empty()) return;
  if (verdict->state == JobState::kCreated && any_unschedulable)
    verdict->state = JobState::kPending;
  if (verdict->severity == Severity::kOk && verdict->state != JobState::kSucceeded) {
    verdict->severity = Severity::kWarning;
  }
  verdict->reason = verdict->reason.empty() ? problems : verdict->reason + " \u2014 " + problems;
}

std::int64_t AgeSeconds(const std::string& created, std::int64_t now) {
  const auto created_at = ParseTimestamp(created);
  return created_at ? std::max<std::int64_t>(0, now - *created_at) : 0;
}

ResourceAmounts AmountsOf(const Resources& r) { return {r.cpu, r.memory, std::llround(r.gpu)}; }

void Add(Resources& to, const Resources& r) {
  to.cpu += r.cpu;
  to.memory += r.memory;
  to.gpu += r.gpu;
}

// The queues, each ClusterQueue (by name) with the LocalQueues that submit to it.
QueuesView QueuesViewOf(QueuesView view) {
  std::map<std::string, std::vector<std::string>> local_by_cluster_queue;
  for (const LocalQueueRow& q : view.local_queues) {
    local_by_cluster_queue[q.cluster_queue].push_back(q.namespace_name + "/" + q.name);
  }
  for (ClusterQueueRow& q : view.cluster_queues) q.local_queues = local_by_cluster_queue[q.name];
  std::sort(view.cluster_queues.begin(), view.cluster_queues.end(),
            [](const ClusterQueueRow& a, const ClusterQueueRow& b) { return a.name < b.name; });
  return view;
}

NodeRow NodeRowOf(const NodeUsage& node) {
  const GpuSlots gpu_slots = ClassifyGpuSlots(node);
  NodeRow row{node.name,
              node.ready,
              node.unschedulable,
              {},
              gpu_slots.access,
              gpu_slots.note,
              AmountsOf(node.capacity),
              AmountsOf(node.allocatable),
              AmountsOf(node.in_use),
              node.pods};
  for (const Taint& taint : node.taints) row.taints.push_back(TaintText(taint));
  return row;
}

GpuCount& SlotsOf(GpuSlotCounts& counts, GpuAccess access) {
  switch (access) {
    case GpuAccess::kTainted:
      return counts.tainted;
    case GpuAccess::kCordoned:
      return counts.cordoned;
    case GpuAccess::kOpen:
      break;
  }
  return counts.open;
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

std::int64_t JobGpus(const tfjob::TFJobSpec& spec) {
  double total = 0;
  for (const auto& [type, replica_spec] : spec.replica_specs) {
    total += std::max(0, replica_spec.replicas) * PodRequests(replica_spec.pod_template).gpu;
  }
  // Clamped so that rounding stays defined for absurd replica counts.
  return std::llround(std::clamp(total, 0.0, 1e15));
}

ProgressRow ProgressRowOf(const tfjob::JobProgress& progress) {
  ProgressRow row;
  row.step = progress.global_step;
  row.max_steps = progress.max_steps;
  row.percent = tfjob::ProgressPercent(progress);
  row.examples_per_second = progress.examples_per_second;
  row.eta_seconds = progress.eta_seconds;
  if (progress.eta_seconds) row.eta = tfjob::FormatEta(std::chrono::seconds(*progress.eta_seconds));
  auto metric = [&](std::string_view name) -> std::optional<double> {
    auto it = progress.metrics.find(std::string(name));
    return it == progress.metrics.end() ? std::nullopt : std::optional<double>(it->second);
  };
  row.loss = metric(tfjob::kLossMetricName);
  row.accuracy = metric(tfjob::kAccuracyMetricName);
  for (const auto& [name, value] : progress.final_metrics)
    row.final_metrics.push_back({name, value});
  row.final_error = progress.final_error;
  if (progress.stall) row.stall = tfjob::DescribeStall(*progress.stall);
  if (progress.update_time) row.updated = tfjob::FormatRfc3339(*progress.update_time);
  return row;
}

std::optional<tfjob::JobProgress> MergeProgress(std::optional<tfjob::JobProgress> status,
                                                const std::optional<tfjob::JobProgress>& scraped) {
  if (!scraped) return status;
  if (!status) status.emplace();
  // The scrape is the fresher word on a stall (status.progress is written every interval).
  tfjob::ApplyStall(*status, scraped->stall);
  auto fill = [](auto& into, const auto& from) {
    if (!into) into = from;
  };
  fill(status->global_step, scraped->global_step);
  fill(status->max_steps, scraped->max_steps);
  if (status->final_metrics.empty()) {
    fill(status->examples_per_second, scraped->examples_per_second);
    fill(status->eta_seconds, scraped->eta_seconds);
  }
  status->metrics.insert(scraped->metrics.begin(), scraped->metrics.end());  // keeps the status's
  fill(status->update_time, scraped->update_time);
  return status;
}

JobRow JobRowOf(const tfjob::TFJob& job, std::vector<ReplicaRow> replicas, std::int64_t now) {
  JobRow view;
  view.namespace_name = job.metadata.namespace_name;
  view.name = job.metadata.name;
  if (job.metadata.creation_timestamp) {
    view.created = tfjob::FormatRfc3339(*job.metadata.creation_timestamp);
  }
  view.age_seconds = AgeSeconds(view.created, now);
  view.gpus = JobGpus(job.spec);
  SortReplicaRows(&replicas);
  AddReplicaCounts(job.spec, replicas, &view);
  view.restarts = JobRestarts(job.status, replicas);
  Verdict verdict = VerdictOf(job.status);
  AddReplicaProblems(replicas, &verdict);
  view.state = verdict.state;
  view.reason = std::move(verdict.reason);
  view.severity = verdict.severity;
  if (job.status.progress) view.progress = ProgressRowOf(*job.status.progress);
  view.pods = std::move(replicas);
  return view;
}

JobRow JobRowOf(const json& tfjob, std::vector<ReplicaRow> replicas, std::int64_t now) {
  auto job = tfjob::TFJobFromJson(tfjob);
  if (job.ok()) return JobRowOf(*job, std::move(replicas), now);
  // No operator runs a job its rules cannot read: say so, with their words, instead of a
  // "Pending" that would never end.
  const json& metadata = json_fields::MemberOrNull(tfjob, "metadata");
  JobRow view;
  view.namespace_name = json_fields::StringOr(metadata, "namespace");
  view.name = json_fields::StringOr(metadata, "name");
  view.created = json_fields::StringOr(metadata, "creationTimestamp");
  view.age_seconds = AgeSeconds(view.created, now);
  view.state = JobState::kInvalid;
  view.severity = Severity::kError;
  view.reason = "the TFJob rules cannot read this job: " + std::string(job.status().message());
  SortReplicaRows(&replicas);
  view.pods = std::move(replicas);
  return view;
}

std::vector<ConditionRow> ConditionRows(const tfjob::JobStatus& status) {
  std::vector<ConditionRow> rows;
  auto time = [](const std::optional<tfjob::Time>& t) {
    return t ? std::optional<std::string>(tfjob::FormatRfc3339(*t)) : std::nullopt;
  };
  for (const tfjob::JobCondition& c : status.conditions) {
    rows.push_back({std::string(tfjob::ToString(c.type)), std::string(tfjob::ToString(c.status)),
                    c.reason, c.message, time(c.last_transition_time), time(c.last_update_time)});
  }
  return rows;
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

ClusterView ClusterViewOf(const ClusterPage& page) {
  ClusterView view;
  Resources capacity, allocatable, in_use;
  for (const NodeUsage& node : page.nodes) {
    Add(capacity, node.capacity);
    Add(allocatable, node.allocatable);
    Add(in_use, node.in_use);
    view.nodes.push_back(NodeRowOf(node));
  }
  // GPUs allocatable and in use by who may take them, summed before rounding.
  std::map<GpuAccess, std::pair<double, double>> slots;
  for (const NodeUsage& node : page.nodes) {
    auto& [slot_allocatable, slot_in_use] = slots[ClassifyGpuSlots(node).access];
    slot_allocatable += node.allocatable.gpu;
    slot_in_use += node.in_use.gpu;
  }
  for (const auto& [access, counts] : slots) {
    SlotsOf(view.totals.gpu_slots, access) = {std::llround(counts.first),
                                              std::llround(counts.second)};
  }
  view.totals.capacity = AmountsOf(capacity);
  view.totals.allocatable = AmountsOf(allocatable);
  view.totals.in_use = AmountsOf(in_use);
  view.totals.nodes = static_cast<std::int64_t>(page.nodes.size());
  std::sort(view.nodes.begin(), view.nodes.end(),
            [](const NodeRow& a, const NodeRow& b) { return a.name < b.name; });
  for (const PendingReplica& p : page.pending) {
    view.pending.push_back({p.namespace_name, p.job, p.replica, p.gpus, p.reason, p.message});
  }
  if (page.queues) view.queues = QueuesViewOf(*page.queues);
  return view;
}

}  // namespace taas::ui_server
