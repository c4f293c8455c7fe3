// Fuzz target: a user's TFJob manifest, as YAML or JSON, through parsing, Kubeflow's defaults and
// validation, back to JSON, to the TF_CONFIG of its replicas and to a first status computation.
// Any input must give a value or an error: never a crash, an exception or an invalid TF_CONFIG.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "taas/tfjob/serialization.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/tf_config.h"
#include "taas/tfjob/validation.h"

namespace {

using nlohmann::json;
using namespace taas::tfjob;

void Require(bool condition) {
  if (!condition) std::abort();
}

// TF_CONFIG of the first and the last replica of each type (every replica would be quadratic).
void CheckTfConfigs(const TFJob& job) {
  if (!NeedsTfConfig(job.spec)) return;
  const ServiceAddressing addressing;
  for (const auto& [type, replica] : job.spec.replica_specs) {
    for (int index : {0, replica.replicas - 1}) {
      if (index < 0) continue;
      const std::string tf_config = KubernetesTfConfig(job, TaskId{type, index}, addressing);
      Require(json::accept(tf_config));
    }
  }
}

void Exercise(const json& document) {
  absl::StatusOr<TFJob> job = LoadTFJob(document);
  if (!job.ok()) return;
  // What the operator writes back must load again as the same job.
  absl::StatusOr<TFJob> again = LoadTFJob(TFJobToJson(*job));
  Require(again.ok() && again->spec == job->spec);
  CheckTfConfigs(*job);
  const StatusUpdate update = ComputeJobStatus(*job, {}, Time{});
  TFJob with_status = *job;
  with_status.status = update.status;
  (void)ReplicasToCreate(with_status, {});
  (void)StatusToJson(update.status).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<json> documents;
  // JSON is YAML too, but the API server and the UI read JSON with a JSON parser: try both.
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) documents.push_back(std::move(parsed));
  if (absl::StatusOr<std::vector<json>> yaml = YamlToJson(text); yaml.ok()) {
    for (json& document : *yaml) documents.push_back(std::move(document));
  }
  for (const json& document : documents) Exercise(document);
  return 0;
}
