#include "taas/ui_server/job_form.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>

#include "taas/base/json_fields.h"
#include "taas/contract/env.h"
#include "taas/contract/job_secret.h"
#include "taas/contract/ports.h"
#include "taas/tfjob/defaults.h"
#include "taas/tfjob/validation.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;
using tfjob::ReplicaType;

constexpr std::size_t kMaxListItems = 64;
constexpr std::size_t kMaxItemLength = 1024;
constexpr std::size_t kMaxPathLength = 1024;

// ---- the form's values, and what they do to the job ----

// The form as read: each value the request held and its checks passed, else the key's default.
using FormValues = std::map<std::string_view, json, std::less<>>;

constexpr std::string_view kStrategyKey = "strategy";

bool Collective(const FormValues& form) {
  return form.at(kStrategyKey) == contract::kCollectiveStrategy;
}

// The containers of the replica types the job has among `types`: each replica type's template
// holds the one container the form builds (tfjob::kDefaultContainerName).
template <typename Types, typename Fn>
void ForContainers(tfjob::TFJob& job, const Types& types, Fn fn) {
  for (ReplicaType type : types) {
    auto spec = job.spec.replica_specs.find(type);
    if (spec != job.spec.replica_specs.end())
      fn(spec->second.pod_template["spec"]["containers"][0]);
  }
}
template <typename Fn>
void ForAllContainers(tfjob::TFJob& job, Fn fn) {
  for (auto& [type, spec] : job.spec.replica_specs) fn(spec.pod_template["spec"]["containers"][0]);
}
// Chief and evaluator run the workers' program on the workers' resources; the evaluator needs
// no GPU to evaluate checkpoints.
constexpr std::initializer_list<ReplicaType> kWorkerLike = {
    ReplicaType::kChief, ReplicaType::kWorker, ReplicaType::kEvaluator};
constexpr std::initializer_list<ReplicaType> kGpuTypes = {ReplicaType::kChief,
                                                          ReplicaType::kWorker};

// A replica type whose template runs the one container, with its metrics port (the tfjob-port
// is the TFJob rules' default: tfjob::SetDefaults).
void AddReplicaType(tfjob::TFJob& job, ReplicaType type, int replicas) {
  const json metrics_env = {{"name", contract::kMetricsPortEnv},
                            {"value", std::to_string(contract::kDefaultMetricsPort)}};
  const json metrics_port = {{"name", contract::kMetricsPortName},
                             {"containerPort", contract::kDefaultMetricsPort}};
  const json container = {{"name", tfjob::kDefaultContainerName},
                          {"env", json::array({metrics_env})},
                          {"ports", json::array({metrics_port})}};
  tfjob::ReplicaSpec& spec = job.spec.replica_specs[type];
  spec.replicas = replicas;
  spec.pod_template = {{"spec", {{"containers", json::array({container})}}}};
}

// CPU and memory are requested and limited alike (a guaranteed share: no neighbour slows a step).
void SetResource(json& container, std::string_view resource, const json& quantity) {
  for (const char* kind : {"requests", "limits"}) {
    container["resources"][kind][std::string(resource)] = quantity;
  }
}

// ---- the table ----

enum class FormType { kText, kWholeNumber, kSwitch, kTextList, kQuantity, kChoice };

struct FormField {
  std::string_view key = {};
  FormType type = FormType::kText;
  json default_value = nullptr;
  std::int64_t min = 0;  // kWholeNumber
  std::int64_t max = 0;
  std::vector<std::string_view> choices = {};  // kChoice
  bool required = false;
  // The TFJob field its errors name, and the TFJob paths whose errors belong to its input: a
  // pattern where `*` stands for any one segment, matching any path it is a prefix of (empty:
  // `path` itself).
  std::string path = {};
  std::string belongs = {};
  // A check of a value the request gave, beyond its type and range: a message, or "" (may be
  // null). Runs once every value is read, so it may look at the others.
  std::function<std::string(const FormValues& form, const json& value)> check = nullptr;
  // What the value does to the job being built (null: it only steers other keys). Applied in
  // table order: the keys that add replica types come before those that shape them.
  std::function<void(const FormValues& form, const json& value, tfjob::TFJob& job)> apply = nullptr;
  bool in_body = true;  // false: the request's path carries it
};

