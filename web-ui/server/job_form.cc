#include "taas/ui_server/job_form.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "taas/base/json_fields.h"
#include "taas/contract/env.h"
#include "taas/contract/ports.h"
#include "taas/tfjob/defaults.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/tfjob.h"
#include "taas/tfjob/validation.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxPs = 64;
constexpr std::int64_t kMaxGpusPerWorker = 64;
constexpr std::int64_t kMaxBackoffLimit = 100;
constexpr std::size_t kMaxListItems = 64;
constexpr std::size_t kMaxItemLength = 1024;

const std::string kWorkerContainer = "spec.tfReplicaSpecs.Worker.template.spec.containers[0]";
const std::string kPsContainer = "spec.tfReplicaSpecs.PS.template.spec.containers[0]";

const std::map<std::string, std::string>& FieldPaths() {
  static const auto* kPaths = new std::map<std::string, std::string>{
      {"name", "metadata.name"},
      // The choice itself: it has no field of its own in the TFJob.
      {"strategy", "strategy"},
      {"image", kWorkerContainer + ".image"},
      {"command", kWorkerContainer + ".command"},
      {"args", kWorkerContainer + ".args"},
      {"psReplicas", "spec.tfReplicaSpecs.PS.replicas"},
      {"workerReplicas", "spec.tfReplicaSpecs.Worker.replicas"},
      {"gpusPerWorker", kWorkerContainer + ".resources.limits[nvidia.com/gpu]"},
      {"chief", "spec.tfReplicaSpecs.Chief"},
      {"evaluator", "spec.tfReplicaSpecs.Evaluator"},
      {"psCpu", kPsContainer + ".resources.requests.cpu"},
      {"psMemory", kPsContainer + ".resources.requests.memory"},
      {"workerCpu", kWorkerContainer + ".resources.requests.cpu"},
      {"workerMemory", kWorkerContainer + ".resources.requests.memory"},
      {"mode", kWorkerContainer + ".env[TF_SYNC]"},
      {"restartPolicy", "spec.tfReplicaSpecs.Worker.restartPolicy"},
      {"backoffLimit", "spec.runPolicy.backoffLimit"},
  };
  return *kPaths;
}

class Reader {
 public:
  Reader(const json& body, std::vector<FieldError>* errors) : body_(body), errors_(errors) {}

  void Fail(const std::string& key, const std::string& message) {
    errors_->push_back({FormFieldPath(key), message});
  }

  // Returns false (after recording an error) when the key is present with the wrong type.
  bool String(const std::string& key, std::string* out) {
    auto it = body_.find(key);
    if (it == body_.end() || it->is_null()) return true;
    if (!it->is_string()) {
      Fail(key, key + " must be a string");
      return false;
    }
    *out = it->get<std::string>();
    if (out->size() > kMaxItemLength) {
      Fail(key, key + " is longer than " + std::to_string(kMaxItemLength) + " characters");
      return false;
    }
    return true;
  }

  void Integer(const std::string& key, std::int64_t min, std::int64_t max, std::int64_t* out) {
    auto it = body_.find(key);
    if (it == body_.end() || it->is_null()) return;
    if (!it->is_number_integer() &&
        !(it->is_number_float() && std::floor(it->get<double>()) == it->get<double>() &&
          std::abs(it->get<double>()) < 1e15)) {
      Fail(key, key + " must be a whole number");
      return;
    }
    const auto value = it->is_number_integer() ? it->get<std::int64_t>()
                                               : static_cast<std::int64_t>(it->get<double>());
    if (value < min || value > max) {
      Fail(key, key + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                    ", got " + std::to_string(value));
      return;
    }
    *out = value;
  }

  void Bool(const std::string& key, bool* out) {
    auto it = body_.find(key);
    if (it == body_.end() || it->is_null()) return;
    if (!it->is_boolean()) {
      Fail(key, key + " must be true or false");
      return;
    }
    *out = it->get<bool>();
  }

  void List(const std::string& key, std::vector<std::string>* out) {
    auto it = body_.find(key);
    if (it == body_.end() || it->is_null()) return;
    if (!it->is_array()) {
      Fail(key, key + " must be a list of strings");
      return;
    }
    if (it->size() > kMaxListItems) {
      Fail(key, key + " has more than " + std::to_string(kMaxListItems) + " items");
      return;
    }
    std::vector<std::string> items;
    for (const json& item : *it) {
      if (!item.is_string()) {
        Fail(key, key + " must be a list of strings");
        return;
      }
      const std::string text = item.get<std::string>();
      if (text.size() > kMaxItemLength) {
        Fail(key, key + " has an item longer than " + std::to_string(kMaxItemLength));
        return;
      }
      for (unsigned char c : text) {
        if (c < 0x20 && c != '\t') {
          Fail(key, key + " items must not contain control characters");
          return;
        }
      }
      items.push_back(text);
    }
    *out = std::move(items);
  }

