// JSON <-> TFJob. Parsing walks the document with the field path in hand and throws a
// ParseError at the first problem; the public functions convert it to an absl::Status.
#include "taas/tfjob/serialization.h"

#include <charconv>
#include <limits>
#include <set>

#include "taas/tfjob/progress.h"
#include "taas/tfjob/rfc3339.h"
#include "taas/tfjob/validation.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;

struct ParseError {
  std::string field;
  std::string message;
};

[[noreturn]] void Fail(const std::string& field, std::string message) {
  throw ParseError{field, std::move(message)};
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// How a value is described after "got": strings quoted, numbers and literals as written.
std::string Describe(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::null:
      return "null";
    default:
      return value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

const json& ExpectObject(const json& value, const std::string& path) {
  if (!value.is_object()) Fail(path, "expected an object, got " + Describe(value));
  return value;
}

std::string KnownList(std::initializer_list<std::string_view> known) {
  std::string list;
  for (std::string_view key : known) {
    if (!list.empty()) list += ", ";
    list += key;
  }
  return list;
}

void RejectUnknownFields(const json& object, const std::string& path,
                         std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (!found) Fail(Join(path, key), "unknown field; known fields are " + KnownList(known));
  }
}

std::string ReadString(const json& value, const std::string& path) {
  if (!value.is_string()) Fail(path, "expected a string, got " + Describe(value));
  return value.get<std::string>();
}

bool ReadBool(const json& value, const std::string& path) {
  if (!value.is_boolean()) Fail(path, "expected a boolean, got " + Describe(value));
  return value.get<bool>();
}

template <typename Int>
Int ReadInteger(const json& value, const std::string& path) {
  if (!value.is_number_integer()) Fail(path, "expected an integer, got " + Describe(value));
  const bool fits = value.is_number_unsigned()
                        ? value.get<std::uint64_t>() <=
                              static_cast<std::uint64_t>(std::numeric_limits<Int>::max())
                        : value.get<std::int64_t>() >= std::numeric_limits<Int>::min() &&
                              value.get<std::int64_t>() <= std::numeric_limits<Int>::max();
  if (!fits) Fail(path, "integer out of range, got " + value.dump());
  return static_cast<Int>(value.get<std::int64_t>());
}

Time ReadTime(const json& value, const std::string& path) {
  const std::string text = ReadString(value, path);
  absl::StatusOr<Time> time = ParseRfc3339(text);
  if (!time.ok()) Fail(path, std::string(time.status().message()));
  return *time;
}

std::map<std::string, std::string> ReadStringMap(const json& value, const std::string& path) {
  std::map<std::string, std::string> map;
  for (const auto& [key, item] : ExpectObject(value, path).items()) {
    map[key] = ReadString(item, Join(path, key));
  }
  return map;
}

template <typename Enum>
Enum ReadEnum(const json& value, const std::string& path,
              std::optional<Enum> (*parse)(std::string_view), std::string_view choices) {
  const std::string text = ReadString(value, path);
  const std::optional<Enum> parsed = parse(text);
  if (!parsed) {
    Fail(path, "unknown value \"" + text + "\"; use one of " + std::string(choices));
  }
  return *parsed;
}

// Calls `read(value, path)` for each present, non-null field.
template <typename Read>
void IfPresent(const json& object, std::string_view key, const std::string& path, Read read) {
  const auto it = object.find(key);
  if (it != object.end() && !it->is_null()) read(*it, Join(path, key));
}

// ----- metadata -----

ObjectMeta ReadMetadata(const json& value, const std::string& path) {
  ObjectMeta meta;
  for (const auto& [key, item] : ExpectObject(value, path).items()) {
    const std::string field = Join(path, key);
    if (item.is_null() && key != "name") continue;
    if (key == "name") {
      meta.name = ReadString(item, field);
    } else if (key == "namespace") {
      meta.namespace_name = ReadString(item, field);
    } else if (key == "uid") {
      meta.uid = ReadString(item, field);
    } else if (key == "resourceVersion") {
      meta.resource_version = ReadString(item, field);
    } else if (key == "generation") {
      meta.generation = ReadInteger<std::int64_t>(item, field);
    } else if (key == "labels") {
      meta.labels = ReadStringMap(item, field);
    } else if (key == "annotations") {
      meta.annotations = ReadStringMap(item, field);
    } else if (key == "creationTimestamp") {
      meta.creation_timestamp = ReadTime(item, field);
    } else if (key == "deletionTimestamp") {
      meta.deletion_timestamp = ReadTime(item, field);
    } else {
      meta.other[key] = item;
    }
  }
  return meta;
}

// ----- spec -----

constexpr std::string_view kRestartPolicies = "Always, OnFailure, Never, ExitCode";
constexpr std::string_view kCleanPodPolicies = "All, Running, None";
constexpr std::string_view kSuccessPolicies = "\"\" (chief or worker 0), AllWorkers";
constexpr std::string_view kReplicaTypes = "PS, Worker, Chief, Master or Evaluator";

ReplicaSpec ReadReplicaSpec(const json& value, const std::string& path) {
  ExpectObject(value, path);
  RejectUnknownFields(value, path, {"replicas", "restartPolicy", "template"});
  ReplicaSpec spec;
  IfPresent(value, "replicas", path, [&](const json& v, const std::string& p) {
    spec.replicas = ReadInteger<std::int32_t>(v, p);
  });
  IfPresent(value, "restartPolicy", path, [&](const json& v, const std::string& p) {
    if (v == "") return;  // Go's omitempty zero value: the default
    spec.restart_policy = ReadEnum(v, p, &ParseRestartPolicy, kRestartPolicies);
  });
  IfPresent(value, "template", path,
            [&](const json& v, const std::string& p) { spec.pod_template = ExpectObject(v, p); });
  return spec;
}

std::map<ReplicaType, ReplicaSpec> ReadReplicaSpecs(const json& value, const std::string& path) {
  std::map<ReplicaType, ReplicaSpec> specs;
  for (const auto& [key, item] : ExpectObject(value, path).items()) {
    const std::string field = Join(path, key);
    const std::optional<ReplicaType> type = ParseReplicaTypeIgnoringCase(key);
    if (!type) Fail(field, "unknown replica type; use " + std::string(kReplicaTypes));
    if (specs.contains(*type)) {
      Fail(field, "duplicates " + std::string(ReplicaTypeName(*type)) +
                      " (replica types are case-insensitive); keep one");
    }
    specs[*type] = ReadReplicaSpec(item, field);
  }
  return specs;
}

// Reads the run-policy fields of `object` (runPolicy, or the spec itself for the fields older
// kubeflow.org/v1 manifests put there) into `policy`.
void ReadRunPolicyFields(const json& object, const std::string& path, RunPolicy& policy) {
  IfPresent(object, "cleanPodPolicy", path, [&](const json& v, const std::string& p) {
    policy.clean_pod_policy = ReadEnum(v, p, &ParseCleanPodPolicy, kCleanPodPolicies);
  });
  IfPresent(object, "ttlSecondsAfterFinished", path, [&](const json& v, const std::string& p) {
    policy.ttl_seconds_after_finished = ReadInteger<std::int32_t>(v, p);
  });
  IfPresent(object, "activeDeadlineSeconds", path, [&](const json& v, const std::string& p) {
    policy.active_deadline_seconds = ReadInteger<std::int64_t>(v, p);
  });
  IfPresent(object, "backoffLimit", path, [&](const json& v, const std::string& p) {
    policy.backoff_limit = ReadInteger<std::int32_t>(v, p);
  });
}

RunPolicy ReadRunPolicy(const json& value, const std::string& path) {
  ExpectObject(value, path);
  RejectUnknownFields(value, path,
                      {"cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds",
                       "backoffLimit", "suspend", "schedulingPolicy", "managedBy"});
  RunPolicy policy;
  ReadRunPolicyFields(value, path, policy);
  IfPresent(value, "suspend", path,
            [&](const json& v, const std::string& p) { policy.suspend = ReadBool(v, p); });
  IfPresent(value, "schedulingPolicy", path, [&](const json& v, const std::string& p) {
    policy.scheduling_policy = ExpectObject(v, p);
  });
  IfPresent(value, "managedBy", path,
            [&](const json& v, const std::string& p) { policy.managed_by = ReadString(v, p); });
  return policy;
}

TFJobSpec ReadSpec(const json& value, const std::string& path) {
  ExpectObject(value, path);
  RejectUnknownFields(
      value, path,
      {"tfReplicaSpecs", "runPolicy", "successPolicy", "enableDynamicWorker",
       // older kubeflow.org/v1 manifests: run policy fields in the spec
       "cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"});
  TFJobSpec spec;
  ReadRunPolicyFields(value, path, spec.run_policy);
  IfPresent(value, "runPolicy", path, [&](const json& v, const std::string& p) {
    RunPolicy legacy = spec.run_policy;
    spec.run_policy = ReadRunPolicy(v, p);
    // runPolicy wins; the legacy spec-level fields only fill what it leaves unset.
    if (!v.contains("cleanPodPolicy") || v["cleanPodPolicy"].is_null()) {
      spec.run_policy.clean_pod_policy = legacy.clean_pod_policy;
    }
    if (!spec.run_policy.ttl_seconds_after_finished) {
      spec.run_policy.ttl_seconds_after_finished = legacy.ttl_seconds_after_finished;
    }
    if (!spec.run_policy.active_deadline_seconds) {
      spec.run_policy.active_deadline_seconds = legacy.active_deadline_seconds;
    }
    if (!spec.run_policy.backoff_limit) spec.run_policy.backoff_limit = legacy.backoff_limit;
  });
  IfPresent(value, "tfReplicaSpecs", path, [&](const json& v, const std::string& p) {
    spec.replica_specs = ReadReplicaSpecs(v, p);
  });
  IfPresent(value, "successPolicy", path, [&](const json& v, const std::string& p) {
    spec.success_policy = ReadEnum(v, p, &ParseSuccessPolicy, kSuccessPolicies);
  });
  IfPresent(value, "enableDynamicWorker", path, [&](const json& v, const std::string& p) {
    spec.enable_dynamic_worker = ReadBool(v, p);
  });
  return spec;
}

// ----- status (lenient: unknown fields and values written by newer controllers are skipped) --

JobCondition ReadCondition(const json& value, const std::string& path) {
  ExpectObject(value, path);
  JobCondition condition;
  IfPresent(value, "type", path, [&](const json& v, const std::string& p) {
    condition.type = ReadEnum(v, p, &ParseConditionType,
                              "Created, Running, Restarting, Succeeded, Suspended, Failed, Stuck");
  });
  IfPresent(value, "status", path, [&](const json& v, const std::string& p) {
    condition.status = ReadEnum(v, p, &ParseConditionStatus, "True, False, Unknown");
  });
  IfPresent(value, "reason", path,
            [&](const json& v, const std::string& p) { condition.reason = ReadString(v, p); });
  IfPresent(value, "message", path,
            [&](const json& v, const std::string& p) { condition.message = ReadString(v, p); });
  IfPresent(value, "lastUpdateTime", path, [&](const json& v, const std::string& p) {
    condition.last_update_time = ReadTime(v, p);
  });
  IfPresent(value, "lastTransitionTime", path, [&](const json& v, const std::string& p) {
    condition.last_transition_time = ReadTime(v, p);
  });
  return condition;
}

ReplicaStatus ReadReplicaStatus(const json& value, const std::string& path) {
  ExpectObject(value, path);
  ReplicaStatus status;
  IfPresent(value, "active", path, [&](const json& v, const std::string& p) {
    status.active = ReadInteger<std::int32_t>(v, p);
  });
  IfPresent(value, "succeeded", path, [&](const json& v, const std::string& p) {
    status.succeeded = ReadInteger<std::int32_t>(v, p);
  });
  IfPresent(value, "failed", path, [&](const json& v, const std::string& p) {
    status.failed = ReadInteger<std::int32_t>(v, p);
  });
  IfPresent(value, "labelSelector", path, [&](const json& v, const std::string& p) {
    status.label_selector = ExpectObject(v, p);
  });
  IfPresent(value, "selector", path,
            [&](const json& v, const std::string& p) { status.selector = ReadString(v, p); });
  IfPresent(value, "succeededIndexes", path, [&](const json& v, const std::string& p) {
    if (!v.is_array()) Fail(p, "expected an array, got " + Describe(v));
    std::set<int> indexes;
    for (std::size_t i = 0; i < v.size(); ++i) {
      indexes.insert(ReadInteger<int>(v[i], p + "[" + std::to_string(i) + "]"));
    }
    status.succeeded_indexes.assign(indexes.begin(), indexes.end());
  });
  IfPresent(value, "restarts", path, [&](const json& v, const std::string& p) {
    status.restarts = ReadInteger<std::int32_t>(v, p);
  });
  IfPresent(value, "containerRestarts", path, [&](const json& v, const std::string& p) {
    for (const auto& [key, count] : ExpectObject(v, p).items()) {
      const std::string field = Join(p, key);
      int index = -1;
      const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), index);
      if (error != std::errc() || end != key.data() + key.size() || index < 0) {
        Fail(field, "expected a replica index as the key");
      }
      if (const auto n = ReadInteger<std::int32_t>(count, field); n != 0) {
        status.container_restarts[index] = n;
      }
    }
  });
  return status;
}