// Where the form's errors about a container's field point (the workers'), and the paths of that
// field in every container of the job.
const std::string kWorkerContainer = "spec.tfReplicaSpecs.Worker.template.spec.containers[0]";
const std::string kPsContainer = "spec.tfReplicaSpecs.PS.template.spec.containers[0]";
const std::string kAnyContainer = "spec.tfReplicaSpecs[*].template.spec.containers[*]";

bool IsImageReference(const std::string& image) {
  if (image.empty() || image.size() > 255) return false;
  if (image.front() == '-' || image.front() == '/' || image.front() == '.' ||
      image.front() == ':' || image.back() == '/' || image.back() == ':') {
    return false;
  }
  if (image.find("..") != std::string::npos || image.find("//") != std::string::npos) {
    return false;
  }
  return std::all_of(image.begin(), image.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '/' || c == ':' || c == '@';
  });
}

std::vector<FormField> IdentityFields() {
  return {
      {.key = "namespace",
       .path = "metadata.namespace",
       .apply = [](const FormValues&, const json& v,
                   tfjob::TFJob& job) { job.metadata.namespace_name = v.get<std::string>(); },
       .in_body = false},
      // Its rules are the TFJob rules' (tfjob::Validate on the job built).
      {.key = "name",
       .default_value = "",
       .required = true,
       .path = "metadata.name",
       .apply = [](const FormValues&, const json& v,
                   tfjob::TFJob& job) { job.metadata.name = v.get<std::string>(); }},
  };
}

// A switch that adds one replica of `type` (the workers' container: see kWorkerLike).
FormField OneReplica(std::string_view key, ReplicaType type) {
  const std::string path = "spec.tfReplicaSpecs." + std::string(tfjob::ReplicaTypeName(type));
  return {.key = key,
          .type = FormType::kSwitch,
          .default_value = false,
          .path = path,
          .apply = [type](const FormValues&, const json& v, tfjob::TFJob& job) {
            if (v == true) AddReplicaType(job, type, 1);
          }};
}

FormField WholeNumber(std::string_view key, int default_value, std::int64_t min, std::int64_t max,
                      std::string path, decltype(FormField::apply) apply) {
  return {.key = key,
          .type = FormType::kWholeNumber,
          .default_value = default_value,
          .min = min,
          .max = max,
          .path = std::move(path),
          .apply = std::move(apply)};
}

// Parameter servers, unless the strategy is all-reduce.
FormField PsReplicas() {
  FormField ps = WholeNumber("psReplicas", 1, 0, 64, "spec.tfReplicaSpecs.PS.replicas",
                             [](const FormValues& form, const json& v, tfjob::TFJob& job) {
                               if (!Collective(form) && v > 0) {
                                 AddReplicaType(job, ReplicaType::kPS, v.get<int>());
                               }
                             });
  ps.check = [](const FormValues& form, const json& v) -> std::string {
    if (!Collective(form) || v == 0) return "";
    return "psReplicas must be 0 or absent with strategy collective (all-reduce needs no "
           "parameter servers)";
  };
  return ps;
}

std::vector<FormField> ReplicaFields() {
  return {
      // The choice itself has no field of its own in the TFJob: all-reduce (no PS replicas; the
      // runtime reads TF_CONFIG without `ps` so) or parameter servers.
      {.key = kStrategyKey,
       .type = FormType::kChoice,
       .default_value = contract::kParameterServerStrategy,
       .choices = {contract::kParameterServerStrategy, contract::kCollectiveStrategy},
       .path = std::string(kStrategyKey)},
      PsReplicas(),
      WholeNumber("workerReplicas", 2, 1, tfjob::kMaxReplicasPerType,
                  "spec.tfReplicaSpecs.Worker.replicas",
                  [](const FormValues&, const json& v, tfjob::TFJob& job) {
                    AddReplicaType(job, ReplicaType::kWorker, v.get<int>());
                  }),
      OneReplica("chief", ReplicaType::kChief),
      OneReplica("evaluator", ReplicaType::kEvaluator),
  };
}