  void Quantity(const std::string& key, const char* what, std::string* out) {
    std::string text = *out;
    if (!String(key, &text)) return;
    const auto value = ParseQuantity(text);
    if (!value) {
      Fail(key, std::string(what) + " \"" + text +
                    "\" is not a Kubernetes quantity (e.g. 500m, 2, 512Mi, 4Gi)");
      return;
    }
    if (*value <= 0) {
      Fail(key, std::string(what) + " must be more than 0");
      return;
    }
    *out = text;
  }

 private:
  const json& body_;
  std::vector<FieldError>* errors_;
};

bool IsImageReference(const std::string& image) {
  if (image.empty() || image.size() > 255) return false;
  if (image.front() == '-' || image.front() == '/' || image.front() == '.' ||
      image.front() == ':' || image.back() == '/' || image.back() == ':') {
    return false;
  }
  if (image.find("..") != std::string::npos || image.find("//") != std::string::npos) {
    return false;
  }
  for (unsigned char c : image) {
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '/' || c == ':' ||
          c == '@')) {
      return false;
    }
  }
  return true;
}

std::string FormatGpus(std::int64_t n) { return std::to_string(n); }

std::string HumanBytes(double bytes) {
  const char* units[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  int u = 0;
  while (bytes >= 1024 && u < 5) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%s", bytes, units[u]);
  return buf;
}

json Container(const JobForm& form, const std::string& cpu, const std::string& memory,
               std::int64_t gpus) {
  json container = {{"name", tfjob::kDefaultContainerName}, {"image", form.image}};
  if (!form.command.empty()) container["command"] = form.command;
  if (!form.args.empty()) container["args"] = form.args;
  container["env"] = json::array({{{"name", contract::kMetricsPortEnv},
                                   {"value", std::to_string(contract::kDefaultMetricsPort)}}});
  // Parameter servers only: all-reduce is synchronous by nature.
  if (!form.collective) {
    const json sync_env = {{"name", contract::kSyncEnv}, {"value", form.sync ? "true" : "false"}};
    container["env"].insert(container["env"].begin(), sync_env);
  }
  container["ports"] = json::array(
      {{{"name", tfjob::kDefaultPortName}, {"containerPort", tfjob::kDefaultPort}},
       {{"name", contract::kMetricsPortName}, {"containerPort", contract::kDefaultMetricsPort}}});
  json resources = {{"requests", {{"cpu", cpu}, {"memory", memory}}},
                    {"limits", {{"cpu", cpu}, {"memory", memory}}}};
  if (gpus > 0) resources["limits"][std::string(kGpuResource)] = gpus;
  container["resources"] = resources;
  return container;
}

json ReplicaSpec(const JobForm& form, std::int64_t replicas, const json& container) {
  return {{"replicas", replicas},
          {"restartPolicy", form.restart_policy},
          {"template", {{"spec", {{"containers", json::array({container})}}}}}};
}

// The TFJob rules' verdict on the form's name: a DNS-1035 label that leaves room for the name of
// every replica the form asks for (taas::tfjob::Validate on a job of the form's replica counts).
std::vector<tfjob::FieldError> NameErrors(const JobForm& form) {
  tfjob::TFJob job;
  job.metadata.name = form.name;
  auto add = [&](tfjob::ReplicaType type, std::int64_t replicas) {
    if (replicas <= 0) return;
    job.spec.replica_specs[type].replicas =
        static_cast<std::int32_t>(std::min<std::int64_t>(replicas, tfjob::kMaxReplicasPerType));
  };
  add(tfjob::ReplicaType::kPS, form.ps_replicas);
  add(tfjob::ReplicaType::kWorker, form.worker_replicas);
  if (form.chief) add(tfjob::ReplicaType::kChief, 1);
  if (form.evaluator) add(tfjob::ReplicaType::kEvaluator, 1);
  std::vector<tfjob::FieldError> errors = tfjob::Validate(job);
  errors.erase(
      std::remove_if(errors.begin(), errors.end(),
                     [](const tfjob::FieldError& e) { return e.field != "metadata.name"; }),
      errors.end());
  return errors;
}

// The strategy, and what it rules out: all-reduce has no parameter servers and is synchronous.
void ReadStrategy(const json& body, Reader& r, JobForm& form) {
  const std::string ps(contract::kParameterServerStrategy);
  const std::string collective(contract::kCollectiveStrategy);
  std::string strategy = ps;
  if (!r.String("strategy", &strategy)) return;
  if (strategy != ps && strategy != collective) {
    r.Fail("strategy",
           "strategy must be " + ps + " or " + collective + ", got \"" + strategy + "\"");
    return;
  }
  form.collective = strategy == collective;
  if (!form.collective) return;
  if (form.ps_replicas > 0 && body.contains("psReplicas")) {
    r.Fail("psReplicas", "psReplicas must be 0 or absent with strategy " + collective +
                             " (all-reduce needs no parameter servers)");
  }
  form.ps_replicas = 0;
  if (!form.sync) {
    r.Fail("mode", "mode must be sync or absent with strategy " + collective +
                       " (all-reduce averages every worker's gradients each step)");
  }
}

}  // namespace

