#include "taas/controller/builders.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "internal.h"
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

// Exact arithmetic on Kubernetes quantities, for PodGroup minResources: values in nanounits
// (the API server's finest scale), which an __int128 holds for any quantity up to 1e29 units.
__extension__ using Nanos = __int128;

constexpr Nanos kNanosPerUnit = 1'000'000'000;
// Beyond this a sum is not worth exactness (1e20 units: more than any resource a pod may ask).
constexpr Nanos kMaxNanos = kNanosPerUnit * 100'000'000'000 * 1'000'000'000;

// "500m", "2", "1.5Gi", "4e3" in nanounits, rounded up as the API server rounds below its
// finest scale; nullopt when the text is not a non-negative quantity or is out of range.
std::optional<Nanos> ParseNanos(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  std::size_t i = text[0] == '+' ? 1 : 0;
  Nanos mantissa = 0;
  int digits = 0;
  int fraction_digits = 0;
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (++digits > 24) return std::nullopt;
    mantissa = mantissa * 10 + (c - '0');
    if (in_fraction) ++fraction_digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string_view suffix = text.substr(i);
  // value = mantissa * 2^binary * 10^(decimal - fraction_digits) units.
  int binary = 0;
  int decimal = 0;
  static constexpr std::pair<std::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
      {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  bool known = false;
  for (const auto& [name, power] : kBinary) {
    if (suffix == name) binary = power, known = true;
  }
  for (const auto& [name, power] : kDecimal) {
    if (suffix == name) decimal = power, known = true;
  }
  if (!known) {
    if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return std::nullopt;
    std::size_t j = 1;
    const bool negative = suffix[j] == '-';
    if (suffix[j] == '+' || suffix[j] == '-') ++j;
    if (j >= suffix.size() || suffix.size() - j > 2) return std::nullopt;
    for (std::size_t k = j; k < suffix.size(); ++k) {
      if (suffix[k] < '0' || suffix[k] > '9') return std::nullopt;
      decimal = decimal * 10 + (suffix[k] - '0');
    }
    if (negative) decimal = -decimal;
  }
  if (mantissa > (kMaxNanos >> binary)) return std::nullopt;  // mantissa < 1e24 < 2^80
  Nanos value = mantissa << binary;
  int scale = decimal - fraction_digits + 9;
  for (; scale > 0; --scale) {
    value *= 10;
    if (value > kMaxNanos) return std::nullopt;
  }
  for (; scale < 0; ++scale) value = value / 10 + (value % 10 != 0 ? 1 : 0);
  return value;
}

// A JSON quantity (a string, or a number as the API server also takes) in nanounits.
std::optional<Nanos> QuantityNanos(const json& value) {
  if (value.is_string()) return ParseNanos(value.get<std::string>());
  if (value.is_number_unsigned() || value.is_number_integer()) {
    if (value.is_number_integer() && value.get<std::int64_t>() < 0) return std::nullopt;
    return ParseNanos(std::to_string(value.get<std::uint64_t>()));
  }
  return std::nullopt;  // a fractional JSON number is not exact
}

std::string DecimalString(Nanos value) {
  std::string out;
  do {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value != 0);
  return out;
}

// Nanounits as the shortest exact quantity: "3", "1500m", "250u", "7n".
std::string QuantityString(Nanos nanos) {
  if (nanos % kNanosPerUnit == 0) return DecimalString(nanos / kNanosPerUnit);
  if (nanos % 1'000'000 == 0) return DecimalString(nanos / 1'000'000) + "m";
  if (nanos % 1'000 == 0) return DecimalString(nanos / 1'000) + "u";
  return DecimalString(nanos) + "n";
}

// Adds a container's resource list (requests or limits) to `sum`, by resource name.
void AddResources(const json& list, std::map<std::string, Nanos>& sum) {
  for (const auto& [name, quantity] : list.items()) {
    const auto nanos = QuantityNanos(quantity);
    if (!nanos.has_value()) continue;
    Nanos& total = sum[name];
    total = std::min(total + *nanos, kMaxNanos);
  }
}

// The first integer of schedulingPolicy's `key`, clamped to int32 as Kubeflow's field is.
std::optional<std::int32_t> PolicyInt(const json& policy, const char* key) {
  const auto value = policy.find(key);
  if (value == policy.end() || !value->is_number_integer()) return std::nullopt;
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(
      value->get<std::int64_t>(), 0, std::numeric_limits<std::int32_t>::max()));
}

