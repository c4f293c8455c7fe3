// Job-level settings: the runtime settings (environment variables of the `tensorflow` container)
// that every replica reading them must be given alike, and the one rule that finds where a job's
// replica specs disagree on them. A TFJob has no job-level env, so a setting is repeated in each
// replica spec; a spec that leaves it out, or sets it otherwise, trains with another value than
// its peers (docs/trainer-runtime.md, "Job-level settings", says what each does then). The
// operator emits the result as a Warning event once per job generation, the local launcher as a
// warning line at start. Pure: no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// The jobs a setting matters in: every job, only those with parameter servers (a PS replica
// spec with replicas > 0), or only all-reduce ones (none).
enum class SettingScope { kEveryJob, kParameterServers, kAllReduce };

struct SharedSetting {
  std::string_view env;              // e.g. "TF_MAX_STEPS" (taas/contract/env.h)
  std::vector<ReplicaType> read_by;  // Chief and Master always together
  SettingScope scope = SettingScope::kEveryJob;
  std::string_view when_they_differ;  // what happens, for the warning
};

// Every setting that must agree, in the order of the docs' table.
const std::vector<SharedSetting>& SharedSettings();

// One setting the replica specs disagree on: the value each replica type that reads it gets (its
// container's env `value`, "valueFrom <json>" for a reference, nullopt when unset: the runtime's
// default), each at most 64 characters.
struct SettingDisagreement {
  const SharedSetting* setting = nullptr;
  std::map<ReplicaType, std::optional<std::string>> values;

  bool operator==(const SettingDisagreement&) const = default;
};

// The settings of SharedSettings() on which the job's replica types disagree, in table order.
// Compared are the `tensorflow` containers of the replica types that read a setting and have
// replicas > 0, in jobs of its scope; `every_replica` holds values every replica gets over its
// spec's (the local launcher's --env and its TF_LOGDIR). Values are compared as written ("1000"
// and "1e3" differ; so do unset and a value equal to the default: say it in every spec). An unset
// setting in a container with `envFrom` is unknown (a ConfigMap may hold it) and compared with
// nothing.
std::vector<SettingDisagreement> DisagreeingSettings(
    const TFJobSpec& spec, const std::map<std::string, std::string>& every_replica = {});

// The reason of the operator's Warning event that carries DisagreementMessage.
inline constexpr std::string_view kSettingsDisagreeReason = "SettingsDisagree";

// One message for all of them, e.g.
//   replica specs disagree on settings their replicas must share: TF_MAX_STEPS (Chief "20000",
//   Worker unset): each replica stops at its own max steps, ...; set each alike in every replica
//   spec that reads it (docs/trainer-runtime.md, "Job-level settings")
// Empty when `disagreements` is.
std::string DisagreementMessage(const std::vector<SettingDisagreement>& disagreements);

}  // namespace taas::tfjob