JobStatus ReadStatus(const json& value, const std::string& path) {
  ExpectObject(value, path);
  JobStatus status;
  IfPresent(value, "conditions", path, [&](const json& v, const std::string& p) {
    if (!v.is_array()) Fail(p, "expected an array, got " + Describe(v));
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string item_path = p + "[" + std::to_string(i) + "]";
      // A condition type this library does not know (a newer controller's) is skipped.
      if (v[i].is_object() && v[i].contains("type") && v[i]["type"].is_string() &&
          !ParseConditionType(v[i]["type"].get<std::string>())) {
        continue;
      }
      status.conditions.push_back(ReadCondition(v[i], item_path));
    }
  });
  IfPresent(value, "replicaStatuses", path, [&](const json& v, const std::string& p) {
    for (const auto& [key, item] : ExpectObject(v, p).items()) {
      const std::optional<ReplicaType> type = ParseReplicaTypeIgnoringCase(key);
      if (!type || item.is_null()) continue;
      status.replica_statuses[*type] = ReadReplicaStatus(item, Join(p, key));
    }
  });
  IfPresent(value, "startTime", path,
            [&](const json& v, const std::string& p) { status.start_time = ReadTime(v, p); });
  IfPresent(value, "completionTime", path,
            [&](const json& v, const std::string& p) { status.completion_time = ReadTime(v, p); });
  IfPresent(value, "lastReconcileTime", path, [&](const json& v, const std::string& p) {
    status.last_reconcile_time = ReadTime(v, p);
  });
  // Advisory and rewritten by the operator: what cannot be read of it is dropped, field by field.
  IfPresent(value, "progress", path,
            [&](const json& v, const std::string&) { status.progress = ProgressFromJson(v); });
  return status;
}

