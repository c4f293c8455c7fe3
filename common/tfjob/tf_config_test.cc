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

TEST_CASE("a job without PS replicas (all-reduce) gets a TF_CONFIG that lists no ps") {
  const auto job = JobWith({{ReplicaType::kWorker, 2}, {ReplicaType::kEvaluator, 1}});
  const auto config = TfConfigJson(KubernetesClusterSpec(job, ServiceAddressing{}),
                                   TaskId{ReplicaType::kWorker, 1});
  CHECK(config ==
        R"({"cluster":{"evaluator":["j-evaluator-0.ns.svc:2222"],)"
        R"("worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},)"
        R"("task":{"type":"worker","index":1},"environment":"cloud"})");
}

TEST_CASE(
    "TF_CONFIG is needed unless the job has exactly one replica, as Kubeflow's isDistributed") {
  CHECK_FALSE(NeedsTfConfig(JobWith({{ReplicaType::kWorker, 1}}).spec));
  CHECK_FALSE(NeedsTfConfig(JobWith({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 0}}).spec));
  CHECK(NeedsTfConfig(JobWith({{ReplicaType::kWorker, 2}}).spec));
  CHECK(NeedsTfConfig(JobWith({{ReplicaType::kChief, 1}, {ReplicaType::kEvaluator, 1}}).spec));
  CHECK(NeedsTfConfig(JobWith({{ReplicaType::kWorker, 0}}).spec));
}

TEST_CASE("each replica type listens on its template's tfjob-port") {
  TFJob job = JobWith({{ReplicaType::kPS, 1}, {ReplicaType::kWorker, 1}});
  job.spec.replica_specs[ReplicaType::kPS].pod_template = nlohmann::json::parse(R"({"spec":{
      "containers":[{"name":"tensorflow","ports":[{"name":"tfjob-port","containerPort":4444}]}]}})");
  job.spec.replica_specs[ReplicaType::kWorker].pod_template = nlohmann::json::parse(
      R"({"spec":{"containers":[{"name":"tensorflow","ports":[{"name":"metrics","containerPort":9090}]}]}})");
  const auto cluster = KubernetesClusterSpec(job, ServiceAddressing{});
  CHECK(cluster.at("ps") == std::vector<std::string>{"j-ps-0.ns.svc:4444"});
  CHECK(cluster.at("worker") == std::vector<std::string>{"j-worker-0.ns.svc:2222"});
}

TEST_CASE("the launcher builds the cluster from its own addresses") {
  const auto cluster = BuildClusterSpec(
      JobWith({{ReplicaType::kPS, 1}, {ReplicaType::kWorker, 2}}).spec,
      [](ReplicaType type, int index) {
        return "127.0.0.1:" + std::to_string(type == ReplicaType::kPS ? 5000 : 6000 + index);
      });
  CHECK(cluster ==
        ClusterSpec{{"ps", {"127.0.0.1:5000"}}, {"worker", {"127.0.0.1:6000", "127.0.0.1:6001"}}});
}

TEST_CASE("enableDynamicWorker gives Kubeflow's sparse TF_CONFIG") {
  TFJob job = JobWith({{ReplicaType::kPS, 2}, {ReplicaType::kWorker, 2}});
  job.spec.enable_dynamic_worker = true;
  CHECK(KubernetesTfConfig(job, TaskId{ReplicaType::kWorker, 1}, ServiceAddressing{}) ==
        R"({"sparseCluster":{"worker":{"1":"j-worker-1.ns.svc:2222"},)"
        R"("ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"]},"task":{"type":"worker","index":1}})");
  CHECK(KubernetesTfConfig(job, TaskId{ReplicaType::kPS, 1}, ServiceAddressing{}) ==
        R"({"sparseCluster":{"worker":{},"ps":["j-ps-1.ns.svc:2222"]},)"
        R"("task":{"type":"ps","index":1}})");
  job.spec.enable_dynamic_worker = false;
  CHECK(KubernetesTfConfig(job, TaskId{ReplicaType::kPS, 0}, ServiceAddressing{}) ==
        TfConfigJson(KubernetesClusterSpec(job, ServiceAddressing{}), TaskId{ReplicaType::kPS, 0}));
}

}  // namespace
}  // namespace taas::tfjob
