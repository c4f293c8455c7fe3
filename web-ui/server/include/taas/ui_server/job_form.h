// The New-job form of the UI: its fields, their server-side checks, and the TFJob built from them.
//
// The form is JSON sent by the browser (see docs/web-ui.md for its keys). Every field is checked
// here; the TFJob is then assembled as JSON values (never by pasting user text into YAML or a
// shell line) and checked again by the shared TFJob rules (taas::tfjob) before it is sent to the
// API server. Errors name the TFJob field they concern (`spec.tfReplicaSpecs.Worker.replicas`),
// the same names the API server uses, so the form places both kinds next to the right input.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "taas/ui_server/views.h"

namespace taas::ui_server {

struct FieldError {
  std::string field;
  std::string message;
};

struct JobForm {
  std::string name;
  std::string namespace_name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  // All-reduce training (TFJob without PS replicas; the runtime reads TF_CONFIG without `ps` so)
  // or parameter servers.
  bool collective = false;
  std::int64_t ps_replicas = 1;
  std::int64_t worker_replicas = 2;
  std::int64_t gpus_per_worker = 0;
  bool chief = false;
  bool evaluator = false;
  std::string ps_cpu = "1";
  std::string ps_memory = "2Gi";
  std::string worker_cpu = "2";
  std::string worker_memory = "4Gi";
  bool sync = true;
  std::string restart_policy = "OnFailure";
  std::int64_t backoff_limit = 3;
};

// The TFJob field an error about a form key concerns ("workerReplicas" ->
// "spec.tfReplicaSpecs.Worker.replicas"); the key itself for keys without one.
std::string FormFieldPath(const std::string& key);

// Reads and checks the form (`body`, a JSON object) for `namespace_name`. Unknown keys, wrong
// types, out-of-range counts, malformed names, images and quantities are all errors; an empty
// result means `out` is complete and valid. Otherwise `out` still holds every valid field (the
// others keep their defaults), so the cluster checks can report their errors in the same answer.
std::vector<FieldError> ParseJobForm(const nlohmann::json& body, const std::string& namespace_name,
                                     JobForm* out);

// Checks a valid form against what the cluster can ever schedule: a worker's GPUs, CPU and memory
// must fit on one Ready node, and all workers' GPUs within the cluster.
std::vector<FieldError> CheckFormAgainstCluster(const JobForm& form, const ClusterLimits& limits);

// The kubeflow.org/v1 TFJob for a valid form.
nlohmann::json BuildTfJob(const JobForm& form);

// A copy of `tfjob` named `new_name` for re-submission: spec, labels and annotations kept;
// status, uid, resourceVersion and other server-set fields dropped.
nlohmann::json CloneTfJob(const nlohmann::json& tfjob, const std::string& new_name);

// Every problem the shared TFJob rules (taas::tfjob: parse, defaults, validation) find in
// `tfjob`, each with its field path. No rule lives here.
std::vector<FieldError> CheckTfJobRules(const nlohmann::json& tfjob);

// Kubernetes object-name rules (for namespaces and the names in a request's path; a TFJob's own
// name follows the stricter TFJob rules): a DNS-1123 label (lower-case alphanumerics and '-', at
// most 63 characters, starting and ending alphanumeric), and a DNS-1123 subdomain (also '.', at
// most 253 characters), as pod and container names are.
bool IsDns1123Label(const std::string& name);
bool IsDns1123Subdomain(const std::string& name);

// JSON {"error": first message, "field": its field, "errors": [{field, message}...]}.
nlohmann::json ErrorsJson(const std::vector<FieldError>& errors);

}  // namespace taas::ui_server