std::string PolicyString(const json& policy, const char* key) {
  const auto value = policy.find(key);
  return value != policy.end() && value->is_string() ? value->get<std::string>() : "";
}

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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

  // Kubeflow's DecoratePodTemplateSpec: a scheduler named by the template is kept.
  if (const Gang gang = GangOf(options); gang.scheduler != GangScheduler::kNone) {
    if (gang.scheduler == GangScheduler::kVolcano) {
      if (!metadata.contains("annotations") || !metadata["annotations"].is_object())
        metadata["annotations"] = json::object();
      metadata["annotations"][std::string(tf::kAnnotationVolcanoGroupName)] = job.metadata.name;
      metadata["annotations"][std::string(tf::kAnnotationVolcanoTaskSpec)] =
          std::string(tf::ReplicaTypeKey(type));
    } else {
      metadata["labels"][std::string(tf::kLabelPodGroup)] = job.metadata.name;
    }
    if (jf::StringOr(pod_spec, "schedulerName", "").empty())
      pod_spec["schedulerName"] = gang.scheduler_name;
  }

  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata}, {"spec", pod_spec}};
}

void SetIncarnation(json& pod, std::uint64_t incarnation) {
  json& metadata = pod["metadata"];
  if (!metadata.contains("annotations") || !metadata["annotations"].is_object())
    metadata["annotations"] = json::object();
  metadata["annotations"][std::string(tf::kAnnotationReplicaIncarnation)] =
      std::to_string(incarnation);
  json& spec = pod["spec"];
  if (!jf::Array(spec, "containers")) return;
  for (auto& container : spec["containers"]) {
    if (jf::StringOr(container, "name", "") != tf::kDefaultContainerName) continue;
    json env = WithoutNamed(jf::Array(container, "env") ? container["env"] : json::array(),
                            contract::kReplicaIncarnationEnv);
    env.push_back(
        {{"name", contract::kReplicaIncarnationEnv},
         {"valueFrom",
          {{"fieldRef",
            {{"fieldPath", "metadata.annotations['" +
                               std::string(tf::kAnnotationReplicaIncarnation) + "']"}}}}}});
    container["env"] = std::move(env);
  }
}

std::uint64_t PodIncarnation(const json& pod) {
  const json* annotations = jf::Find(pod, "metadata");
  if (annotations != nullptr) annotations = jf::Find(*annotations, "annotations");
  if (annotations == nullptr) return 0;
  const std::string text =
      jf::StringOr(*annotations, std::string(tf::kAnnotationReplicaIncarnation), "");
  std::uint64_t out = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return text.empty() || error != std::errc() || end != text.data() + text.size() ? 0 : out;
}

std::uint64_t NextIncarnation(std::uint64_t newest_seen,
                              std::chrono::system_clock::time_point now) {
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::uint64_t clock = millis > 0 ? static_cast<std::uint64_t>(millis) : 0;
  const std::uint64_t above = newest_seen == UINT64_MAX ? newest_seen : newest_seen + 1;
  return std::max(above, clock);
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

absl::Status ValidateGangSchedulerName(std::string_view name) {
  if (AsciiLower(name) == tf::kVolcanoSchedulerName) return absl::OkStatus();
  // A DNS-1123 subdomain: what pod validation requires of spec.schedulerName.
  bool valid = name.size() <= 253;
  std::size_t label = 0;
  for (std::size_t i = 0; valid && i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    const bool edge = i == label || i + 1 == name.size() || name[i + 1] == '.';
    if (c == '.') {
      valid = i != label;
      label = i + 1;
    } else if (c == '-') {
      valid = !edge;
    } else {
      valid = alnum;
    }
  }
  if (!name.empty() && name.back() == '.') valid = false;  // an empty last label
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "--gang-scheduler-name: expected a scheduler name (lower-case letters, digits, '-' and '.', "
      "as a pod's spec.schedulerName), \"volcano\" or \"none\", got \"" +
      std::string(name.substr(0, 80)) + "\"");
}

Gang GangOf(const BuildOptions& options) {
  const std::string& name = options.gang_scheduler_name;
  // Unset is Kubeflow's default: no job is gang scheduled, not even one whose schedulingPolicy
  // asks for it, so a manifest written for Volcano does not wait forever for a scheduler this
  // cluster lacks. "none" spells the same explicitly.
  if (name.empty() || name == "none") return {};
  // Kubeflow compares "volcano" ignoring case and then names the scheduler "volcano".
  if (AsciiLower(name) == tf::kVolcanoSchedulerName)
    return {GangScheduler::kVolcano, std::string(tf::kVolcanoSchedulerName)};
  return {GangScheduler::kSchedulerPlugins, name};
}

