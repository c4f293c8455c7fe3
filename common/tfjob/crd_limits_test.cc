// The CRD's schema and the rules library enforce the same size limits: the API server rejects
// what validation would, with the same numbers.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "taas/tfjob/validation.h"

namespace taas::tfjob {
namespace {

YAML::Node ReplicaSpecsSchema() {
  const YAML::Node crd = YAML::LoadFile(TAAS_TFJOB_CRD_PATH);
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["tfReplicaSpecs"];
}

TEST_CASE("the CRD's per-type maximum is kMaxReplicasPerType") {
  const YAML::Node replicas =
      ReplicaSpecsSchema()["additionalProperties"]["properties"]["replicas"];
  REQUIRE(replicas["maximum"]);
  CHECK(replicas["maximum"].as<int>() == kMaxReplicasPerType);
}

TEST_CASE("the CRD's per-job rule and its message use kMaxReplicasPerJob") {
  const std::string bound = "sum() <= " + std::to_string(kMaxReplicasPerJob);
  const std::string words = "maximum of " + std::to_string(kMaxReplicasPerJob) + " ";
  bool found = false;
  for (const YAML::Node& rule : ReplicaSpecsSchema()["x-kubernetes-validations"]) {
    const std::string text = rule["rule"].as<std::string>();
    if (text.find("sum()") == std::string::npos) continue;
    found = true;
    CHECK(text.find(bound) != std::string::npos);
    CHECK(rule["message"].as<std::string>().find(words) != std::string::npos);
  }
  CHECK(found);
}

}  // namespace
}  // namespace taas::tfjob
