// Fuzz target: a user's TFJob as JSON (what the API server, the operator and the UI take) through
// parsing, Kubeflow's defaults and validation, back to JSON, to the TF_CONFIG of its replicas and
// to a first status computation. Any input must give a value or an error: never a crash, an
// exception or an invalid TF_CONFIG.
//
// YAML is fuzzed as `taas run` reads it, in a child process with limits, by fuzz_manifest_yaml
// (launcher): yaml-cpp 0.7 loops allocating on an unclosed quoted scalar inside a
// block mapping (docs/operator.md, "Limits"), which in process would end every run within
// seconds. The YAML inputs found before are unit tests in yaml_test.cc.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

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
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) Exercise(parsed);
  return 0;
}
