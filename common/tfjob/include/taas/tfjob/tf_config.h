// The TF_CONFIG environment variable every replica receives, in Kubeflow's exact format:
//   {"cluster":{"ps":["j-ps-0.ns.svc:2222"],"worker":[...]},
//    "task":{"type":"worker","index":0},"environment":"cloud"}
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// Replica-type key ("ps", "worker", ...) -> the address of each replica, by index.
using ClusterSpec = std::map<std::string, std::vector<std::string>>;

struct TaskId {
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;
};

struct ServiceAddressing {
  // The port of replica types whose template declares no `tfjob-port` (see TfJobPort).
  int port = kDefaultPort;
  // Appended after `.svc` when set, like Kubeflow's CUSTOM_CLUSTER_DOMAIN (e.g. "cluster.local").
  std::string cluster_domain;
};

// Kubeflow's isDistributed: TF_CONFIG is set unless the job has exactly one replica in total.
bool NeedsTfConfig(const TFJobSpec& spec);

// The cluster map with every replica of every present type (evaluator included), each at
// `address(type, index)` (the launcher passes "127.0.0.1:<its port>").
ClusterSpec BuildClusterSpec(const TFJobSpec& spec,
                             const std::function<std::string(ReplicaType, int)>& address);

// The cluster map as Kubernetes sees it:
// `{job}-{type}-{index}.{namespace}.svc[.{domain}]:{port}`, where the port is the type's
// template `tfjob-port` when declared, else `addressing.port`.
ClusterSpec KubernetesClusterSpec(const TFJob& job, const ServiceAddressing& addressing);

// Serialises TF_CONFIG with keys in Kubeflow's order (cluster, task, environment).
std::string TfConfigJson(const ClusterSpec& cluster, const TaskId& task);

// Kubeflow's sparse form for enableDynamicWorker:
//   {"sparseCluster":{"worker":{"<i>":"addr"},"ps":[...]},"task":{"type":"worker","index":i}}
// A worker sees every PS and itself; a PS sees itself; other types see empty maps.
std::string SparseTfConfigJson(const ClusterSpec& cluster, const TaskId& task);

// The TF_CONFIG value of one replica in Kubernetes (sparse when spec.enableDynamicWorker).
std::string KubernetesTfConfig(const TFJob& job, const TaskId& task,
                               const ServiceAddressing& addressing);

}  // namespace taas::tfjob
