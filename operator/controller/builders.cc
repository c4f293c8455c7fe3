#include "taas/controller/builders.h"

#include <cerrno>
#include <cstring>

#include "taas/base/json_fields.h"
#include "taas/contract/env.h"
#include "taas/contract/job_secret.h"
#include "taas/contract/ports.h"
#include "taas/tfjob/defaults.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/restart.h"
#include "taas/tfjob/rfc3339.h"

namespace taas::controller {

namespace tf = taas::tfjob;
namespace contract = taas::contract;
namespace jf = taas::json_fields;
using nlohmann::json;

namespace {

// The pod volume that holds the job's Secret.
constexpr std::string_view kJobSecretVolume = "taas-job-secret";

constexpr std::string_view kPodGroupLabel = "scheduling.x-k8s.io/pod-group";

json LabelsJson(const tf::Labels& labels, json base) {
  if (!base.is_object()) base = json::object();
  for (const auto& [k, v] : labels) base[k] = v;
  return base;
}

const json* FindOwner(const json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  const auto refs = meta->find("ownerReferences");
  if (refs == meta->end() || !refs->is_array()) return nullptr;
  for (const auto& ref : *refs) {
    if (ref.is_object() && ref.value("controller", false) && ref.value("kind", "") == "TFJob")
      return &ref;
  }
  return nullptr;
}

std::optional<tf::Time> TimeField(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return std::nullopt;
  auto parsed = tf::ParseRfc3339(object[key].get<std::string>());
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

// `list` without the entries named `name` (a template's own entry is replaced, never doubled).
json WithoutNamed(const json& list, std::string_view name) {
  json out = json::array();
  if (!list.is_array()) return out;
  for (const auto& item : list) {
    if (jf::StringOr(item, "name", "") != name) out.push_back(item);
  }
  return out;
}

bool GetsChiefToken(const tf::TFJobSpec& spec, tf::ReplicaType type, int index) {
  return type == tf::ReplicaType::kPS || tf::IsMasterRole(spec, type, index);
}

std::string MountedFile(std::string_view key) {
  return std::string(contract::kJobSecretMountPath) + "/" + std::string(key);
}

// The Secret volume with the keys this replica may read.
json JobSecretVolume(const tf::TFJob& job, bool chief_token) {
  json items = json::array({{{"key", contract::kJobTokenKey}, {"path", contract::kJobTokenKey}}});
  if (chief_token)
    items.push_back({{"key", contract::kChiefTokenKey}, {"path", contract::kChiefTokenKey}});
  return {{"name", kJobSecretVolume},
          {"secret", {{"secretName", JobSecretName(job.metadata.name)}, {"items", items}}}};
}

// The mount, token-file variables and pod IP of the replica container (TF_CONFIG's container).
void AddJobSecretToContainer(json& container, bool chief_token) {
  json mounts =
      WithoutNamed(jf::Find(container, "volumeMounts") ? container["volumeMounts"] : json::array(),
                   kJobSecretVolume);
  mounts.push_back({{"name", kJobSecretVolume},
                    {"mountPath", contract::kJobSecretMountPath},
                    {"readOnly", true}});
  container["volumeMounts"] = std::move(mounts);
  json env = jf::Array(container, "env") ? container["env"] : json::array();
  for (std::string_view name :
       {contract::kJobTokenFileEnv, contract::kChiefTokenFileEnv, contract::kPodIpEnv}) {
    env = WithoutNamed(env, name);
  }
  env.push_back(
      {{"name", contract::kJobTokenFileEnv}, {"value", MountedFile(contract::kJobTokenKey)}});
  if (chief_token) {
    env.push_back(
        {{"name", contract::kChiefTokenFileEnv}, {"value", MountedFile(contract::kChiefTokenKey)}});
  }
  env.push_back({{"name", contract::kPodIpEnv},
                 {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}});
  container["env"] = std::move(env);
}

void AddJobSecret(const tf::TFJob& job, tf::ReplicaType type, int index, json& pod_spec) {
  const bool chief_token = GetsChiefToken(job.spec, type, index);
  json volumes = WithoutNamed(jf::Find(pod_spec, "volumes") ? pod_spec["volumes"] : json::array(),
                              kJobSecretVolume);
  volumes.push_back(JobSecretVolume(job, chief_token));
  pod_spec["volumes"] = std::move(volumes);
  if (!jf::Array(pod_spec, "containers")) return;
  for (auto& container : pod_spec["containers"]) {
    if (jf::StringOr(container, "name", "") == tf::kDefaultContainerName)
      AddJobSecretToContainer(container, chief_token);
  }
}

}  // namespace

json OwnerReference(const tf::TFJob& job) {
  return {{"apiVersion", std::string(tf::kApiVersion)},
          {"kind", std::string(tf::kKind)},
          {"name", job.metadata.name},
          {"uid", job.metadata.uid},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

json BuildPod(const tf::TFJob& job, tf::ReplicaType type, int index, const BuildOptions& options) {
  const tf::ReplicaSpec& spec = job.spec.replica_specs.at(type);
  const json& tmpl = spec.pod_template;
  std::string name = tf::ReplicaName(job.metadata.name, type, index);

  json metadata =
      tmpl.contains("metadata") && tmpl["metadata"].is_object() ? tmpl["metadata"] : json::object();
  for (const char* drop : {"name", "generateName", "namespace", "resourceVersion", "uid",
                           "creationTimestamp", "ownerReferences"}) {
    metadata.erase(drop);
  }
  metadata["name"] = name;
  metadata["namespace"] = job.metadata.namespace_name;
  metadata["labels"] = LabelsJson(tf::ReplicaLabels(job.spec, job.metadata.name, type, index),
                                  metadata.value("labels", json::object()));
  metadata["ownerReferences"] = json::array({OwnerReference(job)});

  json pod_spec = tmpl.contains("spec") && tmpl["spec"].is_object() ? tmpl["spec"] : json::object();
  pod_spec["restartPolicy"] = std::string(tf::PodRestartPolicy(spec.restart_policy));

  if (tf::NeedsTfConfig(job.spec) && pod_spec.contains("containers") &&
      pod_spec["containers"].is_array()) {
    std::string tf_config =
        tf::KubernetesTfConfig(job, tf::TaskId{type, index}, options.addressing);
    for (auto& container : pod_spec["containers"]) {
      if (jf::StringOr(container, "name", "") != tf::kDefaultContainerName) continue;
      json env = json::array();
      if (const json* vars = jf::Array(container, "env")) {
        for (const auto& var : *vars) {
          if (jf::StringOr(var, "name", "") != contract::kTfConfigEnv) env.push_back(var);
        }
      }
      env.push_back({{"name", contract::kTfConfigEnv}, {"value", tf_config}});
      container["env"] = std::move(env);
    }
  }

  AddJobSecret(job, type, index, pod_spec);

  if (job.spec.run_policy.scheduling_policy.has_value()) {
    metadata["labels"][std::string(kPodGroupLabel)] = job.metadata.name;
    if (!pod_spec.contains("schedulerName"))
      pod_spec["schedulerName"] = options.gang_scheduler_name;
  }

  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", pod_spec}};
}

json BuildService(const tf::TFJob& job, tf::ReplicaType type, int index,
                  const BuildOptions& options) {
  const tf::ReplicaSpec& spec = job.spec.replica_specs.at(type);
  // Kubeflow's service labels and selector: no job-role (the pod keeps it).
  tf::Labels labels = tf::ReplicaIndexLabels(job.metadata.name, type, index);
  json ports = json::array();
  if (const json* container = tf::FindDefaultContainer(spec.pod_template)) {
    if (container->contains("ports") && (*container)["ports"].is_array()) {
      for (const auto& port : (*container)["ports"]) {
        if (!port.contains("containerPort")) continue;
        json p = {{"port", port["containerPort"]}};
        if (port.contains("name")) p["name"] = port["name"];
        if (port.contains("protocol")) p["protocol"] = port["protocol"];
        ports.push_back(std::move(p));
      }
    }
  }
  if (ports.empty()) {
    int port = options.addressing.port;
    if (const json* container = tf::FindDefaultContainer(spec.pod_template); container != nullptr)
      port = tf::TfJobPort(spec.pod_template);
    ports.push_back({{"name", std::string(tf::kDefaultPortName)}, {"port", port}});
  }
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", tf::ReplicaName(job.metadata.name, type, index)},
            {"namespace", job.metadata.namespace_name},
            {"labels", LabelsJson(labels, json::object())},
            {"ownerReferences", json::array({OwnerReference(job)})}}},
          {"spec",
           {{"clusterIP", "None"},
            {"selector", LabelsJson(labels, json::object())},
            {"ports", ports}}}};
}

json BuildPodGroup(const tf::TFJob& job) {
  const json policy = job.spec.run_policy.scheduling_policy.value_or(json::object());
  int min_member = tf::TotalReplicas(job.spec);
  if (policy.is_object() && policy.contains("minAvailable") && policy["minAvailable"].is_number())
    min_member = policy["minAvailable"].get<int>();
  json spec = {{"minMember", min_member}};
  if (policy.is_object()) {
    if (policy.contains("minResources")) spec["minResources"] = policy["minResources"];
    if (policy.contains("scheduleTimeoutSeconds"))
      spec["scheduleTimeoutSeconds"] = policy["scheduleTimeoutSeconds"];
  }
  return {{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
          {"kind", "PodGroup"},
          {"metadata",
           {{"name", job.metadata.name},
            {"namespace", job.metadata.namespace_name},
            {"labels", LabelsJson(tf::JobLabels(job.metadata.name), json::object())},
            {"ownerReferences", json::array({OwnerReference(job)})}}},
          {"spec", spec}};
}

std::string JobSecretName(std::string_view job_name) {
  return std::string(job_name) + std::string(contract::kJobSecretSuffix);
}

json BuildJobSecret(const tf::TFJob& job, const JobTokens& tokens) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"type", "Opaque"},
          {"metadata",
           {{"name", JobSecretName(job.metadata.name)},
            {"namespace", job.metadata.namespace_name},
            {"labels", LabelsJson(tf::JobLabels(job.metadata.name), json::object())},
            {"ownerReferences", json::array({OwnerReference(job)})}}},
          {"stringData",
           {{contract::kJobTokenKey, tokens.job}, {contract::kChiefTokenKey, tokens.chief}}}};
}

