// The CRD's schema and the rules library enforce the same limits and values: the API server
// rejects what validation would, with the same numbers and names.
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include "taas/tfjob/progress.h"
#include "taas/tfjob/tfjob.h"
#include "taas/tfjob/validation.h"

namespace taas::tfjob {
namespace {

YAML::Node SpecSchema() {
  const YAML::Node crd = YAML::LoadFile(TAAS_TFJOB_CRD_PATH);
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
}

YAML::Node ReplicaSpecsSchema() { return SpecSchema()["properties"]["tfReplicaSpecs"]; }

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

TEST_CASE("the CRD's managedBy values are kSupportedManagers, and the field is immutable") {
  const YAML::Node managed_by = SpecSchema()["properties"]["runPolicy"]["properties"]["managedBy"];
  REQUIRE(managed_by["enum"]);
  std::vector<std::string> listed;
  for (const YAML::Node& value : managed_by["enum"]) listed.push_back(value.as<std::string>());
  CHECK(listed ==
        std::vector<std::string>(std::begin(kSupportedManagers), std::end(kSupportedManagers)));
  bool immutable = false;
  for (const YAML::Node& rule : SpecSchema()["x-kubernetes-validations"]) {
    const std::string text = rule["rule"].as<std::string>();
    immutable |= text.find("oldSelf.runPolicy.managedBy") != std::string::npos;
  }
  CHECK(immutable);
}

TEST_CASE("the CRD requires an image on every container, as Kubeflow's webhook and Validate do") {
  const YAML::Node container =
      ReplicaSpecsSchema()["additionalProperties"]["properties"]["template"]["properties"]["spec"]
                          ["properties"]["containers"]["items"];
  std::vector<std::string> required;
  for (const YAML::Node& field : container["required"]) required.push_back(field.as<std::string>());
  CHECK(std::find(required.begin(), required.end(), "image") != required.end());
  CHECK(container["properties"]["image"]["minLength"].as<int>() == 1);
}

TEST_CASE("the CRD's status.progress holds what ProgressToJson writes, and its columns read it") {
  const YAML::Node crd = YAML::LoadFile(TAAS_TFJOB_CRD_PATH);
  const YAML::Node version = crd["spec"]["versions"][0];
  const YAML::Node progress =
      version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["progress"];
  REQUIRE(progress["properties"]);
  for (const char* map : {"metrics", "finalMetrics"})
    CHECK(progress["properties"][map]["maxProperties"].as<std::size_t>() == kMaxProgressMetrics);
  CHECK(progress["properties"]["percent"]["maximum"].as<int>() == 100);
  CHECK(progress["properties"]["finalError"]["maxLength"].as<std::size_t>() ==
        kMaxProgressErrorBytes);
  const YAML::Node stall = progress["properties"]["stall"]["properties"];
  CHECK(stall["waitingOn"]["maxLength"].as<std::size_t>() == kMaxProgressPeerBytes);
  // The message holds the longest peer behind the longest duration FormatEta writes.
  const std::string longest =
      DescribeStall({kMaxProgressStep, std::string(kMaxProgressPeerBytes, 'p')});
  CHECK(stall["message"]["maxLength"].as<std::size_t>() >= longest.size());
  JobProgress full;
  full.global_step = 1;
  full.max_steps = 2;
  full.examples_per_second = 3;
  full.eta_seconds = 4;
  full.metrics = {{"loss", 1}, {"accuracy", 0.5}};
  full.final_metrics = {{"accuracy", 0.5}};
  full.final_error = "evaluate() failed";
  full.stall = ProgressStall{12, "ps-0"};
  full.update_time = Time(std::chrono::seconds(0));
  const nlohmann::json written = ProgressToJson(full);
  for (auto it = written.begin(); it != written.end(); ++it) {
    CAPTURE(it.key());
    CHECK(progress["properties"][it.key()]);
  }
  // The default view: Kubeflow's State and Age around the progress; the rest is -o wide.
  std::vector<std::string> default_view;
  for (const YAML::Node& column : version["additionalPrinterColumns"]) {
    if (!column["priority"] || column["priority"].as<int>() == 0)
      default_view.push_back(column["name"].as<std::string>() + " " +
                             column["jsonPath"].as<std::string>());
  }
  CHECK(default_view == std::vector<std::string>{"State .status.conditions[-1:].type",
                                                 "Progress .status.progress.percent",
                                                 "ETA .status.progress.eta",
                                                 "Accuracy .status.progress.accuracy",
                                                 "Age .metadata.creationTimestamp"});
}

}  // namespace
}  // namespace taas::tfjob
