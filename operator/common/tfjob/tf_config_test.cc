#include "taas/tfjob/tf_config.h"

#include <doctest/doctest.h>

namespace taas::tfjob {
namespace {

TFJob JobWith(std::map<ReplicaType, int> replicas) {
  TFJob job;
  job.metadata.name = "j";
  job.metadata.namespace_name = "ns";
  for (const auto& [type, count] : replicas) job.spec.replica_specs[type].replicas = count;
  return job;
}

TEST_CASE("replica names are {job}-{type}-{index} in lower case") {
  CHECK(ReplicaName("mnist", ReplicaType::kPS, 0) == "mnist-ps-0");
  CHECK(ReplicaName("mnist", ReplicaType::kWorker, 3) == "mnist-worker-3");
  CHECK(ReplicaName("mnist", ReplicaType::kMaster, 0) == "mnist-master-0");
}

TEST_CASE("replica type names round-trip and unknown names are rejected") {
  for (auto type : {ReplicaType::kChief, ReplicaType::kMaster, ReplicaType::kPS,
                    ReplicaType::kWorker, ReplicaType::kEvaluator}) {
    CHECK(ParseReplicaType(ReplicaTypeName(type)) == type);
  }
  CHECK_FALSE(ParseReplicaType("worker").has_value());
  CHECK_FALSE(ParseReplicaType("Launcher").has_value());
}

TEST_CASE("the Kubernetes cluster spec lists every replica of every type, evaluator included") {
  const auto cluster = KubernetesClusterSpec(
      JobWith({{ReplicaType::kPS, 2}, {ReplicaType::kWorker, 1}, {ReplicaType::kEvaluator, 1}}),
      ServiceAddressing{});
  CHECK(cluster.at("ps") == std::vector<std::string>{"j-ps-0.ns.svc:2222", "j-ps-1.ns.svc:2222"});
  CHECK(cluster.at("worker") == std::vector<std::string>{"j-worker-0.ns.svc:2222"});
  CHECK(cluster.at("evaluator") == std::vector<std::string>{"j-evaluator-0.ns.svc:2222"});
}

TEST_CASE("a custom cluster domain and port are honoured") {
  const auto cluster =
      KubernetesClusterSpec(JobWith({{ReplicaType::kChief, 1}}),
                            ServiceAddressing{.port = 3333, .cluster_domain = "cluster.local"});
  CHECK(cluster.at("chief") == std::vector<std::string>{"j-chief-0.ns.svc.cluster.local:3333"});
}

TEST_CASE("TF_CONFIG matches Kubeflow's format byte for byte") {
  const auto job =
      JobWith({{ReplicaType::kPS, 1}, {ReplicaType::kWorker, 1}, {ReplicaType::kEvaluator, 1}});
  const auto config = TfConfigJson(KubernetesClusterSpec(job, ServiceAddressing{}),
                                   TaskId{ReplicaType::kWorker, 0});
  CHECK(config ==
        R"({"cluster":{"evaluator":["j-evaluator-0.ns.svc:2222"],"ps":["j-ps-0.ns.svc:2222"],)"
        R"("worker":["j-worker-0.ns.svc:2222"]},"task":{"type":"worker","index":0},)"
        R"("environment":"cloud"})");
}

}  // namespace
}  // namespace taas::tfjob
