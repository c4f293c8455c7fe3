// Helpers shared by this folder's tests (not part of the library).
#pragma once

#include <map>

#include "taas/tfjob/tfjob.h"

namespace taas::tfjob::testing {

// A job "default/j" with a valid `tensorflow` container in every replica template.
inline TFJob TestJob(const std::map<ReplicaType, int>& replicas,
                     RestartPolicy policy = RestartPolicy::kNever) {
  TFJob job;
  job.metadata.name = "j";
  job.metadata.namespace_name = "default";
  for (const auto& [type, count] : replicas) {
    ReplicaSpec& spec = job.spec.replica_specs[type];
    spec.replicas = count;
    spec.restart_policy = policy;
    spec.pod_template = {
        {"spec", {{"containers", {{{"name", "tensorflow"}, {"image", "taas/trainer:1"}}}}}}};
  }
  return job;
}

// A fixed instant plus `seconds`, so tests read as a timeline.
inline Time At(int seconds) {
  return Time(std::chrono::sys_days(std::chrono::year(2026) / 1 / 1)) +
         std::chrono::seconds(seconds);
}

}  // namespace taas::tfjob::testing
