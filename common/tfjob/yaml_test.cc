#include <doctest/doctest.h>

#include <cmath>

#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;

json One(const std::string& yaml) {
  const auto documents = YamlToJson(yaml);
  REQUIRE(documents.ok());
  REQUIRE(documents->size() == 1);
  return documents->front();
}

TEST_CASE("plain scalars resolve as kubectl's YAML 1.1 decoder resolves them") {
  struct Case {
    const char* scalar;
    json expected;
  };
  const Case cases[] = {
      {"2", 2},
      {"-7", -7},
      {"+3", 3},
      {"0x1F", 31},
      {"0644", 420},
      {"0b101", 5},
      {"1_000", 1000},
      {"0", 0},
      {"1.5", 1.5},
      {".5", 0.5},
      {"1e3", 1000.0},
      {"-2.5E-1", -0.25},
      {"true", true},
      {"False", false},
      {"yes", true},
      {"off", false},
      {"y", true},
      {"N", false},
      {"null", nullptr},
      {"~", nullptr},
      {"hello", "hello"},
      {"1.2.3", "1.2.3"},
      {"0x", "0x"},
      {"12abc", "12abc"},
      {"2026-01-01", "2026-01-01"},
      {"-x", "-x"},
      {"e3", "e3"},
  };
  for (const Case& c : cases) {
    const std::string scalar = c.scalar;
    CAPTURE(scalar);
    CHECK(One("v: " + scalar)["v"] == c.expected);
  }
  CHECK(One("v:")["v"].is_null());
  CHECK(One("v: .inf")["v"] == std::numeric_limits<double>::infinity());
  CHECK(std::isnan(One("v: .nan")["v"].get<double>()));
}

TEST_CASE("quoted, block and explicitly tagged scalars stay strings") {
  CHECK(One("v: \"2\"")["v"] == "2");
  CHECK(One("v: 'true'")["v"] == "true");
  CHECK(One("v: !!str 10")["v"] == "10");
  CHECK(One("v: |\n  line one\n  line two\n")["v"] == "line one\nline two\n");
  CHECK(One("v: \"\"")["v"] == "");
}

TEST_CASE("maps and sequences become objects and arrays") {
  CHECK(One("a: [1, two, {b: null}]\nc: {d: e}\n") ==
        json::parse(R"({"a": [1, "two", {"b": null}], "c": {"d": "e"}})"));
  CHECK(One("1: x")["1"] == "x");
  CHECK(One("y: x")["true"] == "x");  // kubectl's YAML 1.1 wart, kept for fidelity
}

TEST_CASE("anchors, aliases and merge keys work as in kubectl") {
  CHECK(One("base: &b {image: x, name: a}\nc: {<<: *b, name: tensorflow}\nd: *b\n") ==
        json::parse(R"({"base": {"image": "x", "name": "a"},
                        "c": {"image": "x", "name": "tensorflow"},
                        "d": {"image": "x", "name": "a"}})"));
  CHECK(One("a: &a {p: 1}\nb: &b {p: 2, q: 2}\nc: {<<: [*a, *b]}\n")["c"] ==
        json::parse(R"({"p": 1, "q": 2})"));
  CHECK(One("c: {'<<': 1}\n")["c"] == json::parse(R"({"<<": 1})"));
}

TEST_CASE("aliases that expand past the node budget are rejected, not expanded") {
  // Ten levels of ten aliases each: 10^10 values once expanded ("billion laughs").
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 10; ++level) {
    const std::string previous = "*a" + std::to_string(level - 1);
    yaml += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) yaml += (i == 0 ? "" : ", ") + previous;
    yaml += "]\n";
  }
  const auto documents = YamlToJson(yaml);
  REQUIRE_FALSE(documents.ok());
  CHECK(std::string(documents.status().message()).find("more than 1048576 values") !=
        std::string::npos);
}

TEST_CASE("nesting deeper than the limit is rejected") {
  std::string deep;
  for (int i = 0; i <= kMaxYamlDepth; ++i) deep += "[";
  for (int i = 0; i <= kMaxYamlDepth; ++i) deep += "]";
  const auto rejected = YamlToJson(deep);
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.status().message() == "YAML nests deeper than 100 levels");
  CHECK(YamlToJson(deep.substr(1, deep.size() - 2)).ok());
}

TEST_CASE("a manifest over the size limit is rejected before parsing") {
  const auto rejected = YamlToJson(std::string(kMaxYamlBytes + 1, '#'));
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.status().message() ==
        "YAML of 3145729 bytes is over the maximum of 3145728 bytes");
  CHECK(YamlToJson(std::string(kMaxYamlBytes, '#')).ok());
}