json PodGroupMinResources(const tf::TFJob& job, int min_member) {
  std::map<std::string, Nanos> sum;
  int pods = 0;
  for (const tf::ReplicaType type : tf::kStatusOrder) {
    const auto spec = job.spec.replica_specs.find(type);
    if (spec == job.spec.replica_specs.end()) continue;
    const json* containers =
        jf::Array(jf::MemberOrNull(spec->second.pod_template, "spec"), "containers");
    for (std::int32_t i = 0; i < spec->second.replicas && pods < min_member; ++i, ++pods) {
      if (containers == nullptr) continue;
      for (const json& container : *containers) {
        const json& resources = jf::MemberOrNull(container, "resources");
        const json& requests = jf::MemberOrNull(resources, "requests");
        // As Kubeflow's AddResourceList: limits count only where requests are absent.
        const json& list = requests.is_object() ? requests : jf::MemberOrNull(resources, "limits");
        if (list.is_object()) AddResources(list, sum);
      }
    }
  }
  json out = json::object();
  for (const auto& [name, nanos] : sum) out[name] = QuantityString(nanos);
  return out;
}

std::string PodGroupsPath(GangScheduler scheduler, std::string_view ns) {
  const std::string_view api =
      scheduler == GangScheduler::kVolcano ? tf::kVolcanoApi : tf::kSchedulerPluginsApi;
  return "/apis/" + std::string(api) + "/namespaces/" + std::string(ns) + "/podgroups";
}

