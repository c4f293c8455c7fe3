#include "taas/tfjob/labels.h"

namespace taas::tfjob {

Labels JobLabels(std::string_view job_name) {
  return {{std::string(kLabelOperatorName), std::string(kOperatorName)},
          {std::string(kLabelJobName), std::string(job_name)}};
}

Labels ReplicaTypeLabels(std::string_view job_name, ReplicaType type) {
  Labels labels = JobLabels(job_name);
  labels[std::string(kLabelReplicaType)] = std::string(ReplicaTypeKey(type));
  return labels;
}

Labels ReplicaIndexLabels(std::string_view job_name, ReplicaType type, int index) {
  Labels labels = ReplicaTypeLabels(job_name, type);
  labels[std::string(kLabelReplicaIndex)] = std::to_string(index);
  return labels;
}

Labels ReplicaLabels(const TFJobSpec& spec, std::string_view job_name, ReplicaType type,
                     int index) {
  Labels labels = ReplicaIndexLabels(job_name, type, index);
  if (IsMasterRole(spec, type, index)) {
    labels[std::string(kLabelJobRole)] = std::string(kJobRoleMaster);
  }
  return labels;
}

bool IsMasterRole(const TFJobSpec& spec, ReplicaType type, int index) {
  if (HasChiefOrMaster(spec)) return IsChiefOrMaster(type);
  return type == ReplicaType::kWorker && index == 0;
}

bool IsResultEvaluator(ReplicaType type, int index) {
  return type == ReplicaType::kEvaluator && index == 0;
}

std::string SelectorString(const Labels& labels) {
  std::string selector;
  for (const auto& [key, value] : labels) {
    if (!selector.empty()) selector += ',';
    selector += key;
    selector += '=';
    selector += value;
  }
  return selector;
}

nlohmann::json LabelSelectorJson(const Labels& labels) { return {{"matchLabels", labels}}; }

}  // namespace taas::tfjob