// CPU or memory (`resource`) of the PS containers, or of the others (workers, chief, evaluator).
// A PS container's pattern is the more specific one, so its errors are the PS key's.
FormField ResourceField(std::string_view key, const char* default_value, const char* resource,
                        bool ps) {
  const std::vector<ReplicaType> types =
      ps ? std::vector<ReplicaType>{ReplicaType::kPS} : std::vector<ReplicaType>(kWorkerLike);
  const std::string any = ps ? "spec.tfReplicaSpecs.PS.template.spec.containers[*]" : kAnyContainer;
  return {.key = key,
          .type = FormType::kQuantity,
          .default_value = default_value,
          .path = (ps ? kPsContainer : kWorkerContainer) + ".resources.requests." + resource,
          .belongs = any + ".resources[*]." + resource,
          .apply = [types, resource](const FormValues&, const json& v, tfjob::TFJob& job) {
            ForContainers(job, types, [&](json& c) { SetResource(c, resource, v); });
          }};
}

// GPUs go to workers and the chief (kGpuTypes).
FormField GpusPerWorker() {
  FormField gpus = WholeNumber(
      "gpusPerWorker", 0, 0, 64,
      kWorkerContainer + ".resources.limits[" + std::string(kGpuResource) + "]",
      [](const FormValues&, const json& v, tfjob::TFJob& job) {
        if (v == 0) return;
        ForContainers(job, kGpuTypes,
                      [&](json& c) { c["resources"]["limits"][std::string(kGpuResource)] = v; });
      });
  gpus.belongs = kAnyContainer + ".resources[*][" + std::string(kGpuResource) + "]";
  return gpus;
}

std::vector<FormField> ResourceFields() {
  return {
      GpusPerWorker(),
      ResourceField("psCpu", "1", "cpu", /*ps=*/true),
      ResourceField("psMemory", "2Gi", "memory", /*ps=*/true),
      ResourceField("workerCpu", "2", "cpu", /*ps=*/false),
      ResourceField("workerMemory", "4Gi", "memory", /*ps=*/false),
  };
}

// A list that goes into every container as it is (never through a shell).
FormField ContainerList(std::string_view key) {
  return {.key = key,
          .type = FormType::kTextList,
          .default_value = json::array(),
          .path = kWorkerContainer + "." + std::string(key),
          .belongs = kAnyContainer + "." + std::string(key),
          .apply = [key](const FormValues&, const json& v, tfjob::TFJob& job) {
            if (!v.empty()) ForAllContainers(job, [&](json& c) { c[std::string(key)] = v; });
          }};
}

std::vector<FormField> ProgramFields() {
  return {
      {.key = "image",
       .default_value = "",
       .required = true,
       .path = kWorkerContainer + ".image",
       .belongs = kAnyContainer + ".image",
       .check = [](const FormValues&, const json& v) -> std::string {
         const std::string image = v.get<std::string>();
         if (image.empty()) return "image is required";
         return IsImageReference(image) ? ""
                                        : "image \"" + image + "\" is not a valid image reference";
       },
       .apply = [](const FormValues&, const json& v,
                   tfjob::TFJob& job) { ForAllContainers(job, [&](json& c) { c["image"] = v; }); }},
      ContainerList("command"),
      ContainerList("args"),
  };
}

// ---- data from a PersistentVolumeClaim ----

constexpr std::string_view kDataClaimKey = "dataClaim";
// The pod volume the claim becomes (the job secret's volume has a name of its own).
constexpr std::string_view kDataVolume = "data";
const std::string kAnyVolumes = "spec.tfReplicaSpecs[*].template.spec.volumes";

// What is wrong with a data mount path ("" when nothing): an absolute, clean path, not the root
// and not over or under the job secret's mount, which the operator adds to every replica.
std::string MountPathProblem(const std::string& path) {
  if (path.empty() || path.front() != '/') {
    return "dataMountPath \"" + path + "\" must be an absolute path (it starts with /)";
  }
  if (path == "/") return "dataMountPath must not be / (the data would hide the container's files)";
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return "dataMountPath must not contain control characters";
  }
  const std::string padded = path + "/";
  if (padded.find("/../") != std::string::npos || padded.find("/./") != std::string::npos ||
      path.find("//") != std::string::npos) {
    return "dataMountPath \"" + path + "\" must not hold . or .. segments or empty ones";
  }
  const std::string secret(contract::kJobSecretMountPath);
  const auto inside = [](const std::string& a, const std::string& b) {
    return a == b || a.rfind(b + "/", 0) == 0;
  };
  if (inside(path, secret) || inside(secret, path)) {
    return "dataMountPath \"" + path + "\" would overlap the job secret's mount, " + secret;
  }
  return "";
}

