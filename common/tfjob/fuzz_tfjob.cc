// Fuzz target: a user's TFJob as JSON (what the API server, the operator and the UI take) through
// parsing, Kubeflow's defaults and validation, back to JSON, to the TF_CONFIG of its replicas and
// to a first status computation, then a second with its replicas succeeded at a hostile time. Any
// input must give a value or an error: never a crash, an exception or an invalid TF_CONFIG.
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

// A second round with the first replica of every type observed: Succeeded at the job's
// creationTimestamp (any time the input holds, or none) and the rest Running, so the success
// rule holds and the wait for an evaluator meets a hostile finish time. The wait is bounded by
// the grace.
void CheckSecondRound(const TFJob& job) {
  std::vector<ObservedReplica> observed;
  for (const auto& [type, replica] : job.spec.replica_specs) {
    ObservedReplica& r = observed.emplace_back();
    r.type = type;
    r.phase = type == ReplicaType::kEvaluator ? ReplicaPhase::kRunning : ReplicaPhase::kSucceeded;
    r.exit_code = 0;
    r.finished_at = job.metadata.creation_timestamp;
  }
  const Time now = Time(std::chrono::seconds(1'800'000'000));
  const StatusUpdate update = ComputeJobStatus(job, observed, now);
  if (update.awaiting_evaluator_until) {
    Require(*update.awaiting_evaluator_until > now &&
            *update.awaiting_evaluator_until <= now + 2 * kMaxEvaluatorGrace);
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
  CheckSecondRound(with_status);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) Exercise(parsed);
  return 0;
}