json BuildNetworkPolicy(const tf::TFJob& job, const BuildOptions& options) {
  const json job_pods = tf::LabelSelectorJson(tf::JobLabels(job.metadata.name));
  json ingress = json::array({{{"from", json::array({{{"podSelector", job_pods}}})}}});
  if (!options.metrics_scraper_namespace.empty()) {
    json scrapers = {
        {"namespaceSelector",
         {{"matchLabels", {{"kubernetes.io/metadata.name", options.metrics_scraper_namespace}}}}}};
    ingress.push_back(
        {{"from", json::array({scrapers})},
         {"ports", json::array({{{"protocol", "TCP"}, {"port", contract::kMetricsPortName}},
                                {{"protocol", "TCP"}, {"port", contract::kDefaultMetricsPort}}})}});
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata",
           {{"name", job.metadata.name},
            {"namespace", job.metadata.namespace_name},
            {"labels", LabelsJson(tf::JobLabels(job.metadata.name), json::object())},
            {"ownerReferences", json::array({OwnerReference(job)})}}},
          {"spec",
           {{"podSelector", job_pods},
            {"policyTypes", json::array({"Ingress"})},
            {"ingress", ingress}}}};
}

std::optional<tf::ObservedReplica> ObserveReplica(const json& pod) {
  const json& meta = pod.contains("metadata") ? pod["metadata"] : json::object();
  const json labels = meta.value("labels", json::object());
  std::string type_text = labels.value(std::string(tf::kLabelReplicaType), "");
  std::string index_text = labels.value(std::string(tf::kLabelReplicaIndex), "");
  auto type = tf::ParseReplicaTypeIgnoringCase(type_text);
  if (!type || index_text.empty()) return std::nullopt;
  tf::ObservedReplica r;
  r.type = *type;
  try {
    std::size_t used = 0;
    r.index = std::stoi(index_text, &used);
    if (used != index_text.size() || r.index < 0) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const json status = pod.value("status", json::object());
  r.phase =
      tf::ParseReplicaPhase(status.value("phase", "Pending")).value_or(tf::ReplicaPhase::kUnknown);
  r.terminating = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  r.reason = status.value("reason", "");
  r.message = status.value("message", "");

  std::optional<tf::Time> waiting_since;
  if (status.contains("containerStatuses") && status["containerStatuses"].is_array()) {
    for (const auto& cs : status["containerStatuses"]) {
      if (cs.value("name", "") != tf::kDefaultContainerName) continue;
      r.restarts = cs.value("restartCount", 0);
      const json state = cs.value("state", json::object());
      const json last = cs.value("lastState", json::object());
      if (state.contains("terminated")) {
        r.exit_code = state["terminated"].value("exitCode", 0);
      } else if (last.contains("terminated")) {
        r.exit_code = last["terminated"].value("exitCode", 0);
      }
      if (state.contains("waiting")) {
        std::string reason = state["waiting"].value("reason", "");
        if (!reason.empty()) {
          r.reason = reason;
          r.message = state["waiting"].value("message", "");
        }
        if (last.contains("terminated"))
          waiting_since = TimeField(last["terminated"], "finishedAt");
      }
    }
  }
  if (r.phase == tf::ReplicaPhase::kPending && r.reason.empty() && status.contains("conditions") &&
      status["conditions"].is_array()) {
    for (const auto& c : status["conditions"]) {
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") {
        r.reason = c.value("reason", "Unschedulable");
        r.message = c.value("message", "");
      }
    }
  }
  if (!r.reason.empty() || r.phase == tf::ReplicaPhase::kPending) {
    r.waiting_since = waiting_since ? waiting_since : TimeField(meta, "creationTimestamp");
  }
  return r;
}

