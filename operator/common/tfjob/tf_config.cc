#include "taas/tfjob/tf_config.h"

#include <nlohmann/json.hpp>

namespace taas::tfjob {

ClusterSpec KubernetesClusterSpec(const TFJob& job, const ServiceAddressing& addressing) {
  ClusterSpec cluster;
  for (const auto& [type, spec] : job.spec.replica_specs) {
    auto& hosts = cluster[std::string(ReplicaTypeKey(type))];
    for (int index = 0; index < spec.replicas; ++index) {
      std::string host =
          ReplicaName(job.metadata.name, type, index) + "." + job.metadata.namespace_name + ".svc";
      if (!addressing.cluster_domain.empty()) host += "." + addressing.cluster_domain;
      hosts.push_back(host + ":" + std::to_string(addressing.port));
    }
  }
  return cluster;
}

std::string TfConfigJson(const ClusterSpec& cluster, const TaskId& task) {
  // ordered_json keeps Kubeflow's key order; the cluster map itself is sorted like Go's maps.
  nlohmann::ordered_json config;
  config["cluster"] = nlohmann::ordered_json::object();
  for (const auto& [key, hosts] : cluster) config["cluster"][key] = hosts;
  config["task"] = {{"type", ReplicaTypeKey(task.type)}, {"index", task.index}};
  config["environment"] = "cloud";
  return config.dump();
}

}  // namespace taas::tfjob