std::vector<FieldError> CheckTfJobRules(const json& tfjob) {
  auto parsed = tfjob::TFJobFromJson(tfjob);
  if (!parsed.ok()) {
    return {
        {tfjob::ErrorField(parsed.status()).value_or(""), std::string(parsed.status().message())}};
  }
  tfjob::SetDefaults(*parsed);
  std::vector<FieldError> errors;
  for (const tfjob::FieldError& e : tfjob::Validate(*parsed)) {
    errors.push_back({e.field, e.field + " " + e.message});
  }
  return errors;
}

std::string FormFieldPath(const std::string& key) {
  auto it = FieldPaths().find(key);
  return it == FieldPaths().end() ? key : it->second;
}

bool IsDns1123Label(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  for (unsigned char c : name) {
    if (!(std::islower(c) || std::isdigit(c) || c == '-')) return false;
  }
  return std::isalnum(static_cast<unsigned char>(name.front())) &&
         std::isalnum(static_cast<unsigned char>(name.back()));
}

bool IsDns1123Subdomain(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (unsigned char c : name) {
    if (!(std::islower(c) || std::isdigit(c) || c == '-' || c == '.')) return false;
  }
  return std::isalnum(static_cast<unsigned char>(name.front())) &&
         std::isalnum(static_cast<unsigned char>(name.back()));
}

std::vector<FieldError> ParseJobForm(const json& body, const std::string& namespace_name,
                                     JobForm* out) {
  std::vector<FieldError> errors;
  if (!body.is_object()) return {{"", "the job form must be a JSON object"}};
  for (const auto& [key, value] : body.items()) {
    if (FieldPaths().count(key) == 0) errors.push_back({key, "unknown field " + key});
  }
  JobForm form;
  form.namespace_name = namespace_name;
  Reader r(body, &errors);
  r.String("name", &form.name);
  r.String("image", &form.image);
  r.List("command", &form.command);
  r.List("args", &form.args);
  r.Integer("psReplicas", 0, kMaxPs, &form.ps_replicas);
  r.Integer("workerReplicas", 1, tfjob::kMaxReplicasPerType, &form.worker_replicas);
  r.Integer("gpusPerWorker", 0, kMaxGpusPerWorker, &form.gpus_per_worker);
  r.Bool("chief", &form.chief);
  r.Bool("evaluator", &form.evaluator);
  r.Quantity("psCpu", "PS CPU", &form.ps_cpu);
  r.Quantity("psMemory", "PS memory", &form.ps_memory);
  r.Quantity("workerCpu", "worker CPU", &form.worker_cpu);
  r.Quantity("workerMemory", "worker memory", &form.worker_memory);
  std::string mode = "sync";
  if (r.String("mode", &mode)) {
    if (mode != "sync" && mode != "async") r.Fail("mode", "mode must be sync or async");
    form.sync = mode == "sync";
  }
  ReadStrategy(body, r, form);
  if (r.String("restartPolicy", &form.restart_policy)) {
    static const std::set<std::string> kPolicies = {"Always", "OnFailure", "Never", "ExitCode"};
    if (kPolicies.count(form.restart_policy) == 0) {
      r.Fail("restartPolicy",
             "restart policy must be Always, OnFailure, Never or ExitCode, got \"" +
                 form.restart_policy + "\"");
    }
  }
  r.Integer("backoffLimit", 0, kMaxBackoffLimit, &form.backoff_limit);

  for (const tfjob::FieldError& e : NameErrors(form)) r.Fail("name", "name " + e.message);
  if (!IsImageReference(form.image)) {
    r.Fail("image", form.image.empty()
                        ? "image is required"
                        : "image \"" + form.image + "\" is not a valid image reference");
  }
  *out = std::move(form);
  return errors;
}