TFJob ReadTFJob(const json& value) {
  if (!value.is_object()) Fail("", "expected a TFJob object, got " + Describe(value));
  RejectUnknownFields(value, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  IfPresent(value, "apiVersion", "", [](const json& v, const std::string& p) {
    if (ReadString(v, p) != kApiVersion) {
      Fail(p, "expected \"" + std::string(kApiVersion) + "\", got " + Describe(v));
    }
  });
  IfPresent(value, "kind", "", [](const json& v, const std::string& p) {
    if (ReadString(v, p) != kKind) {
      Fail(p, "expected \"" + std::string(kKind) + "\", got " + Describe(v));
    }
  });
  TFJob job;
  IfPresent(value, "metadata", "",
            [&](const json& v, const std::string& p) { job.metadata = ReadMetadata(v, p); });
  IfPresent(value, "spec", "",
            [&](const json& v, const std::string& p) { job.spec = ReadSpec(v, p); });
  // The status is the operator's record and is rebuilt from the pods: one that cannot be read
  // (whoever may write the status subresource may write anything there) is dropped, never a
  // reason to fail the job. StatusFromJson still reports what is wrong with it.
  IfPresent(value, "status", "", [&](const json& v, const std::string& p) {
    try {
      job.status = ReadStatus(v, p);
    } catch (const ParseError&) {
      job.status = JobStatus{};
    }
  });
  return job;
}

// ----- writing -----

json TimeOrNull(const std::optional<Time>& time) {
  return time ? json(FormatRfc3339(*time)) : json(nullptr);
}

json MetadataToJson(const ObjectMeta& meta) {
  json out = meta.other.is_object() ? meta.other : json::object();
  out["name"] = meta.name;
  out["namespace"] = meta.namespace_name;
  if (!meta.uid.empty()) out["uid"] = meta.uid;
  if (!meta.resource_version.empty()) out["resourceVersion"] = meta.resource_version;
  if (meta.generation != 0) out["generation"] = meta.generation;
  if (!meta.labels.empty()) out["labels"] = meta.labels;
  if (!meta.annotations.empty()) out["annotations"] = meta.annotations;
  if (meta.creation_timestamp) out["creationTimestamp"] = FormatRfc3339(*meta.creation_timestamp);
  if (meta.deletion_timestamp) out["deletionTimestamp"] = FormatRfc3339(*meta.deletion_timestamp);
  return out;
}

json RunPolicyToJson(const RunPolicy& policy) {
  json out = {{"cleanPodPolicy", ToString(policy.clean_pod_policy)}, {"suspend", policy.suspend}};
  if (policy.ttl_seconds_after_finished) {
    out["ttlSecondsAfterFinished"] = *policy.ttl_seconds_after_finished;
  }
  if (policy.active_deadline_seconds) {
    out["activeDeadlineSeconds"] = *policy.active_deadline_seconds;
  }
  if (policy.backoff_limit) out["backoffLimit"] = *policy.backoff_limit;
  if (policy.scheduling_policy) out["schedulingPolicy"] = *policy.scheduling_policy;
  if (policy.managed_by) out["managedBy"] = *policy.managed_by;
  return out;
}

json ReplicaStatusToJson(const ReplicaStatus& status) {
  json out = json::object();  // omitempty on every field, like Kubeflow's Go struct
  if (status.active != 0) out["active"] = status.active;
  if (status.succeeded != 0) out["succeeded"] = status.succeeded;
  if (status.failed != 0) out["failed"] = status.failed;
  if (status.label_selector) out["labelSelector"] = *status.label_selector;
  if (!status.selector.empty()) out["selector"] = status.selector;
  if (!status.succeeded_indexes.empty()) out["succeededIndexes"] = status.succeeded_indexes;
  if (status.restarts != 0) out["restarts"] = status.restarts;
  if (!status.container_restarts.empty()) {
    json& counts = out["containerRestarts"] = json::object();
    for (const auto& [index, count] : status.container_restarts) {
      counts[std::to_string(index)] = count;
    }
  }
  return out;
}

json ConditionToJson(const JobCondition& condition) {
  json out = {{"type", ToString(condition.type)}, {"status", ToString(condition.status)}};
  if (!condition.reason.empty()) out["reason"] = condition.reason;
  if (!condition.message.empty()) out["message"] = condition.message;
  // metav1.Time is a struct: omitempty does not drop it, a zero time is written as null.
  out["lastUpdateTime"] = TimeOrNull(condition.last_update_time);
  out["lastTransitionTime"] = TimeOrNull(condition.last_transition_time);
  return out;
}

template <typename Fn>
absl::StatusOr<std::invoke_result_t<Fn>> Catching(Fn fn) {
  try {
    return fn();
  } catch (const ParseError& error) {
    return FieldStatus(error.field, error.message);
  } catch (const json::exception& error) {
    // Not expected (every access is type-checked first); kept so nothing escapes the module.
    return absl::InvalidArgumentError(std::string("invalid TFJob: ") + error.what());
  }
}

}  // namespace

