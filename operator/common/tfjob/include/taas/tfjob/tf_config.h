// The TF_CONFIG environment variable every replica receives, in Kubeflow's exact format:
//   {"cluster":{"ps":["j-ps-0.ns.svc:2222"],"worker":[...]},
//    "task":{"type":"worker","index":0},"environment":"cloud"}
#pragma once

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
  int port = 2222;
  // Appended after `.svc` when set, like Kubeflow's CUSTOM_CLUSTER_DOMAIN (e.g. "cluster.local").
  std::string cluster_domain;
};

// The cluster map as Kubernetes sees it: every replica of every present type (evaluator included)
// at `{job}-{type}-{index}.{namespace}.svc[.{domain}]:{port}`.
ClusterSpec KubernetesClusterSpec(const TFJob& job, const ServiceAddressing& addressing);

// Serialises TF_CONFIG with keys in Kubeflow's order (cluster, task, environment).
std::string TfConfigJson(const ClusterSpec& cluster, const TaskId& task);

}  // namespace taas::tfjob