namespace {

json TrimMetadata(const json& object) {
  json out = json::object();
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return out;
  for (const char* key :
       {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"}) {
    if (auto it = meta->find(key); it != meta->end()) out[key] = *it;
  }
  if (auto labels = meta->find("labels"); labels != meta->end() && labels->is_object()) {
    json kept = json::object();
    for (const auto& [key, value] : labels->items()) {
      if (key.rfind(tf::kLabelPrefix, 0) == 0) kept[key] = value;
    }
    out["labels"] = std::move(kept);
  }
  if (const json* owner = FindOwner(object)) {
    json ref = json::object();
    for (const char* key : {"apiVersion", "kind", "name", "uid", "controller"}) {
      if (auto it = owner->find(key); it != owner->end()) ref[key] = *it;
    }
    out["ownerReferences"] = json::array({std::move(ref)});
  }
  return out;
}

json TrimContainerStatus(const json& cs) {
  json out = json::object();
  for (const char* key : {"name", "restartCount", "state", "lastState"}) {
    if (auto it = cs.find(key); it != cs.end()) out[key] = *it;
  }
  // Only the fields read: terminated exit code and finish time, waiting reason and message.
  for (const char* state : {"state", "lastState"}) {
    if (!out.contains(state) || !out[state].is_object()) continue;
    json& s = out[state];
    if (s.contains("running")) s["running"] = json::object();
    if (s.contains("terminated") && s["terminated"].is_object()) {
      json t = json::object();
      for (const char* key : {"exitCode", "finishedAt"}) {
        if (s["terminated"].contains(key)) t[key] = s["terminated"][key];
      }
      s["terminated"] = std::move(t);
    }
  }
  return out;
}

}  // namespace

void TrimCachedPod(json& pod) {
  json out = {{"metadata", TrimMetadata(pod)}};
  const auto status = pod.find("status");
  if (status != pod.end() && status->is_object()) {
    json kept = json::object();
    for (const char* key : {"phase", "reason", "message"}) {
      if (auto it = status->find(key); it != status->end()) kept[key] = *it;
    }
    if (auto conds = status->find("conditions"); conds != status->end() && conds->is_array()) {
      json unscheduled = json::array();
      for (const auto& c : *conds) {
        if (c.is_object() && c.value("type", "") == "PodScheduled" &&
            c.value("status", "") == "False")
          unscheduled.push_back(c);
      }
      if (!unscheduled.empty()) kept["conditions"] = std::move(unscheduled);
    }
    if (auto cs = status->find("containerStatuses"); cs != status->end() && cs->is_array()) {
      for (const auto& c : *cs) {
        if (c.is_object() && c.value("name", "") == tf::kDefaultContainerName)
          kept["containerStatuses"] = json::array({TrimContainerStatus(c)});
      }
    }
    out["status"] = std::move(kept);
  }
  pod = std::move(out);
}

void TrimCachedService(json& service) { service = {{"metadata", TrimMetadata(service)}}; }

std::string ControllerUid(const json& object) {
  const json* owner = FindOwner(object);
  return owner == nullptr ? "" : owner->value("uid", "");
}

std::string ControllerName(const json& object) {
  const json* owner = FindOwner(object);
  return owner == nullptr ? "" : owner->value("name", "");
}

}  // namespace taas::controller
