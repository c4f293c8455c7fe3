#include "taas/tfjob/validation.h"

#include <absl/strings/cord.h>

#include "taas/tfjob/defaults.h"
#include "taas/tfjob/serialization.h"

namespace taas::tfjob {
namespace {

constexpr char kFieldPayload[] = "taas.tfjob.FieldPath";
constexpr std::size_t kMaxLabelLength = 63;

bool IsLowerAlpha(char c) { return c >= 'a' && c <= 'z'; }
bool IsLowerAlnum(char c) { return IsLowerAlpha(c) || (c >= '0' && c <= '9'); }

bool IsDns1035Label(std::string_view name) {
  if (name.empty() || name.size() > kMaxLabelLength) return false;
  if (!IsLowerAlpha(name.front()) || !IsLowerAlnum(name.back())) return false;
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

std::string Quote(std::string_view text) { return "\"" + std::string(text) + "\""; }

class Validator {
 public:
  explicit Validator(const Limits& limits) : limits_(limits) {}

  std::vector<FieldError> Run(const TFJob& job) {
    CheckName(job);
    CheckReplicaSpecs(job.spec);
    CheckRunPolicy(job.spec.run_policy);
    return std::move(errors_);
  }

 private:
  void Add(std::string field, std::string message) {
    errors_.push_back({std::move(field), std::move(message)});
  }

  void CheckName(const TFJob& job) {
    const std::string& name = job.metadata.name;
    if (name.empty()) {
      Add("metadata.name", "must be set, e.g. \"mnist\"");
      return;
    }
    if (!IsDns1035Label(name)) {
      Add("metadata.name",
          "must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter "
          "and ending with a letter or digit, at most 63 characters), got " +
              Quote(name));
      return;
    }
    CheckReplicaNameLength(job);
  }

  // Each replica gets a headless service named {job}-{type}-{index}, itself a DNS-1035 label.
  void CheckReplicaNameLength(const TFJob& job) {
    for (const auto& [type, replica] : job.spec.replica_specs) {
      const int last_index = std::max(replica.replicas - 1, 0);
      const std::string longest = ReplicaName(job.metadata.name, type, last_index);
      if (longest.size() > kMaxLabelLength) {
        Add("metadata.name", "is too long: the service name " + Quote(longest) + " exceeds " +
                                 std::to_string(kMaxLabelLength) +
                                 " characters; use a shorter job name");
        return;
      }
    }
  }

  void CheckReplicaSpecs(const TFJobSpec& spec) {
    if (spec.replica_specs.empty()) {
      Add("spec.tfReplicaSpecs",
          "must list at least one replica type (PS, Worker, Chief, Master or Evaluator)");
      return;
    }
    if (spec.replica_specs.contains(ReplicaType::kChief) &&
        spec.replica_specs.contains(ReplicaType::kMaster)) {
      Add("spec.tfReplicaSpecs",
          "must not have both Chief and Master (Master is a synonym of Chief); keep one");
    }
    for (ReplicaType type : kStatusOrder) {
      const auto it = spec.replica_specs.find(type);
      if (it == spec.replica_specs.end()) continue;
      CheckReplicaSpec("spec.tfReplicaSpecs." + std::string(ReplicaTypeName(type)), type,
                       it->second);
    }
    CheckTotalReplicas(spec);
  }

  // Counts are int32 each and at most 5 types: the sum fits int64 whatever they hold.
  void CheckTotalReplicas(const TFJobSpec& spec) {
    std::int64_t total = 0;
    for (const auto& [type, replica] : spec.replica_specs) total += std::max(replica.replicas, 0);
    if (total > limits_.max_replicas_per_job) {
      Add("spec.tfReplicaSpecs", "has " + std::to_string(total) +
                                     " replicas in all, over the maximum of " +
                                     std::to_string(limits_.max_replicas_per_job) +
                                     " per job; use fewer replicas or split the job");
    }
  }

  void CheckReplicaSpec(const std::string& path, ReplicaType type, const ReplicaSpec& replica) {
    const int max_replicas = std::min(kMaxReplicasPerType, limits_.max_replicas_per_job);
    if (replica.replicas < 0) {
      Add(path + ".replicas", "must be >= 0, got " + std::to_string(replica.replicas));
    } else if (replica.replicas > max_replicas) {
      Add(path + ".replicas", "must be <= " + std::to_string(max_replicas) +
                                  " (the maximum per replica type), got " +
                                  std::to_string(replica.replicas));
    } else if (IsChiefOrMaster(type) && replica.replicas > 1) {
      Add(path + ".replicas", "must be 0 or 1 (a job has at most one " +
                                  std::string(ReplicaTypeName(type)) + "), got " +
                                  std::to_string(replica.replicas));
    }
    CheckContainers(path + ".template.spec.containers", replica.pod_template);
  }

  void CheckContainers(const std::string& path, const nlohmann::json& pod_template) {
    const nlohmann::json* containers = nullptr;
    if (pod_template.is_object()) {
      const auto spec = pod_template.find("spec");
      if (spec != pod_template.end() && spec->is_object()) {
        const auto found = spec->find("containers");
        if (found != spec->end()) containers = &*found;
      }
    }
    if (containers == nullptr || !containers->is_array() || containers->empty()) {
      Add(path, "must list at least one container, one of them named \"tensorflow\"");
      return;
    }
    for (std::size_t i = 0; i < containers->size(); ++i) {
      CheckContainer(path + "[" + std::to_string(i) + "]", (*containers)[i]);
    }
    if (FindDefaultContainer(pod_template) == nullptr) {
      Add(path,
          "must have a container named \"tensorflow\" (it receives TF_CONFIG and its exit code "
          "decides restarts); rename the training container");
    }
  }

  void CheckContainer(const std::string& path, const nlohmann::json& container) {
    if (!container.is_object()) {
      Add(path, "must be an object with a name and an image");
      return;
    }
    const auto name = container.find("name");
    if (name == container.end() || !name->is_string() || name->get<std::string>().empty()) {
      Add(path + ".name", "must be set, e.g. \"tensorflow\"");
    }
    const auto image = container.find("image");
    if (image == container.end() || !image->is_string() || image->get<std::string>().empty()) {
      Add(path + ".image", "must be set to the container image to run");
    }
  }

  void CheckRunPolicy(const RunPolicy& policy) {
    const std::string path = "spec.runPolicy";
    if (policy.ttl_seconds_after_finished && *policy.ttl_seconds_after_finished < 0) {
      Add(path + ".ttlSecondsAfterFinished",
          "must be >= 0 (seconds; omit it to keep finished jobs), got " +
              std::to_string(*policy.ttl_seconds_after_finished));
    }
    if (policy.active_deadline_seconds && *policy.active_deadline_seconds <= 0) {
      Add(path + ".activeDeadlineSeconds", "must be > 0 (seconds; omit it for no deadline), got " +
                                               std::to_string(*policy.active_deadline_seconds));
    }
    if (policy.backoff_limit && *policy.backoff_limit < 0) {
      Add(path + ".backoffLimit", "must be >= 0 (restarts allowed; omit it for no limit), got " +
                                      std::to_string(*policy.backoff_limit));
    }
    if (policy.scheduling_policy)
      CheckSchedulingPolicy(path + ".schedulingPolicy", *policy.scheduling_policy);
    if (policy.managed_by && !IsSupportedManager(*policy.managed_by)) {
      std::string supported;
      for (std::string_view manager : kSupportedManagers) {
        supported += (supported.empty() ? "" : " or ") + Quote(manager);
      }
      // A hostile value may be megabytes long: the message quotes only a short one.
      const std::string& got = *policy.managed_by;
      Add(path + ".managedBy",
          "must be " + supported + " (omit it for this operator), got " +
              (got.size() <= kMaxLabelLength
                   ? Quote(got)
                   : "a string of " + std::to_string(got.size()) + " characters"));
    }
  }

  void CheckSchedulingPolicy(const std::string& path, const nlohmann::json& policy) {
    if (!policy.is_object()) {
      Add(path, "must be an object");
      return;
    }
    for (const char* key : {"minAvailable", "scheduleTimeoutSeconds"}) {
      const auto value = policy.find(key);
      if (value == policy.end() || value->is_null()) continue;
      if (!value->is_number_integer() || value->get<std::int64_t>() < 0) {
        Add(path + "." + key,
            "must be an integer >= 0, got " +
                value->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      }
    }
  }

  const Limits& limits_;
  std::vector<FieldError> errors_;
};

}  // namespace

std::vector<FieldError> Validate(const TFJob& job, const Limits& limits) {
  return Validator(limits).Run(job);
}

absl::Status FieldStatus(const std::string& field, const std::string& message) {
  absl::Status status =
      absl::InvalidArgumentError(field.empty() ? message : field + ": " + message);
  if (!field.empty()) status.SetPayload(kFieldPayload, absl::Cord(field));
  return status;
}

absl::Status ValidationStatus(const ObjectMeta& metadata, const std::vector<FieldError>& errors) {
  if (errors.empty()) return absl::OkStatus();
  std::string message = "tfjob " + JobKey(metadata) + ": ";
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) message += "; ";
    message += errors[i].field + " " + errors[i].message;
  }
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kFieldPayload, absl::Cord(errors.front().field));
  return status;
}

std::optional<std::string> ErrorField(const absl::Status& status) {
  const auto payload = status.GetPayload(kFieldPayload);
  if (!payload) return std::nullopt;
  return std::string(*payload);
}

absl::StatusOr<TFJob> LoadTFJob(const nlohmann::json& object, const Limits& limits) {
  TAAS_ASSIGN_OR_RETURN(TFJob job, TFJobFromJson(object));
  SetDefaults(job);
  TAAS_RETURN_IF_ERROR(ValidationStatus(job.metadata, Validate(job, limits)));
  return job;
}

}  // namespace taas::tfjob
