#include "taas/tfjob/settings.h"

#include <set>

#include "taas/base/json_fields.h"
#include "taas/contract/env.h"

namespace taas::tfjob {
namespace {

namespace jf = json_fields;

constexpr std::size_t kMaxValueChars = 64;

using RT = ReplicaType;
const std::vector<RT> kTrainers = {RT::kChief, RT::kMaster, RT::kWorker};
const std::vector<RT> kTrainersAndEvaluator = {RT::kChief, RT::kMaster, RT::kWorker,
                                               RT::kEvaluator};
const std::vector<RT> kTrainersAndPs = {RT::kChief, RT::kMaster, RT::kWorker, RT::kPS};
const std::vector<RT> kEveryType = {RT::kChief, RT::kMaster, RT::kWorker, RT::kPS, RT::kEvaluator};

std::string Bounded(std::string text) {
  if (text.size() > kMaxValueChars) text = text.substr(0, kMaxValueChars - 3) + "...";
  return text;
}

// What the `tensorflow` container of `spec` sets `name` to: a value, a reference, unset
// (nullopt), or unknown (false in `known`: unset with envFrom).
std::optional<std::string> ValueIn(const ReplicaSpec& spec, std::string_view name, bool& known) {
  known = true;
  const nlohmann::json* container = FindDefaultContainer(spec.pod_template);
  if (container == nullptr) return std::nullopt;
  if (const nlohmann::json* env = jf::Array(*container, "env")) {
    for (const nlohmann::json& var : *env) {
      if (jf::StringOr(var, "name") != name) continue;
      if (auto value = jf::String(var, "value")) return Bounded(*value);
      if (const nlohmann::json* from = jf::Find(var, "valueFrom")) {
        return Bounded("valueFrom " + from->dump());
      }
      const nlohmann::json* value = jf::Find(var, "value");
      return value == nullptr ? std::string() : Bounded(value->dump());
    }
  }
  const nlohmann::json* env_from = jf::Array(*container, "envFrom");
  known = env_from == nullptr || env_from->empty();
  return std::nullopt;
}

std::string Shown(const std::optional<std::string>& value) {
  return value ? "\"" + *value + "\"" : "unset";
}

}  // namespace

const std::vector<SharedSetting>& SharedSettings() {
  static const std::vector<SharedSetting> settings = {
      {contract::kMaxStepsEnv, kTrainersAndEvaluator, SettingScope::kEveryJob,
       "every trainer stops at its own max steps (under all-reduce the others wait for it until "
       "they time out), the evaluator at its own"},
      {contract::kModelDirEnv, kTrainersAndEvaluator, SettingScope::kEveryJob,
       "the evaluator reads checkpoints where the chief writes none, a restarted worker misses "
       "the chief's done marker"},
      {contract::kStrategyEnv, kEveryType, SettingScope::kEveryJob,
       "a replica whose value contradicts the job's shape (PS replicas or none) fails at start"},
      {contract::kSyncEnv, kTrainers, SettingScope::kParameterServers,
       "the chief's value counts (it sets up the parameter servers); a worker's is ignored"},
      {contract::kReplicasToAggregateEnv, kTrainers, SettingScope::kParameterServers,
       "the chief's value counts (it sets up the parameter servers); a worker's is ignored"},
      {contract::kPsLanesEnv, kTrainersAndPs, SettingScope::kParameterServers,
       "clients and parameter servers split variables over different lanes: requests fail"},
      {contract::kPartitionBytesEnv, kTrainers, SettingScope::kParameterServers,
       "trainers place variables on the parameter servers differently: requests fail"},
      {contract::kReplicasPerWorkerEnv, kTrainers, SettingScope::kAllReduce,
       "workers run different numbers of model replicas: the all-reduce group does not match"},
      {contract::kAllReduceBucketBytesEnv, kTrainers, SettingScope::kAllReduce,
       "workers cut gradients into different buckets: the all-reduces do not match"},
      {contract::kAllReduceChunkBytesEnv, kTrainers, SettingScope::kAllReduce,
       "workers cut all-reduces into different pieces: the ring does not match"},
      {contract::kCheckVariablesStepsEnv, kTrainers, SettingScope::kAllReduce,
       "workers check their variables at different steps: a check waits for peers that never "
       "join it"},
  };
  return settings;
}

std::vector<SettingDisagreement> DisagreeingSettings(
    const TFJobSpec& spec, const std::map<std::string, std::string>& every_replica) {
  const auto ps = spec.replica_specs.find(ReplicaType::kPS);
  const bool with_ps = ps != spec.replica_specs.end() && ps->second.replicas > 0;
  std::vector<SettingDisagreement> out;
  for (const SharedSetting& setting : SharedSettings()) {
    if ((setting.scope == SettingScope::kParameterServers && !with_ps) ||
        (setting.scope == SettingScope::kAllReduce && with_ps)) {
      continue;
    }
    const auto forced = every_replica.find(std::string(setting.env));
    if (forced != every_replica.end()) continue;  // every replica gets the same
    SettingDisagreement found{&setting, {}};
    std::set<std::optional<std::string>> distinct;
    for (ReplicaType type : setting.read_by) {
      const auto it = spec.replica_specs.find(type);
      if (it == spec.replica_specs.end() || it->second.replicas <= 0) continue;
      bool known = true;
      std::optional<std::string> value = ValueIn(it->second, setting.env, known);
      if (!known) continue;
      distinct.insert(value);
      found.values[type] = std::move(value);
    }
    if (distinct.size() > 1) out.push_back(std::move(found));
  }
  return out;
}

std::string DisagreementMessage(const std::vector<SettingDisagreement>& disagreements) {
  if (disagreements.empty()) return "";
  std::string out = "replica specs disagree on settings their replicas must share: ";
  for (std::size_t i = 0; i < disagreements.size(); ++i) {
    const SettingDisagreement& d = disagreements[i];
    out += (i ? "; " : "") + std::string(d.setting->env) + " (";
    bool first = true;
    for (const auto& [type, value] : d.values) {
      out += (first ? "" : ", ") + std::string(ReplicaTypeName(type)) + " " + Shown(value);
      first = false;
    }
    out += "): " + std::string(d.setting->when_they_differ);
  }
  return out +
         "; set each alike in every replica spec that reads it (docs/trainer-runtime.md, "
         "\"Job-level settings\")";
}

}  // namespace taas::tfjob
