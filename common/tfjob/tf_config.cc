#include "taas/tfjob/tf_config.h"

#include <nlohmann/json.hpp>

#include "taas/tfjob/defaults.h"

namespace taas::tfjob {

bool NeedsTfConfig(const TFJobSpec& spec) { return TotalReplicas(spec) != 1; }

ClusterSpec BuildClusterSpec(const TFJobSpec& spec,
                             const std::function<std::string(ReplicaType, int)>& address) {
  ClusterSpec cluster;
  for (const auto& [type, replica] : spec.replica_specs) {
    auto& hosts = cluster[std::string(ReplicaTypeKey(type))];
    for (int index = 0; index < replica.replicas; ++index) hosts.push_back(address(type, index));
  }
  return cluster;
}

ClusterSpec KubernetesClusterSpec(const TFJob& job, const ServiceAddressing& addressing) {
  return BuildClusterSpec(job.spec, [&](ReplicaType type, int index) {
    std::string host =
        ReplicaName(job.metadata.name, type, index) + "." + job.metadata.namespace_name + ".svc";
    if (!addressing.cluster_domain.empty()) host += "." + addressing.cluster_domain;
    const int port =
        DeclaredTfJobPort(job.spec.replica_specs.at(type).pod_template).value_or(addressing.port);
    return host + ":" + std::to_string(port);
  });
}

std::string TfConfigJson(const ClusterSpec& cluster, const TaskId& task) {
  // ordered_json keeps Kubeflow's key order; the cluster map itself is sorted like Go's maps.
  nlohmann::ordered_json config;
  config["cluster"] = nlohmann::ordered_json::object();
  for (const auto& [key, hosts] : cluster) config["cluster"][key] = hosts;
  config["task"] = {{"type", ReplicaTypeKey(task.type)}, {"index", task.index}};
  config["environment"] = "cloud";
  return config.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string SparseTfConfigJson(const ClusterSpec& cluster, const TaskId& task) {
  // Field order of Kubeflow's SparseTFConfig / SparseClusterSpec structs.
  nlohmann::ordered_json sparse;
  sparse["worker"] = nlohmann::ordered_json::object();
  sparse["ps"] = nlohmann::ordered_json::array();
  const auto own = cluster.find(std::string(ReplicaTypeKey(task.type)));
  const bool has_own = own != cluster.end() && task.index >= 0 &&
                       static_cast<std::size_t>(task.index) < own->second.size();
  if (task.type == ReplicaType::kPS && has_own) {
    sparse["ps"].push_back(own->second[task.index]);
  } else if (task.type == ReplicaType::kWorker) {
    if (const auto ps = cluster.find("ps"); ps != cluster.end()) sparse["ps"] = ps->second;
    if (has_own) sparse["worker"][std::to_string(task.index)] = own->second[task.index];
  }
  nlohmann::ordered_json config;
  config["sparseCluster"] = std::move(sparse);
  config["task"] = {{"type", ReplicaTypeKey(task.type)}, {"index", task.index}};
  return config.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string KubernetesTfConfig(const TFJob& job, const TaskId& task,
                               const ServiceAddressing& addressing) {
  const ClusterSpec cluster = KubernetesClusterSpec(job, addressing);
  return job.spec.enable_dynamic_worker ? SparseTfConfigJson(cluster, task)
                                        : TfConfigJson(cluster, task);
}

}  // namespace taas::tfjob
