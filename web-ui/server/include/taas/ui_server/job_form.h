// The New-job form of the UI, from one table (job_form.cc, FormFields): for each of its keys, the
// type and range, the default, the TFJob field its errors name, the TFJob paths whose errors
// belong to its input, and what its value does to the job. From that table:
//  - the request (JSON sent by the browser; docs/web-ui.md) is read and checked;
//  - the job is built as a typed tfjob::TFJob (never by pasting user text into YAML or a shell
//    line), checked by the shared TFJob rules (tfjob::Validate) and, by the API, against what the
//    cluster can ever schedule (CheckJobAgainstCluster), and serialised once by
//    tfjob::TFJobToJson;
//  - every error names the TFJob field (as the API server names fields) and the form key of its
//    input (FormKeyOf), so the front end places ours and the API server's next to the right input;
//  - the front end's JobForm and FormKey types are generated (api_types.h).
// Adding a form field is one row in that table, plus its input in the front end.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "taas/tfjob/tfjob.h"
#include "taas/ui_server/rows.h"
#include "taas/ui_server/views.h"

namespace taas::ui_server {

// A form key as the front end's types show it: its TypeScript type ("number", "'sync' |
// 'async'"), what it accepts ("1 to 1024"), the TFJob field its errors name, and whether the
// request's body carries it (the namespace is in the request's path).
struct FormKeyType {
  std::string_view key;
  std::string type_script;
  std::string accepts;
  std::string field;
  bool in_body = true;
};
std::vector<FormKeyType> FormKeyTypes();

// The form key whose input an error at the TFJob path `field` belongs to: ours
// ("spec.tfReplicaSpecs.Worker.replicas" -> "workerReplicas") and the API server's alike
// ("spec.tfReplicaSpecs[Chief].template.spec.containers[0].image" -> "image"); nullopt for a
// field no input sets ("spec.successPolicy").
std::optional<std::string> FormKeyOf(std::string_view field);

// A FieldError at `field` with its form key.
FieldError FieldErrorAt(std::string field, std::string message);

// Adds `more` to `errors`, leaving out errors about an input (a form key; a field without one)
// that already has one: the first word on each input is the one shown.
void AddErrors(std::vector<FieldError>* errors, std::vector<FieldError> more);

struct JobFormResult {
  // The job the form describes, built from every valid value (a key whose value was refused
  // keeps its default, so that the cluster checks can report in the same answer).
  tfjob::TFJob job;
  // The form's own problems (unknown keys, wrong types, out-of-range values, malformed names,
  // images and quantities) and then the TFJob rules' on the job; empty when the job is valid.
  std::vector<FieldError> errors;
};

// Reads and checks the form (`body`, any JSON) for `namespace_name`, and builds its job.
JobFormResult ReadJobForm(const nlohmann::json& body, const std::string& namespace_name);

// Checks a job against what the cluster can ever schedule: each replica's GPUs, CPU and memory
// must fit on one Ready node, and all replicas' GPUs within the cluster.
std::vector<FieldError> CheckJobAgainstCluster(const tfjob::TFJob& job,
                                               const ClusterLimits& limits);

// A copy of `tfjob` named `new_name` for re-submission: spec, labels and annotations kept;
// status, uid, resourceVersion and other server-set fields dropped.
nlohmann::json CloneTfJob(const nlohmann::json& tfjob, const std::string& new_name);

// Kubernetes object-name rules (for namespaces and the names in a request's path; a TFJob's own
// name follows the stricter TFJob rules): a DNS-1123 label (lower-case alphanumerics and '-', at
// most 63 characters, starting and ending alphanumeric), and a DNS-1123 subdomain (also '.', at
// most 253 characters), as pod, container and PriorityClass names are.
bool IsDns1123Label(const std::string& name);
bool IsDns1123Subdomain(const std::string& name);

// The error answer for `errors` (at least one): the first one's message, field and form key, and
// all of them.
ErrorAnswer ErrorsAnswer(std::vector<FieldError> errors);

}  // namespace taas::ui_server