// The claim is mounted read-only at the same path in the replicas that read data (workers, chief,
// evaluator: kWorkerLike); parameter servers read none. The claim should be ReadOnlyMany or
// ReadWriteMany when the replicas may land on several nodes (docs/web-ui.md).
std::vector<FormField> DataFields() {
  return {
      {.key = kDataClaimKey,
       .default_value = "",
       .path =
           "spec.tfReplicaSpecs.Worker.template.spec.volumes[0].persistentVolumeClaim.claimName",
       .belongs = kAnyVolumes,
       .check = [](const FormValues&, const json& v) -> std::string {
         const std::string name = v.get<std::string>();
         if (name.empty() || IsDns1123Subdomain(name)) return "";
         return "dataClaim \"" + name +
                "\" is not a PersistentVolumeClaim name (a DNS-1123 subdomain: lower-case letters, "
                "digits, '-' and '.')";
       },
       .apply =
           [](const FormValues&, const json& v, tfjob::TFJob& job) {
             if (v == "") return;
             const json volume = {
                 {"name", kDataVolume},
                 {"persistentVolumeClaim", {{"claimName", v}, {"readOnly", true}}}};
             for (ReplicaType type : kWorkerLike) {
               auto spec = job.spec.replica_specs.find(type);
               if (spec == job.spec.replica_specs.end()) continue;
               spec->second.pod_template["spec"]["volumes"].push_back(volume);
             }
           }},
      {.key = "dataMountPath",
       .default_value = "/data",
       .path = kWorkerContainer + ".volumeMounts[0].mountPath",
       .belongs = kAnyContainer + ".volumeMounts",
       .check = [](const FormValues&, const json& v) -> std::string {
         return MountPathProblem(v.get<std::string>());
       },
       .apply =
           [](const FormValues& form, const json& v, tfjob::TFJob& job) {
             if (form.at(kDataClaimKey) == "") return;
             const json mount = {{"name", kDataVolume}, {"mountPath", v}, {"readOnly", true}};
             ForContainers(job, kWorkerLike, [&](json& c) { c["volumeMounts"].push_back(mount); });
           }},
  };
}

std::vector<FormField> TrainingFields() {
  using tfjob::RestartPolicy;
  return {
      // Parameter servers only: all-reduce averages every worker's gradients each step.
      {.key = "mode",
       .type = FormType::kChoice,
       .default_value = "sync",
       .choices = {"sync", "async"},
       .path = kWorkerContainer + ".env[" + std::string(contract::kSyncEnv) + "]",
       .belongs = kAnyContainer + ".env[" + std::string(contract::kSyncEnv) + "]",
       .check = [](const FormValues& form, const json& v) -> std::string {
         if (!Collective(form) || v == "sync") return "";
         return "mode must be sync or absent with strategy collective (all-reduce averages every "
                "worker's gradients each step)";
       },
       .apply =
           [](const FormValues& form, const json& v, tfjob::TFJob& job) {
             if (Collective(form)) return;
             const json sync = {{"name", contract::kSyncEnv},
                                {"value", v == "sync" ? "true" : "false"}};
             ForAllContainers(job, [&](json& c) { c["env"].insert(c["env"].begin(), sync); });
           }},
      {.key = "restartPolicy",
       .type = FormType::kChoice,
       .default_value = tfjob::ToString(RestartPolicy::kOnFailure),
       .choices = {tfjob::ToString(RestartPolicy::kAlways),
                   tfjob::ToString(RestartPolicy::kOnFailure),
                   tfjob::ToString(RestartPolicy::kNever),
                   tfjob::ToString(RestartPolicy::kExitCode)},
       .path = "spec.tfReplicaSpecs.Worker.restartPolicy",
       .belongs = "spec.tfReplicaSpecs[*].restartPolicy",
       .apply =
           [](const FormValues&, const json& v, tfjob::TFJob& job) {
             const auto policy = tfjob::ParseRestartPolicy(v.get<std::string>());
             for (auto& [type, spec] : job.spec.replica_specs) spec.restart_policy = *policy;
           }},
      // The PriorityClass of every replica's pods: how the scheduler ranks them, and whom it may
      // preempt for them (empty: the cluster's default).
      {.key = "priorityClassName",
       .default_value = "",
       .path = "spec.tfReplicaSpecs.Worker.template.spec.priorityClassName",
       .belongs = "spec.tfReplicaSpecs[*].template.spec.priorityClassName",
       .check = [](const FormValues&, const json& v) -> std::string {
         const std::string name = v.get<std::string>();
         if (name.empty() || IsDns1123Subdomain(name)) return "";
         return "priorityClassName \"" + name +
                "\" is not a PriorityClass name (a DNS-1123 subdomain)";
       },
       .apply =
           [](const FormValues&, const json& v, tfjob::TFJob& job) {
             if (v == "") return;
             for (auto& [type, spec] : job.spec.replica_specs) {
               spec.pod_template["spec"]["priorityClassName"] = v;
             }
           }},
      WholeNumber("backoffLimit", 3, 0, 100, "spec.runPolicy.backoffLimit",
                  [](const FormValues&, const json& v, tfjob::TFJob& job) {
                    job.spec.run_policy.backoff_limit = v.get<int>();
                  }),
  };
}