json BuildPodGroup(const tf::TFJob& job, const Gang& gang) {
  const json policy = job.spec.run_policy.scheduling_policy.value_or(json::object());
  const bool has_policy = policy.is_object();
  const std::int32_t min_member =
      (has_policy ? PolicyInt(policy, "minAvailable") : std::nullopt)
          .value_or(static_cast<std::int32_t>(tf::TotalReplicas(job.spec)));
  json min_resources =
      has_policy && policy.contains("minResources") && policy["minResources"].is_object()
          ? policy["minResources"]
          : PodGroupMinResources(job, min_member);
  json spec = {{"minMember", min_member}};
  std::string_view api = tf::kSchedulerPluginsApi;
  if (gang.scheduler == GangScheduler::kVolcano) {
    api = tf::kVolcanoApi;
    const std::string queue = has_policy ? PolicyString(policy, "queue") : "";
    spec["queue"] = queue.empty() ? "default" : queue;
    if (const std::string priority = has_policy ? PolicyString(policy, "priorityClass") : "";
        !priority.empty())
      spec["priorityClassName"] = priority;
    spec["minResources"] = std::move(min_resources);  // a pointer in Volcano's type: always set
  } else {
    if (!min_resources.empty()) spec["minResources"] = std::move(min_resources);
    if (const auto timeout =
            has_policy ? PolicyInt(policy, "scheduleTimeoutSeconds") : std::nullopt)
      spec["scheduleTimeoutSeconds"] = *timeout;
  }
  json metadata = {{"name", job.metadata.name},
                   {"namespace", job.metadata.namespace_name},
                   {"labels", LabelsJson(tf::JobLabels(job.metadata.name), json::object())},
                   {"ownerReferences", json::array({OwnerReference(job)})}};
  if (!job.metadata.annotations.empty()) metadata["annotations"] = job.metadata.annotations;
  return {{"apiVersion", std::string(api)},
          {"kind", "PodGroup"},
          {"metadata", std::move(metadata)},
          {"spec", std::move(spec)}};
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

namespace {

// A container's exit code as a pod's status holds it: an int32 (the API server's type), else 0.
int ExitCode(const json& terminated) {
  const std::optional<std::int64_t> code = jf::Int(terminated, "exitCode");
  return code && *code >= INT32_MIN && *code <= INT32_MAX ? static_cast<int>(*code) : 0;
}

// What the training container's status says of `r` (exit code, restarts, exit time, why it
// waits); when it waits after an exit, since when.
std::optional<tf::Time> ObserveTrainingContainer(const json& status, tf::ObservedReplica& r) {
  std::optional<tf::Time> waiting_since;
  const json* statuses = jf::Array(status, "containerStatuses");
  if (!statuses) return waiting_since;
  for (const json& cs : *statuses) {
    if (jf::StringOr(cs, "name") != tf::kDefaultContainerName) continue;
    r.restarts = static_cast<int>(std::clamp<std::int64_t>(jf::Int(cs, "restartCount").value_or(0),
                                                           0, std::numeric_limits<int>::max()));
    const json& state = jf::MemberOrNull(cs, "state");
    const json& last = jf::MemberOrNull(cs, "lastState");
    if (const json* terminated = jf::Object(state, "terminated")) {
      r.exit_code = ExitCode(*terminated);
      r.finished_at = TimeField(*terminated, "finishedAt");
    } else if (const json* before = jf::Object(last, "terminated")) {
      r.exit_code = ExitCode(*before);
    }
    if (const json* waiting = jf::Object(state, "waiting")) {
      std::string reason = jf::StringOr(*waiting, "reason");
      if (!reason.empty()) {
        r.reason = std::move(reason);
        r.message = jf::StringOr(*waiting, "message");
      }
      if (const json* before = jf::Object(last, "terminated"))
        waiting_since = TimeField(*before, "finishedAt");
    }
  }
  return waiting_since;
}

}  // namespace

// Every field is read tolerantly (json_fields): a pod of any shape is observed or ignored, never
// an exception.
std::optional<tf::ObservedReplica> ObserveReplica(const json& pod) {
  const json& meta = jf::MemberOrNull(pod, "metadata");
  const json& labels = jf::MemberOrNull(meta, "labels");
  const std::string type_text = jf::StringOr(labels, tf::kLabelReplicaType);
  const std::string index_text = jf::StringOr(labels, tf::kLabelReplicaIndex);
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
  const json& status = jf::MemberOrNull(pod, "status");
  r.phase = tf::ParseReplicaPhase(jf::StringOr(status, "phase", "Pending"))
                .value_or(tf::ReplicaPhase::kUnknown);
  r.terminating = !jf::MemberOrNull(meta, "deletionTimestamp").is_null();
  r.reason = jf::StringOr(status, "reason");
  r.message = jf::StringOr(status, "message");
  const std::optional<tf::Time> waiting_since = ObserveTrainingContainer(status, r);
  const json* conditions = jf::Array(status, "conditions");
  if (r.phase == tf::ReplicaPhase::kPending && r.reason.empty() && conditions) {
    for (const json& c : *conditions) {
      if (jf::StringOr(c, "type") == "PodScheduled" && jf::StringOr(c, "status") == "False") {
        r.reason = jf::StringOr(c, "reason", "Unschedulable");
        r.message = jf::StringOr(c, "message");
      }
    }
  }
  if (!r.reason.empty() || r.phase == tf::ReplicaPhase::kPending) {
    r.waiting_since = waiting_since ? waiting_since : TimeField(meta, "creationTimestamp");
  }
  return r;
}

std::optional<std::string> TerminationMessage(const json& pod) {
  const json* status = jf::Object(pod, "status");
  const json* statuses = status ? jf::Array(*status, "containerStatuses") : nullptr;
  if (statuses == nullptr) return std::nullopt;
  for (const json& cs : *statuses) {
    if (jf::StringOr(cs, "name", "") != tf::kDefaultContainerName) continue;
    const json* state = jf::Object(cs, "state");
    const json* terminated = state ? jf::Object(*state, "terminated") : nullptr;
    if (terminated == nullptr) return std::nullopt;
    const auto code = terminated->find("exitCode");
    // Any exit: a chief whose final evaluation failed leaves a report naming the error.
    if (code == terminated->end() || !code->is_number_integer()) return std::nullopt;
    std::optional<std::string> message = jf::String(*terminated, "message");
    if (!message || message->empty()) return std::nullopt;
    if (message->size() > kMaxKeptTerminationMessage) message->resize(kMaxKeptTerminationMessage);
    return message;
  }
  return std::nullopt;
}

std::optional<json> ServiceForCurrentJob(const json* object, std::string_view uid,
                                         tf::ReplicaRef ref, const tf::Limits& limits,
                                         const BuildOptions& options) {
  if (object == nullptr || !object->is_object() || internal::HasDeletionTimestamp(*object))
    return std::nullopt;
  const json* meta = jf::Object(*object, "metadata");
  if (uid.empty() || meta == nullptr || jf::StringOr(*meta, "uid", "") != uid) return std::nullopt;
  auto job = tf::LoadTFJob(*object, limits);
  if (!job.ok()) return std::nullopt;
  return BuildService(*job, ref.type, ref.index, options);
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
  if (auto annotations = meta->find("annotations");
      annotations != meta->end() && annotations->is_object()) {
    const std::string key(tf::kAnnotationReplicaIncarnation);
    if (auto it = annotations->find(key); it != annotations->end()) {
      json kept = json::object();
      kept[key] = *it;
      out["annotations"] = std::move(kept);
    }
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

json TrimContainerStatus(const json& cs, const json& pod) {
  json out = json::object();
  for (const char* key : {"name", "restartCount", "state", "lastState"}) {
    if (auto it = cs.find(key); it != cs.end()) out[key] = *it;
  }
  // Only the fields read: terminated exit code and finish time, waiting reason and message, and
  // the termination message TerminationMessage reads.
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
  if (auto message = TerminationMessage(pod)) out["state"]["terminated"]["message"] = *message;
  return out;
}

}  // namespace

void TrimCachedPod(json& pod) {
  json out = {{"metadata", TrimMetadata(pod)}};
  if (std::string node = PodNodeName(pod); !node.empty()) out["spec"] = {{"nodeName", node}};
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
          kept["containerStatuses"] = json::array({TrimContainerStatus(c, pod)});
      }
    }
    out["status"] = std::move(kept);
  }
  pod = std::move(out);
}

std::string PodNodeName(const json& pod) {
  return jf::StringOr(jf::MemberOrNull(pod, "spec"), "nodeName");
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