std::vector<FieldError> CheckFormAgainstCluster(const JobForm& form, const ClusterLimits& limits) {
  std::vector<FieldError> errors;
  auto fail = [&](const std::string& key, const std::string& message) {
    errors.push_back({FormFieldPath(key), message});
  };
  if (limits.nodes == 0) {
    fail("workerReplicas", "the cluster has no Ready node to run replicas on");
    return errors;
  }
  if (form.gpus_per_worker > limits.max_node_gpus) {
    fail("gpusPerWorker", "no node can give a worker " + FormatGpus(form.gpus_per_worker) +
                              " GPUs: the largest node has " + FormatGpus(limits.max_node_gpus) +
                              " allocatable");
  } else if (form.gpus_per_worker * form.worker_replicas > limits.total_gpus) {
    fail("workerReplicas",
         std::to_string(form.worker_replicas) + " workers x " + FormatGpus(form.gpus_per_worker) +
             " GPUs need " + FormatGpus(form.gpus_per_worker * form.worker_replicas) +
             " GPUs; the cluster has " + FormatGpus(limits.total_gpus) + " allocatable");
  }
  auto check = [&](const std::string& key, const std::string& text, double max, bool bytes) {
    const double value = ParseQuantity(text).value_or(0);
    if (value > max) {
      fail(key, key + " " + text + " fits on no node: the largest node has " +
                    (bytes ? HumanBytes(max) : std::to_string(max).substr(0, 6)) + " allocatable");
    }
  };
  check("workerCpu", form.worker_cpu, limits.max_node_cpu, false);
  check("workerMemory", form.worker_memory, limits.max_node_memory, true);
  if (form.ps_replicas > 0) {
    check("psCpu", form.ps_cpu, limits.max_node_cpu, false);
    check("psMemory", form.ps_memory, limits.max_node_memory, true);
  }
  return errors;
}

json BuildTfJob(const JobForm& form) {
  json specs = json::object();
  const json worker = Container(form, form.worker_cpu, form.worker_memory, form.gpus_per_worker);
  if (form.chief) specs["Chief"] = ReplicaSpec(form, 1, worker);
  if (form.ps_replicas > 0) {
    specs["PS"] =
        ReplicaSpec(form, form.ps_replicas, Container(form, form.ps_cpu, form.ps_memory, 0));
  }
  specs["Worker"] = ReplicaSpec(form, form.worker_replicas, worker);
  if (form.evaluator) {
    specs["Evaluator"] =
        ReplicaSpec(form, 1, Container(form, form.worker_cpu, form.worker_memory, 0));
  }
  return {{"apiVersion", tfjob::kApiVersion},
          {"kind", tfjob::kKind},
          {"metadata",
           {{"name", form.name},
            {"namespace", form.namespace_name},
            {"labels", {{"app.kubernetes.io/created-by", "taas-ui"}}}}},
          {"spec",
           {{"runPolicy", {{"backoffLimit", form.backoff_limit}, {"cleanPodPolicy", "None"}}},
            {"tfReplicaSpecs", specs}}}};
}

json CloneTfJob(const json& tfjob, const std::string& new_name) {
  namespace jf = taas::json_fields;
  json metadata = {{"name", new_name}};
  static const json kNoMetadata = json::object();  // NOLINT: an immutable empty value.
  const json* found = jf::Object(tfjob, "metadata");
  const json& old = found ? *found : kNoMetadata;
  if (auto ns = jf::String(old, "namespace")) metadata["namespace"] = *ns;
  for (const char* key : {"labels", "annotations"}) {
    if (const json* map = jf::Object(old, key)) metadata[key] = *map;
  }
  json& annotations = metadata["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  annotations.erase("kubectl.kubernetes.io/last-applied-configuration");
  annotations["taas.dev/cloned-from"] = jf::StringOr(old, "name", "");
  const json* spec = jf::Find(tfjob, "spec");
  return {{"apiVersion", jf::StringOr(tfjob, "apiVersion", taas::tfjob::kApiVersion)},
          {"kind", taas::tfjob::kKind},
          {"metadata", metadata},
          {"spec", spec ? *spec : json::object()}};
}

json ErrorsJson(const std::vector<FieldError>& errors) {
  json list = json::array();
  for (const FieldError& e : errors) list.push_back({{"field", e.field}, {"message", e.message}});
  json out = {{"errors", list}};
  if (!errors.empty()) {
    out["error"] = errors.front().message;
    out["field"] = errors.front().field;
  }
  return out;
}

}  // namespace taas::ui_server