// Every key of the form, in the order the job is built (see FormField::apply).
const std::vector<FormField>& FormFields() {
  static const auto* kFields = [] {
    auto* fields = new std::vector<FormField>();
    for (auto section : {IdentityFields, ReplicaFields, ResourceFields, ProgramFields, DataFields,
                         TrainingFields}) {
      for (FormField& field : section()) fields->push_back(std::move(field));
    }
    return fields;
  }();
  return *kFields;
}

// ---- reading a value ----

bool IsWholeNumber(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::floor(d) == d && std::abs(d) < 1e15;
}

// The text items of a list, or the problem with it.
std::string CheckTextList(const FormField& f, const json& v) {
  const std::string key(f.key);
  if (!v.is_array()) return key + " must be a list of strings";
  if (v.size() > kMaxListItems) {
    return key + " has more than " + std::to_string(kMaxListItems) + " items";
  }
  for (const json& item : v) {
    if (!item.is_string()) return key + " must be a list of strings";
    const std::string& text = item.get_ref<const std::string&>();
    if (text.size() > kMaxItemLength) {
      return key + " has an item longer than " + std::to_string(kMaxItemLength);
    }
    for (unsigned char c : text) {
      if (c < 0x20 && c != '\t') return key + " items must not contain control characters";
    }
  }
  return "";
}

std::string ChoicesText(const FormField& f) {
  std::string text;
  for (std::size_t i = 0; i < f.choices.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == f.choices.size() ? " or " : ", ") + std::string(f.choices[i]);
  }
  return text;
}

// What is wrong with a value of `f`'s type and range ("" when nothing); `v` is not null.
std::string CheckValue(const FormField& f, const json& v) {
  const std::string key(f.key);
  switch (f.type) {
    case FormType::kWholeNumber: {
      if (!IsWholeNumber(v)) return key + " must be a whole number";
      const auto n = v.is_number_integer() ? v.get<std::int64_t>()
                                           : static_cast<std::int64_t>(v.get<double>());
      if (n >= f.min && n <= f.max) return "";
      return key + " must be between " + std::to_string(f.min) + " and " + std::to_string(f.max) +
             ", got " + std::to_string(n);
    }
    case FormType::kSwitch:
      return v.is_boolean() ? "" : key + " must be true or false";
    case FormType::kTextList:
      return CheckTextList(f, v);
    case FormType::kText:
    case FormType::kQuantity:
    case FormType::kChoice:
      break;
  }
  if (!v.is_string()) return key + " must be a string";
  const std::string& text = v.get_ref<const std::string&>();
  if (text.size() > kMaxItemLength) {
    return key + " is longer than " + std::to_string(kMaxItemLength) + " characters";
  }
  if (f.type == FormType::kQuantity) {
    const auto quantity = ParseQuantity(text);
    if (!quantity) {
      return key + " \"" + text + "\" is not a Kubernetes quantity (e.g. 500m, 2, 512Mi, 4Gi)";
    }
    if (*quantity <= 0) return key + " must be more than 0";
  }
  if (f.type == FormType::kChoice &&
      std::find(f.choices.begin(), f.choices.end(), text) == f.choices.end()) {
    return key + " must be " + ChoicesText(f) + ", got \"" + text + "\"";
  }
  return "";
}

