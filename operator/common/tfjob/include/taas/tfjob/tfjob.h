// TFJob API types (kubeflow.org/v1), shared by the operator and the local launcher.
//
// Pure data: no I/O. Serialisation, defaults and validation live beside these types so that both
// the operator (which feeds pod states) and the launcher (which feeds process states) apply the
// same rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace taas::tfjob {

// The replica types of a TFJob, in the order Kubeflow lists them. `kMaster` is accepted as a
// synonym of `kChief` in manifests but keeps its own name in replica names and TF_CONFIG, as
// Kubeflow does.
enum class ReplicaType { kChief, kMaster, kPS, kWorker, kEvaluator };

// The spelling used as a key of `spec.tfReplicaSpecs` ("Chief", "Master", "PS", ...).
std::string_view ReplicaTypeName(ReplicaType type);

// The lower-case spelling used in replica names, labels and TF_CONFIG ("chief", "ps", ...).
std::string_view ReplicaTypeKey(ReplicaType type);

// Parses a `spec.tfReplicaSpecs` key; std::nullopt for an unknown type.
std::optional<ReplicaType> ParseReplicaType(std::string_view name);

struct ReplicaSpec {
  std::int32_t replicas = 1;
};

struct TFJob {
  std::string name;
  std::string namespace_name = "default";
  std::map<ReplicaType, ReplicaSpec> replica_specs;
};

// `{job}-{type}-{index}`: the name of a replica's pod and headless service.
std::string ReplicaName(std::string_view job_name, ReplicaType type, int index);

}  // namespace taas::tfjob
