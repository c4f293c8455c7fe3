#include "taas/tfjob/tfjob.h"

#include <array>

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

}  // namespace

std::string_view ReplicaTypeName(ReplicaType type) { return NamesOf(type).name; }

std::string_view ReplicaTypeKey(ReplicaType type) { return NamesOf(type).key; }

std::optional<ReplicaType> ParseReplicaType(std::string_view name) {
  for (const auto& entry : kReplicaTypes) {
    if (entry.name == name) return entry.type;
  }
  return std::nullopt;
}

std::string ReplicaName(std::string_view job_name, ReplicaType type, int index) {
  std::string name(job_name);
  name += '-';
  name += ReplicaTypeKey(type);
  name += '-';
  name += std::to_string(index);
  return name;
}

}  // namespace taas::tfjob