// A whole number read as such (1e3 and 3.0 are whole numbers in JSON).
json Normalised(const FormField& f, const json& v) {
  if (f.type == FormType::kWholeNumber && v.is_number_float()) {
    return static_cast<std::int64_t>(v.get<double>());
  }
  return v;
}

// Reads every key: the values (defaults where absent or refused) and the errors, each at its
// field's TFJob path.
FormValues ReadValues(const json& body, const std::string& namespace_name,
                      std::vector<FieldError>* errors) {
  FormValues form;
  std::vector<const FormField*> given;
  for (const FormField& f : FormFields()) {
    form[f.key] = f.default_value;
    if (!f.in_body) {
      form[f.key] = namespace_name;
      continue;
    }
    const json& v = json_fields::MemberOrNull(body, f.key);
    if (v.is_null()) {
      if (f.required) errors->push_back(FieldErrorAt(f.path, std::string(f.key) + " is required"));
      continue;
    }
    if (std::string problem = CheckValue(f, v); !problem.empty()) {
      errors->push_back(FieldErrorAt(f.path, std::move(problem)));
      continue;
    }
    form[f.key] = Normalised(f, v);
    given.push_back(&f);
  }
  // The checks that look at other keys, once every value is known.
  for (const FormField* f : given) {
    if (f->check == nullptr) continue;
    if (std::string problem = f->check(form, form[f->key]); !problem.empty()) {
      errors->push_back(FieldErrorAt(f->path, std::move(problem)));
      form[f->key] = f->default_value;
    }
  }
  return form;
}

tfjob::TFJob BuildJob(const FormValues& form) {
  tfjob::TFJob job;
  job.metadata.labels["app.kubernetes.io/created-by"] = "taas-ui";
  for (const FormField& f : FormFields()) {
    if (f.apply != nullptr) f.apply(form, form.at(f.key), job);
  }
  tfjob::SetDefaults(job);
  return job;
}

// The TFJob rules' verdict on the job, each error worded in the form's terms where it has one.
std::vector<FieldError> RuleErrors(const tfjob::TFJob& job) {
  std::vector<FieldError> errors;
  for (const tfjob::FieldError& e : tfjob::Validate(job)) {
    std::optional<std::string> key = FormKeyOf(e.field);
    errors.push_back({e.field, key.value_or(e.field) + " " + e.message, std::move(key)});
  }
  return errors;
}

// ---- error paths ----

// The segments of a TFJob path: "a.b[c.d].e[0]" -> a, b, c.d, e, 0 (so "tfReplicaSpecs[Worker]",
// as Kubeflow's webhook writes it, and "tfReplicaSpecs.Worker" are the same path). Empty for a
// path too long to be one.
std::vector<std::string_view> PathSegments(std::string_view path) {
  std::vector<std::string_view> segments;
  if (path.size() > kMaxPathLength) return segments;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      continue;
    }
    const bool bracket = path[i] == '[';
    const std::size_t start = i + (bracket ? 1 : 0);
    const std::size_t end = bracket ? path.find(']', start) : path.find_first_of(".[", start);
    const std::size_t stop = end == std::string_view::npos ? path.size() : end;
    segments.push_back(path.substr(start, stop - start));
    i = stop + (bracket && end != std::string_view::npos ? 1 : 0);
  }
  return segments;
}

// How well `pattern` matches `path` (a prefix of it, `*` standing for any one segment): more
// segments, then fewer wildcards, is better; nullopt when it does not match.
std::optional<std::pair<std::size_t, std::size_t>> MatchQuality(
    const std::vector<std::string_view>& pattern, const std::vector<std::string_view>& path) {
  if (pattern.empty() || pattern.size() > path.size()) return std::nullopt;
  std::size_t wildcards = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == "*") {
      ++wildcards;
    } else if (pattern[i] != path[i]) {
      return std::nullopt;
    }
  }
  return std::pair{pattern.size(), pattern.size() - wildcards};
}

