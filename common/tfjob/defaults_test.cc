#include "taas/tfjob/defaults.h"

#include <doctest/doctest.h>

#include "test_support.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;
using testing::TestJob;

json Containers(const TFJob& job, ReplicaType type) {
  return job.spec.replica_specs.at(type).pod_template["spec"]["containers"];
}

TEST_CASE("the tfjob-port 2222 is added to the tensorflow container when missing") {
  TFJob job = TestJob({{ReplicaType::kWorker, 2}});
  SetDefaults(job);
  CHECK(Containers(job, ReplicaType::kWorker)[0]["ports"] ==
        json::parse(R"([{"name":"tfjob-port","containerPort":2222}])"));
  SUBCASE("idempotent") {
    const TFJob once = job;
    SetDefaults(job);
    CHECK(job == once);
  }
}

TEST_CASE("a declared tfjob-port is kept and other ports are left alone") {
  TFJob job = TestJob({{ReplicaType::kPS, 1}});
  auto& container = job.spec.replica_specs[ReplicaType::kPS].pod_template["spec"]["containers"][0];
  container["ports"] = json::parse(
      R"([{"name":"metrics","containerPort":9090},{"name":"tfjob-port","containerPort":3333}])");
  const json before = container["ports"];
  SetDefaults(job);
  CHECK(Containers(job, ReplicaType::kPS)[0]["ports"] == before);
  CHECK(TfJobPort(job.spec.replica_specs[ReplicaType::kPS].pod_template) == 3333);
  CHECK(DeclaredTfJobPort(job.spec.replica_specs[ReplicaType::kPS].pod_template) == 3333);
  CHECK(DeclaredContainerPort(job.spec.replica_specs[ReplicaType::kPS].pod_template, "metrics") ==
        9090);
  CHECK_FALSE(DeclaredContainerPort(job.spec.replica_specs[ReplicaType::kPS].pod_template, "grpc"));
}

TEST_CASE("a declared port outside 1-65535 or of another type is no port") {
  for (const char* port : {"0", "65536", "4294967296", "-1", "\"9090\"", "9090.5"}) {
    TFJob job = TestJob({{ReplicaType::kWorker, 1}});
    json& container =
        job.spec.replica_specs[ReplicaType::kWorker].pod_template["spec"]["containers"][0];
    container["ports"] =
        json::parse(std::string(R"([{"name":"metrics","containerPort":)") + port + "}]");
    CAPTURE(port);
    CHECK_FALSE(DeclaredContainerPort(job.spec.replica_specs[ReplicaType::kWorker].pod_template,
                                      "metrics"));
  }
}

TEST_CASE("other ports get the tfjob-port appended") {
  TFJob job = TestJob({{ReplicaType::kWorker, 1}});
  job.spec.replica_specs[ReplicaType::kWorker].pod_template["spec"]["containers"][0]["ports"] =
      json::parse(R"([{"name":"metrics","containerPort":9090}])");
  SetDefaults(job);
  CHECK(Containers(job, ReplicaType::kWorker)[0]["ports"] ==
        json::parse(R"([{"name":"metrics","containerPort":9090},)"
                    R"({"name":"tfjob-port","containerPort":2222}])"));
}

TEST_CASE("without a tensorflow container Kubeflow defaults the first container") {
  TFJob job = TestJob({{ReplicaType::kWorker, 1}});
  job.spec.replica_specs[ReplicaType::kWorker].pod_template = json::parse(
      R"({"spec":{"containers":[{"name":"main","image":"a"},{"name":"side","image":"b"}]}})");
  SetDefaults(job);
  CHECK(Containers(job, ReplicaType::kWorker)[0].contains("ports"));
  CHECK_FALSE(Containers(job, ReplicaType::kWorker)[1].contains("ports"));
}

TEST_CASE("templates without containers are left for validation to report") {
  TFJob job = TestJob({{ReplicaType::kWorker, 1}});
  job.spec.replica_specs[ReplicaType::kWorker].pod_template = json::object();
  SetDefaults(job);
  CHECK(job.spec.replica_specs[ReplicaType::kWorker].pod_template == json::object());
}

TEST_CASE("the port of a template defaults to 2222") {
  CHECK(TfJobPort(json::object()) == 2222);
  CHECK(TfJobPort(TestJob({{ReplicaType::kWorker, 1}})
                      .spec.replica_specs[ReplicaType::kWorker]
                      .pod_template) == 2222);
  CHECK_FALSE(DeclaredTfJobPort(json::object()).has_value());
}

}  // namespace
}  // namespace taas::tfjob