// Each of these made yaml-cpp 0.7 allocate until the process was killed (found by fuzz_tfjob).
TEST_CASE("content after a root flow collection is an error, not an endless loop") {
  for (const char* yaml :
       {"[{}],", "{},", "[{}] ,", "[{}]\n,", "---\n[{}],", "a: 1\n---\n[{}],", "--- [{}],",
        "&a [{}],", "!!seq [{}],", "# c\n[{}],", "{\"a\": \"],\"}, x"}) {
    CAPTURE(yaml);
    const auto documents = YamlToJson(yaml);
    REQUIRE_FALSE(documents.ok());
    CHECK(std::string(documents.status().message()).find("only comments may follow") !=
          std::string::npos);
  }
  for (const char* yaml : {"{:\"},", "[{}", "\"open", "{a: 'b}"}) {
    CAPTURE(yaml);
    const auto documents = YamlToJson(yaml);
    REQUIRE_FALSE(documents.ok());
    CHECK(std::string(documents.status().message()).find("is not closed") != std::string::npos);
  }
  // What may follow: comments, the next document, quoted or commented brackets.
  for (const char* yaml : {"[{}] # done\n", "{a: 1}\n---\nb: 2\n", "['it''s ]', \"\\\"]\"]\n",
                           "{a: [1, # ] not closing\n 2]}\n", "[it's]\n", "x [{}],\n",
                           "\"a\": \"b\"\n", "'k': [1]\n", "\"s\" # c\n"}) {
    CAPTURE(yaml);
    CHECK(YamlToJson(yaml).ok());
  }
}

TEST_CASE("multi-document streams skip empty documents") {
  const auto documents = YamlToJson("---\na: 1\n---\n# only a comment\n---\nb: 2\n---\n");
  REQUIRE(documents.ok());
  CHECK(*documents == std::vector<json>{json{{"a", 1}}, json{{"b", 2}}});
  const auto empty = YamlToJson("");
  REQUIRE(empty.ok());
  CHECK(empty->empty());
}

TEST_CASE("text that is not UTF-8 is rejected") {
  const auto documents = YamlToJson("a: 1\n---\nb: \"\xff\"\n");
  REQUIRE_FALSE(documents.ok());
  CHECK(documents.status().message() == "invalid YAML in document 1: text is not valid UTF-8");
}

TEST_CASE("syntax errors give the line and column") {
  const auto documents = YamlToJson("a: 1\nb: [1, 2\n");
  REQUIRE_FALSE(documents.ok());
  CHECK(documents.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(documents.status().message()).rfind("invalid YAML at line ", 0) == 0);
}

constexpr char kManifests[] = R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: taas/trainer:1
              command: ["/opt/taas/bin/fashion-mnist-cnn", "--max_steps", "100"]
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        spec:
          containers:
            - name: tensorflow
              image: taas/trainer:1
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: second
spec:
  tfReplicaSpecs:
    Chief:
      template: {spec: {containers: [{name: tensorflow, image: x}]}}
)";

TEST_CASE("TFJob manifests parse from YAML") {
  const auto jobs = TFJobsFromYaml(kManifests);
  REQUIRE(jobs.ok());
  REQUIRE(jobs->size() == 2);
  const TFJob& first = (*jobs)[0];
  CHECK(first.metadata.name == "mnist");
  CHECK(first.spec.replica_specs.at(ReplicaType::kWorker).replicas == 2);
  CHECK(first.spec.replica_specs.at(ReplicaType::kWorker).restart_policy ==
        RestartPolicy::kExitCode);
  CHECK(first.spec.replica_specs.at(ReplicaType::kPS)
            .pod_template["spec"]["containers"][0]["command"][2] == "100");
  CHECK((*jobs)[1].spec.replica_specs.contains(ReplicaType::kChief));
  CHECK(Validate((*jobs)[1]).empty());
}

TEST_CASE("YAML errors name the document and the field") {
  const std::string bad = std::string(kManifests) +
                          "---\nkind: TFJob\nspec:\n  tfReplicaSpecs:\n"
                          "    Worker:\n      replicas: two\n";
  const auto jobs = TFJobsFromYaml(bad);
  REQUIRE_FALSE(jobs.ok());
  CHECK(jobs.status().message() ==
        R"(document 2: spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "two")");
  CHECK(ErrorField(jobs.status()) == "spec.tfReplicaSpecs.Worker.replicas");

  const auto single = TFJobsFromYaml("spec:\n  runPolicy:\n    backoffLimit: [1]\n");
  REQUIRE_FALSE(single.ok());
  CHECK(single.status().message() ==
        "spec.runPolicy.backoffLimit: expected an integer, got an array");
}

}  // namespace
}  // namespace taas::tfjob
