// TFJob <-> JSON exactly as the Kubernetes API (and Kubeflow) spells it, and YAML manifests.
//
// Parsing is strict where users write (the spec): an unknown or ill-typed field is an
// InvalidArgument error whose message starts with the field path, e.g.
//   spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "two"
//   spec.runPolicy.cleanPodPolicy: unknown value "Sometimes"; use one of All, Running, None
// and whose field path is also attached as a payload (see ErrorField in validation.h).
// It is lenient where the API server writes: unknown fields of `metadata` are kept verbatim in
// ObjectMeta::other, unknown fields of `status` are ignored, and the pod template is kept whole.
// Missing fields take Kubeflow's defaults (tfjob.h); defaults.h adds the `tfjob-port`.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "taas/base/status.h"
#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// A TFJob object. `apiVersion` and `kind`, when present, must be kubeflow.org/v1 and TFJob
// (the UI may omit them). `tfReplicaSpecs` keys are accepted in any letter case and normalised
// ("worker" -> Worker), as Kubeflow's defaulting does; an unknown type is an error naming the key.
// A `status` that cannot be read is dropped (empty status): the operator rebuilds it from the
// pods instead of failing a running job over what someone wrote to its status subresource.
absl::StatusOr<TFJob> TFJobFromJson(const nlohmann::json& object);

// The whole object with apiVersion and kind. Spec fields are written explicitly even when they
// hold defaults (like a defaulted Kubeflow object); `status` is omitted when it is empty.
nlohmann::json TFJobToJson(const TFJob& job);

nlohmann::json SpecToJson(const TFJobSpec& spec);

// Exactly as Kubeflow writes status: camelCase, omitempty like the Go struct tags,
// `replicaStatuses` keyed by "PS"/"Worker"/..., timestamps in RFC 3339.
nlohmann::json StatusToJson(const JobStatus& status);

// Lenient: unknown fields are ignored; an ill-typed known field is an error naming it
// (`status.conditions[0].lastUpdateTime: ...`).
absl::StatusOr<JobStatus> StatusFromJson(const nlohmann::json& status);

// Every non-empty document of a (multi-document) YAML stream, converted to JSON with YAML 1.1
// scalar resolution as kubectl does (plain true/false/yes/no/on/off are booleans, plain numbers
// are numbers, plain null/~ and empty values are null, quoted scalars are always strings).
// InvalidArgument with the line and column on a syntax error. Bounded (the input is a user's):
// at most kMaxYamlBytes of text (the API server's own request limit), kMaxYamlNodes values after
// aliases are expanded, and kMaxYamlDepth levels of nesting.
inline constexpr std::size_t kMaxYamlBytes = 3 << 20;
inline constexpr std::size_t kMaxYamlNodes = 1 << 20;
inline constexpr int kMaxYamlDepth = 100;
absl::StatusOr<std::vector<nlohmann::json>> YamlToJson(std::string_view yaml);

// Every document must be a TFJob; errors of document i (0-based) of a multi-document stream are
// prefixed with "document i: ". Returns the jobs as parsed (not defaulted, not validated).
absl::StatusOr<std::vector<TFJob>> TFJobsFromYaml(std::string_view yaml);

}  // namespace taas::tfjob