absl::StatusOr<TFJob> TFJobFromJson(const nlohmann::json& object) {
  return Catching([&] { return ReadTFJob(object); });
}

absl::StatusOr<JobStatus> StatusFromJson(const nlohmann::json& status) {
  return Catching([&] { return ReadStatus(status, "status"); });
}

nlohmann::json SpecToJson(const TFJobSpec& spec) {
  json replicas = json::object();
  for (const auto& [type, replica] : spec.replica_specs) {
    replicas[std::string(ReplicaTypeName(type))] = {
        {"replicas", replica.replicas},
        {"restartPolicy", ToString(replica.restart_policy)},
        {"template", replica.pod_template}};
  }
  json out = {{"tfReplicaSpecs", std::move(replicas)},
              {"runPolicy", RunPolicyToJson(spec.run_policy)},
              {"successPolicy", ToString(spec.success_policy)}};
  if (spec.enable_dynamic_worker) out["enableDynamicWorker"] = true;
  return out;
}

nlohmann::json StatusToJson(const JobStatus& status) {
  json out = json::object();
  if (!status.conditions.empty()) {
    json conditions = json::array();
    for (const auto& condition : status.conditions)
      conditions.push_back(ConditionToJson(condition));
    out["conditions"] = std::move(conditions);
  }
  if (!status.replica_statuses.empty()) {
    json replicas = json::object();
    for (const auto& [type, replica] : status.replica_statuses) {
      replicas[std::string(ReplicaTypeName(type))] = ReplicaStatusToJson(replica);
    }
    out["replicaStatuses"] = std::move(replicas);
  }
  if (status.start_time) out["startTime"] = FormatRfc3339(*status.start_time);
  if (status.completion_time) out["completionTime"] = FormatRfc3339(*status.completion_time);
  if (status.last_reconcile_time) {
    out["lastReconcileTime"] = FormatRfc3339(*status.last_reconcile_time);
  }
  if (status.progress) out["progress"] = ProgressToJson(*status.progress);
  return out;
}

nlohmann::json TFJobToJson(const TFJob& job) {
  json out = {{"apiVersion", kApiVersion},
              {"kind", kKind},
              {"metadata", MetadataToJson(job.metadata)},
              {"spec", SpecToJson(job.spec)}};
  if (job.status != JobStatus{}) out["status"] = StatusToJson(job.status);
  return out;
}

}  // namespace taas::tfjob