// ---- the cluster's bounds ----

std::string HumanBytes(double bytes) {
  const char* units[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  int u = 0;
  while (bytes >= 1024 && u < 5) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%s", bytes, units[u]);
  return buf;
}

std::string Cores(double cores) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", cores);
  return buf;
}

// The path of a replica type's container (the one named tfjob::kDefaultContainerName, else the
// first), for errors about its resources.
std::string ContainerPath(ReplicaType type, const tfjob::ReplicaSpec& spec) {
  const json* container = tfjob::FindDefaultContainer(spec.pod_template);
  const json& containers =
      json_fields::MemberOrNull(json_fields::MemberOrNull(spec.pod_template, "spec"), "containers");
  std::size_t index = 0;
  if (container != nullptr && containers.is_array()) {
    while (index < containers.size() && &containers[index] != container) ++index;
  }
  return "spec.tfReplicaSpecs." + std::string(tfjob::ReplicaTypeName(type)) +
         ".template.spec.containers[" + std::to_string(index) + "]";
}

// What one replica of each type asks of a node that no node has; each resource once.
std::vector<FieldError> NodeFitErrors(const tfjob::TFJob& job, const ClusterLimits& limits) {
  std::vector<FieldError> errors;
  bool gpu = false, cpu = false, memory = false;
  for (const auto& [type, spec] : job.spec.replica_specs) {
    const Resources asked = PodRequests(spec.pod_template);
    const std::string name(tfjob::ReplicaTypeName(type));
    const std::string path = ContainerPath(type, spec) + ".resources.";
    if (!gpu && asked.gpu > static_cast<double>(limits.max_node_gpus)) {
      gpu = true;
      errors.push_back(FieldErrorAt(path + "limits[" + std::string(kGpuResource) + "]",
                                    "no node can give a " + name + " replica " + Cores(asked.gpu) +
                                        " GPUs: the largest node has " +
                                        std::to_string(limits.max_node_gpus) + " allocatable"));
    }
    if (!cpu && asked.cpu > limits.max_node_cpu) {
      cpu = true;
      errors.push_back(
          FieldErrorAt(path + "requests.cpu", "a " + name + " replica's " + Cores(asked.cpu) +
                                                  " CPUs fit on no node: the largest node has " +
                                                  Cores(limits.max_node_cpu) + " allocatable"));
    }
    if (!memory && asked.memory > limits.max_node_memory) {
      memory = true;
      errors.push_back(FieldErrorAt(path + "requests.memory",
                                    "a " + name + " replica's " + HumanBytes(asked.memory) +
                                        " of memory fit on no node: the largest node has " +
                                        HumanBytes(limits.max_node_memory) + " allocatable"));
    }
  }
  return errors;
}

}  // namespace

