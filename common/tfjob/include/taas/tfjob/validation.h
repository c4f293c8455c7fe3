// Validation of a parsed TFJob with errors that name the field and say the fix, like Kubeflow's
// validating webhook (plus a few rules Kubeflow misses). Pure: no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// Upper bounds on a job's size. The status rules, the plan and TF_CONFIG allocate in proportion to
// the replica counts, so one job with a huge count could exhaust the operator for every namespace.
// The CRD (crds/kubeflow.org_tfjobs.yaml: `maximum` on replicas, a CEL rule on their sum) says the
// same numbers; crd_limits_test pins them to these constants.
inline constexpr int kMaxReplicasPerType = 1024;
inline constexpr int kMaxReplicasPerJob = 2048;

// What an installation allows; an operator flag can lower the per-job limit, never raise it.
struct Limits {
  int max_replicas_per_job = kMaxReplicasPerJob;
};

struct FieldError {
  std::string field;    // e.g. "spec.tfReplicaSpecs.Worker.replicas"
  std::string message;  // a predicate with the fix, e.g. "must be >= 0, got -1"

  bool operator==(const FieldError&) const = default;
};

// Every problem of the job, in a stable order (metadata, then replica types in kStatusOrder,
// then runPolicy); empty when valid. Rules:
//  - metadata.name: a DNS-1035 label (lower-case letters, digits and '-', starting with a
//    letter, at most 63 characters), as Kubeflow requires;
//  - spec.tfReplicaSpecs: at least one replica type; at most one of Chief/Master, with
//    replicas <= 1; 0 <= replicas <= kMaxReplicasPerType (or the per-job limit, if lower); the
//    sum over every type <= limits.max_replicas_per_job;
//  - template.spec.containers: present, one named `tensorflow`, every container has an image;
//  - runPolicy: ttlSecondsAfterFinished, backoffLimit >= 0; activeDeadlineSeconds > 0;
//    schedulingPolicy an object; managedBy one of kSupportedManagers.
// It sees one version of a job: that managedBy never changes is the CRD's rule (a transition rule
// on spec), as no webhook of this operator sees updates.
// Unknown replica types and invalid enum values cannot be represented in TFJob; the parser
// (serialization.h) reports them with the same field paths.
std::vector<FieldError> Validate(const TFJob& job, const Limits& limits = {});

// OK when `errors` is empty; otherwise InvalidArgument with the message
//   tfjob <ns>/<name>: <field> <message>[; <field> <message>]...
// and the first error's field attached as the payload read by ErrorField.
absl::Status ValidationStatus(const ObjectMeta& metadata, const std::vector<FieldError>& errors);

// An InvalidArgument "<field>: <message>" carrying `field` as payload (used by the parser).
absl::Status FieldStatus(const std::string& field, const std::string& message);

// The field path attached to a status by this library, e.g. for the UI's
// {"error": ..., "field": ...}; std::nullopt when there is none.
std::optional<std::string> ErrorField(const absl::Status& status);

// Parse + SetDefaults + Validate of one TFJob JSON object: what the operator, the UI server and
// the launcher want from user input.
absl::StatusOr<TFJob> LoadTFJob(const nlohmann::json& object, const Limits& limits = {});

}  // namespace taas::tfjob
