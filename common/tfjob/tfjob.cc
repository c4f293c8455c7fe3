#include "taas/tfjob/tfjob.h"

#include <algorithm>
#include <array>

#include "taas/base/ascii.h"

namespace taas::tfjob {
namespace {

struct ReplicaTypeNames {
  ReplicaType type;
  std::string_view name;
  std::string_view key;
};

constexpr std::array<ReplicaTypeNames, 5> kReplicaTypes = {{
    {ReplicaType::kChief, "Chief", "chief"},
    {ReplicaType::kMaster, "Master", "master"},
    {ReplicaType::kPS, "PS", "ps"},
    {ReplicaType::kWorker, "Worker", "worker"},
    {ReplicaType::kEvaluator, "Evaluator", "evaluator"},
}};

const ReplicaTypeNames& NamesOf(ReplicaType type) {
  return kReplicaTypes[static_cast<std::size_t>(type)];
}

// One table per enumeration: its values in declaration order and their API spellings.
template <typename Enum, std::size_t N>
using Spellings = std::array<std::pair<Enum, std::string_view>, N>;

constexpr Spellings<RestartPolicy, 4> kRestartPolicies = {{
    {RestartPolicy::kNever, "Never"},
    {RestartPolicy::kOnFailure, "OnFailure"},
    {RestartPolicy::kAlways, "Always"},
    {RestartPolicy::kExitCode, "ExitCode"},
}};
constexpr Spellings<CleanPodPolicy, 3> kCleanPodPolicies = {{
    {CleanPodPolicy::kNone, "None"},
    {CleanPodPolicy::kRunning, "Running"},
    {CleanPodPolicy::kAll, "All"},
}};
constexpr Spellings<SuccessPolicy, 2> kSuccessPolicies = {{
    {SuccessPolicy::kDefault, ""},
    {SuccessPolicy::kAllWorkers, "AllWorkers"},
}};
constexpr Spellings<ConditionType, 7> kConditionTypes = {{
    {ConditionType::kCreated, "Created"},
    {ConditionType::kRunning, "Running"},
    {ConditionType::kRestarting, "Restarting"},
    {ConditionType::kSucceeded, "Succeeded"},
    {ConditionType::kSuspended, "Suspended"},
    {ConditionType::kFailed, "Failed"},
    {ConditionType::kStuck, "Stuck"},
}};
constexpr Spellings<ConditionStatus, 3> kConditionStatuses = {{
    {ConditionStatus::kTrue, "True"},
    {ConditionStatus::kFalse, "False"},
    {ConditionStatus::kUnknown, "Unknown"},
}};

template <typename Enum, std::size_t N>
std::string_view Spell(const Spellings<Enum, N>& table, Enum value) {
  return table[static_cast<std::size_t>(value)].second;
}

template <typename Enum, std::size_t N>
std::optional<Enum> Lookup(const Spellings<Enum, N>& table, std::string_view text) {
  for (const auto& [value, spelling] : table) {
    if (spelling == text) return value;
  }
  return std::nullopt;
}

}  // namespace

std::string_view ReplicaTypeName(ReplicaType type) { return NamesOf(type).name; }

std::string_view ReplicaTypeKey(ReplicaType type) { return NamesOf(type).key; }

std::optional<ReplicaType> ParseReplicaType(std::string_view name) {
  for (const auto& entry : kReplicaTypes) {
    if (entry.name == name) return entry.type;
  }
  return std::nullopt;
}

std::optional<ReplicaType> ParseReplicaTypeIgnoringCase(std::string_view name) {
  for (const auto& entry : kReplicaTypes) {
    if (EqualsIgnoringAsciiCase(entry.name, name)) return entry.type;
  }
  return std::nullopt;
}

bool IsChiefOrMaster(ReplicaType type) {
  return type == ReplicaType::kChief || type == ReplicaType::kMaster;
}

std::string_view ToString(RestartPolicy policy) { return Spell(kRestartPolicies, policy); }
std::string_view ToString(CleanPodPolicy policy) { return Spell(kCleanPodPolicies, policy); }
std::string_view ToString(SuccessPolicy policy) { return Spell(kSuccessPolicies, policy); }
std::string_view ToString(ConditionType type) { return Spell(kConditionTypes, type); }
std::string_view ToString(ConditionStatus status) { return Spell(kConditionStatuses, status); }

std::optional<RestartPolicy> ParseRestartPolicy(std::string_view text) {
  return Lookup(kRestartPolicies, text);
}
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view text) {
  return Lookup(kCleanPodPolicies, text);
}
std::optional<SuccessPolicy> ParseSuccessPolicy(std::string_view text) {
  return Lookup(kSuccessPolicies, text);
}
std::optional<ConditionType> ParseConditionType(std::string_view text) {
  return Lookup(kConditionTypes, text);
}
std::optional<ConditionStatus> ParseConditionStatus(std::string_view text) {
  return Lookup(kConditionStatuses, text);
}

std::string JobKey(const ObjectMeta& metadata) {
  return metadata.namespace_name + "/" + metadata.name;
}

std::string ReplicaName(std::string_view job_name, ReplicaType type, int index) {
  std::string name(job_name);
  name += '-';
  name += ReplicaTypeKey(type);
  name += '-';
  name += std::to_string(index);
  return name;
}

bool HasChiefOrMaster(const TFJobSpec& spec) {
  return spec.replica_specs.contains(ReplicaType::kChief) ||
         spec.replica_specs.contains(ReplicaType::kMaster);
}

int TotalReplicas(const TFJobSpec& spec) {
  int total = 0;
  for (const auto& [type, replica] : spec.replica_specs) total += replica.replicas;
  return total;
}

const nlohmann::json* FindDefaultContainer(const nlohmann::json& pod_template) {
  if (!pod_template.is_object()) return nullptr;
  const auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return nullptr;
  const auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array()) return nullptr;
  for (const auto& container : *containers) {
    if (!container.is_object()) continue;
    const auto name = container.find("name");
    if (name != container.end() && name->is_string() && *name == kDefaultContainerName) {
      return &container;
    }
  }
  return nullptr;
}

std::optional<std::string> ManagedByOtherController(const nlohmann::json& object) {
  // Each level may hold any JSON type: find() only on objects.
  const nlohmann::json* node = &object;
  for (const char* key : {"spec", "runPolicy", "managedBy"}) {
    if (!node->is_object()) return std::nullopt;
    const auto found = node->find(key);
    if (found == node->end()) return std::nullopt;
    node = &*found;
  }
  if (!node->is_string()) return std::nullopt;
  const std::string& manager = node->get_ref<const std::string&>();
  if (manager == kManagedByTrainingOperator) return std::nullopt;
  return manager;
}

bool IsSupportedManager(std::string_view manager) {
  return std::find(std::begin(kSupportedManagers), std::end(kSupportedManagers), manager) !=
         std::end(kSupportedManagers);
}

std::string TFJobsPath(std::string_view ns) {
  std::string path = "/apis/" + std::string(kGroup) + "/" + std::string(kVersion) + "/";
  if (!ns.empty()) path += "namespaces/" + std::string(ns) + "/";
  return path + std::string(kPlural);
}

std::string TFJobPath(std::string_view ns, std::string_view name) {
  return TFJobsPath(ns) + "/" + std::string(name);
}

}  // namespace taas::tfjob