std::vector<FormKeyType> FormKeyTypes() {
  std::vector<FormKeyType> out;
  for (const FormField& f : FormFields()) {
    FormKeyType t{f.key, "string", "", f.path, f.in_body};
    switch (f.type) {
      case FormType::kWholeNumber:
        t.type_script = "number";
        t.accepts = std::to_string(f.min) + " to " + std::to_string(f.max);
        break;
      case FormType::kSwitch:
        t.type_script = "boolean";
        break;
      case FormType::kTextList:
        t.type_script = "string[]";
        t.accepts = "at most " + std::to_string(kMaxListItems) + " items";
        break;
      case FormType::kQuantity:
        t.accepts = "a Kubernetes quantity above 0";
        break;
      case FormType::kChoice:
        t.type_script.clear();
        for (std::string_view choice : f.choices) {
          t.type_script += (t.type_script.empty() ? "'" : " | '") + std::string(choice) + "'";
        }
        break;
      case FormType::kText:
        break;
    }
    if (f.required) t.accepts = t.accepts.empty() ? "required" : "required; " + t.accepts;
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<std::string> FormKeyOf(std::string_view field) {
  const std::vector<std::string_view> path = PathSegments(field);
  const FormField* best = nullptr;
  std::pair<std::size_t, std::size_t> best_quality{0, 0};
  for (const FormField& f : FormFields()) {
    const auto quality = MatchQuality(PathSegments(f.belongs.empty() ? f.path : f.belongs), path);
    if (quality && *quality > best_quality) {
      best = &f;
      best_quality = *quality;
    }
  }
  if (best == nullptr) return std::nullopt;
  return std::string(best->key);
}

FieldError FieldErrorAt(std::string field, std::string message) {
  std::optional<std::string> key = FormKeyOf(field);
  return {std::move(field), std::move(message), std::move(key)};
}

void AddErrors(std::vector<FieldError>* errors, std::vector<FieldError> more) {
  for (FieldError& e : more) {
    const bool seen = std::any_of(errors->begin(), errors->end(), [&](const FieldError& f) {
      return e.form_key ? f.form_key == e.form_key : f.field == e.field;
    });
    if (!seen) errors->push_back(std::move(e));
  }
}

JobFormResult ReadJobForm(const json& body, const std::string& namespace_name) {
  JobFormResult result;
  if (!body.is_object()) {
    // Nothing to read: this one error, and the defaults' job for the cluster checks.
    std::vector<FieldError> none;
    result.job = BuildJob(ReadValues(json::object(), namespace_name, &none));
    result.errors.push_back({"", "the job form must be a JSON object", std::nullopt});
    return result;
  }
  for (const auto& item : body.items()) {
    const std::string& key = item.key();
    const bool known = std::any_of(FormFields().begin(), FormFields().end(),
                                   [&](const FormField& f) { return f.in_body && f.key == key; });
    if (!known) result.errors.push_back({key, "unknown field " + key, std::nullopt});
  }
  result.job = BuildJob(ReadValues(body, namespace_name, &result.errors));
  AddErrors(&result.errors, RuleErrors(result.job));
  return result;
}

std::vector<FieldError> CheckJobAgainstCluster(const tfjob::TFJob& job,
                                               const ClusterLimits& limits) {
  // Errors about the count point at the replica type that asks for the most GPUs (else the most
  // replicas): the count to lower.
  const auto largest = std::max_element(
      job.spec.replica_specs.begin(), job.spec.replica_specs.end(),
      [](const auto& a, const auto& b) {
        const double ga = a.second.replicas * PodRequests(a.second.pod_template).gpu;
        const double gb = b.second.replicas * PodRequests(b.second.pod_template).gpu;
        return ga != gb ? ga < gb : a.second.replicas < b.second.replicas;
      });
  if (largest == job.spec.replica_specs.end()) return {};
  const std::string count_path =
      "spec.tfReplicaSpecs." + std::string(tfjob::ReplicaTypeName(largest->first)) + ".replicas";
  if (limits.nodes == 0) {
    return {FieldErrorAt(count_path, "the cluster has no Ready node to run replicas on")};
  }
  std::vector<FieldError> errors = NodeFitErrors(job, limits);
  const std::int64_t gpus = JobGpus(job.spec);
  const bool gpus_fit_nodes = std::none_of(errors.begin(), errors.end(), [](const FieldError& e) {
    return e.field.find(kGpuResource) != std::string::npos;
  });
  if (gpus_fit_nodes && gpus > limits.total_gpus) {
    errors.push_back(
        FieldErrorAt(count_path, "the job's replicas need " + std::to_string(gpus) + " GPUs (" +
                                     std::to_string(largest->second.replicas) + " " +
                                     std::string(tfjob::ReplicaTypeName(largest->first)) + " x " +
                                     Cores(PodRequests(largest->second.pod_template).gpu) +
                                     "); the cluster has " + std::to_string(limits.total_gpus) +
                                     " allocatable"));
  }
  return errors;
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

ErrorAnswer ErrorsAnswer(std::vector<FieldError> errors) {
  ErrorAnswer answer;
  if (!errors.empty()) {
    answer.error = errors.front().message;
    answer.field = errors.front().field;
    answer.form_key = errors.front().form_key;
  }
  answer.errors = std::move(errors);
  return answer;
}

}  // namespace taas::ui_server
