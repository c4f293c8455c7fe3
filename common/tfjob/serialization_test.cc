#include "taas/tfjob/serialization.h"

#include <doctest/doctest.h>

#include "taas/tfjob/status.h"
#include "taas/tfjob/tf_config.h"
#include "taas/tfjob/validation.h"
#include "test_support.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;
using testing::At;

const char* const kManifest = R"({
  "apiVersion": "kubeflow.org/v1",
  "kind": "TFJob",
  "metadata": {
    "name": "mnist", "namespace": "ml", "uid": "u-1", "resourceVersion": "42", "generation": 3,
    "labels": {"team": "vision"}, "annotations": {"note": "x"},
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "finalizers": ["keep"], "ownerReferences": [{"kind": "Thing", "name": "t"}]
  },
  "spec": {
    "runPolicy": {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60,
                  "activeDeadlineSeconds": 3600, "backoffLimit": 3, "suspend": true,
                  "schedulingPolicy": {"minAvailable": 3, "queue": "q"}},
    "successPolicy": "AllWorkers",
    "enableDynamicWorker": true,
    "tfReplicaSpecs": {
      "PS": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "img", "futureField": {"kept": true}}]}}},
      "worker": {"replicas": 2, "restartPolicy": "ExitCode", "template": {
        "metadata": {"annotations": {"a": "b"}},
        "spec": {"nodeSelector": {"gpu": "yes"}, "containers": [
          {"name": "tensorflow", "image": "img", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}
    }
  }
})";

TEST_CASE("a complete manifest parses into every field") {
  const auto job = TFJobFromJson(json::parse(kManifest));
  REQUIRE(job.ok());
  CHECK(job->metadata.name == "mnist");
  CHECK(job->metadata.namespace_name == "ml");
  CHECK(job->metadata.uid == "u-1");
  CHECK(job->metadata.resource_version == "42");
  CHECK(job->metadata.generation == 3);
  CHECK(job->metadata.labels.at("team") == "vision");
  CHECK(job->metadata.annotations.at("note") == "x");
  CHECK(job->metadata.creation_timestamp == At(0));
  CHECK(job->metadata.other["finalizers"] == json::parse(R"(["keep"])"));

  const RunPolicy& policy = job->spec.run_policy;
  CHECK(policy.clean_pod_policy == CleanPodPolicy::kAll);
  CHECK(policy.ttl_seconds_after_finished == 60);
  CHECK(policy.active_deadline_seconds == 3600);
  CHECK(policy.backoff_limit == 3);
  CHECK(policy.suspend);
  CHECK((*policy.scheduling_policy)["queue"] == "q");
  CHECK(job->spec.success_policy == SuccessPolicy::kAllWorkers);
  CHECK(job->spec.enable_dynamic_worker);

  REQUIRE(job->spec.replica_specs.size() == 2);
  const ReplicaSpec& worker = job->spec.replica_specs.at(ReplicaType::kWorker);  // "worker" key
  CHECK(worker.replicas == 2);
  CHECK(worker.restart_policy == RestartPolicy::kExitCode);
  CHECK(worker.pod_template["spec"]["nodeSelector"]["gpu"] == "yes");
  CHECK(job->spec.replica_specs.at(ReplicaType::kPS)
            .pod_template["spec"]["containers"][0]["futureField"]["kept"] == true);
}

TEST_CASE("missing fields take Kubeflow's defaults") {
  const auto job = TFJobFromJson(json::parse(R"({"metadata": {"name": "j"},
      "spec": {"tfReplicaSpecs": {"Worker": {"template": {}}}}})"));
  REQUIRE(job.ok());
  CHECK(job->metadata.namespace_name == "default");
  const ReplicaSpec& worker = job->spec.replica_specs.at(ReplicaType::kWorker);
  CHECK(worker.replicas == 1);
  CHECK(worker.restart_policy == RestartPolicy::kNever);
  CHECK(job->spec.run_policy.clean_pod_policy == CleanPodPolicy::kNone);
  CHECK(job->spec.success_policy == SuccessPolicy::kDefault);
  CHECK_FALSE(job->spec.run_policy.backoff_limit.has_value());
}

TEST_CASE("nulls and Go zero values mean unset") {
  const auto job = TFJobFromJson(json::parse(R"({"metadata": {"name": "j",
      "creationTimestamp": null}, "spec": {"successPolicy": null, "runPolicy": {
      "backoffLimit": null, "cleanPodPolicy": null}, "tfReplicaSpecs": {"Worker": {
      "replicas": null, "restartPolicy": ""}}}})"));
  REQUIRE(job.ok());
  CHECK_FALSE(job->metadata.creation_timestamp.has_value());
  CHECK(job->spec.replica_specs.at(ReplicaType::kWorker).replicas == 1);
  CHECK(job->spec.replica_specs.at(ReplicaType::kWorker).restart_policy == RestartPolicy::kNever);
}

TEST_CASE("older kubeflow.org/v1 manifests with run policy fields in the spec still work") {
  const auto job = TFJobFromJson(json::parse(R"({"metadata": {"name": "j"}, "spec": {
      "cleanPodPolicy": "Running", "backoffLimit": 2, "ttlSecondsAfterFinished": 5,
      "activeDeadlineSeconds": 9, "tfReplicaSpecs": {}}})"));
  REQUIRE(job.ok());
  CHECK(job->spec.run_policy.clean_pod_policy == CleanPodPolicy::kRunning);
  CHECK(job->spec.run_policy.backoff_limit == 2);
  CHECK(job->spec.run_policy.ttl_seconds_after_finished == 5);
  CHECK(job->spec.run_policy.active_deadline_seconds == 9);

  const auto both = TFJobFromJson(json::parse(R"({"spec": {"backoffLimit": 2,
      "cleanPodPolicy": "Running", "runPolicy": {"backoffLimit": 7}}})"));
  REQUIRE(both.ok());
  CHECK(both->spec.run_policy.backoff_limit == 7);  // runPolicy wins
  CHECK(both->spec.run_policy.clean_pod_policy == CleanPodPolicy::kRunning);
}

TEST_CASE("errors name the field path and what was expected") {
  struct Case {
    const char* name;
    const char* document;
    const char* field;
    const char* message;
  };
  const Case cases[] = {
      {"ill-typed replicas", R"({"spec":{"tfReplicaSpecs":{"Worker":{"replicas":"two"}}}})",
       "spec.tfReplicaSpecs.Worker.replicas",
       R"(spec.tfReplicaSpecs.Worker.replicas: expected an integer, got "two")"},
      {"fractional replicas", R"({"spec":{"tfReplicaSpecs":{"Worker":{"replicas":1.5}}}})",
       "spec.tfReplicaSpecs.Worker.replicas",
       "spec.tfReplicaSpecs.Worker.replicas: expected an integer, got 1.5"},
      {"replicas out of range", R"({"spec":{"tfReplicaSpecs":{"PS":{"replicas":3000000000}}}})",
       "spec.tfReplicaSpecs.PS.replicas",
       "spec.tfReplicaSpecs.PS.replicas: integer out of range, got 3000000000"},
      {"unknown replica type", R"({"spec":{"tfReplicaSpecs":{"Launcher":{}}}})",
       "spec.tfReplicaSpecs.Launcher",
       "spec.tfReplicaSpecs.Launcher: unknown replica type; use PS, Worker, Chief, Master or "
       "Evaluator"},
      {"duplicate replica type", R"({"spec":{"tfReplicaSpecs":{"Worker":{},"worker":{}}}})",
       "spec.tfReplicaSpecs.worker",
       "spec.tfReplicaSpecs.worker: duplicates Worker (replica types are case-insensitive); keep "
       "one"},
      {"bad restart policy",
       R"({"spec":{"tfReplicaSpecs":{"Chief":{"restartPolicy":"Sometimes"}}}})",
       "spec.tfReplicaSpecs.Chief.restartPolicy",
       R"(spec.tfReplicaSpecs.Chief.restartPolicy: unknown value "Sometimes"; use one of Always, OnFailure, Never, ExitCode)"},
      {"bad clean pod policy", R"({"spec":{"runPolicy":{"cleanPodPolicy":"all"}}})",
       "spec.runPolicy.cleanPodPolicy",
       R"(spec.runPolicy.cleanPodPolicy: unknown value "all"; use one of All, Running, None)"},
      {"bad success policy", R"({"spec":{"successPolicy":"AnyWorker"}})", "spec.successPolicy",
       R"(spec.successPolicy: unknown value "AnyWorker"; use one of "" (chief or worker 0), AllWorkers)"},
      {"unknown spec field", R"({"spec":{"tfReplicaSpec":{}}})", "spec.tfReplicaSpec",
       "spec.tfReplicaSpec: unknown field; known fields are tfReplicaSpecs, runPolicy, "
       "successPolicy, enableDynamicWorker, cleanPodPolicy, ttlSecondsAfterFinished, "
       "activeDeadlineSeconds, backoffLimit"},
      {"unknown replica field", R"({"spec":{"tfReplicaSpecs":{"PS":{"replica":2}}}})",
       "spec.tfReplicaSpecs.PS.replica",
       "spec.tfReplicaSpecs.PS.replica: unknown field; known fields are replicas, restartPolicy, "
       "template"},
      {"template not an object", R"({"spec":{"tfReplicaSpecs":{"PS":{"template":[]}}}})",
       "spec.tfReplicaSpecs.PS.template",
       "spec.tfReplicaSpecs.PS.template: expected an object, got an array"},
      {"replica spec null", R"({"spec":{"tfReplicaSpecs":{"PS":null}}})", "spec.tfReplicaSpecs.PS",
       "spec.tfReplicaSpecs.PS: expected an object, got null"},
      {"suspend not a boolean", R"({"spec":{"runPolicy":{"suspend":"yes"}}})",
       "spec.runPolicy.suspend", R"(spec.runPolicy.suspend: expected a boolean, got "yes")"},
      {"label not a string", R"({"metadata":{"labels":{"n":3}}})", "metadata.labels.n",
       "metadata.labels.n: expected a string, got 3"},
      {"bad timestamp", R"({"metadata":{"creationTimestamp":"now"}})", "metadata.creationTimestamp",
       R"(metadata.creationTimestamp: invalid RFC 3339 timestamp "now"; expected e.g. 2024-05-01T12:30:00Z)"},
      {"wrong kind", R"({"kind":"PyTorchJob"})", "kind",
       R"(kind: expected "TFJob", got "PyTorchJob")"},
      {"wrong apiVersion", R"({"apiVersion":"kubeflow.org/v2"})", "apiVersion",
       R"(apiVersion: expected "kubeflow.org/v1", got "kubeflow.org/v2")"},
      {"unknown top-level field", R"({"sepc":{}})", "sepc",
       "sepc: unknown field; known fields are apiVersion, kind, metadata, spec, status"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const auto job = TFJobFromJson(json::parse(c.document));
    REQUIRE_FALSE(job.ok());
    CHECK(job.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(job.status().message()) == c.message);
    CHECK(ErrorField(job.status()) == c.field);
  }
}

TEST_CASE("a document that is not an object is rejected without a field") {
  const auto job = TFJobFromJson(json::array());
  REQUIRE_FALSE(job.ok());
  CHECK(job.status().message() == "expected a TFJob object, got an array");
  CHECK_FALSE(ErrorField(job.status()).has_value());
}

TEST_CASE("a job round-trips through JSON, unknown metadata and template fields included") {
  const auto job = TFJobFromJson(json::parse(kManifest));
  REQUIRE(job.ok());
  const json written = TFJobToJson(*job);
  CHECK(written["apiVersion"] == "kubeflow.org/v1");
  CHECK(written["kind"] == "TFJob");
  CHECK(written["metadata"]["ownerReferences"][0]["name"] == "t");
  CHECK(written["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] == "ExitCode");
  CHECK(
      written["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["futureField"] ==
      json{{"kept", true}});
  CHECK_FALSE(written.contains("status"));
  const auto again = TFJobFromJson(written);
  REQUIRE(again.ok());
  CHECK(*again == *job);
}

TEST_CASE("the spec is written with Kubeflow's defaults spelled out") {
  TFJob job;
  job.metadata.name = "j";
  job.spec.replica_specs[ReplicaType::kWorker].pod_template = json::object();
  CHECK(SpecToJson(job.spec) == json::parse(R"({
      "tfReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never", "template": {}}},
      "runPolicy": {"cleanPodPolicy": "None", "suspend": false},
      "successPolicy": ""})"));
}

TEST_CASE("status is written exactly as Kubeflow writes it") {
  JobStatus status;
  status.conditions.push_back({ConditionType::kCreated, ConditionStatus::kTrue, "TFJobCreated",
                               "TFJob j is created.", At(0), At(0)});
  status.conditions.push_back(
      {ConditionType::kRunning, ConditionStatus::kFalse, "", "", std::nullopt, std::nullopt});
  status.replica_statuses[ReplicaType::kPS] = ReplicaStatus{};
  ReplicaStatus& worker = status.replica_statuses[ReplicaType::kWorker];
  worker.active = 1;
  worker.succeeded = 1;
  worker.selector = "a=b";
  worker.label_selector = json{{"matchLabels", {{"a", "b"}}}};
  status.start_time = At(1);
  status.completion_time = At(2);
  CHECK(StatusToJson(status) == json::parse(R"({
      "conditions": [
        {"type": "Created", "status": "True", "reason": "TFJobCreated",
         "message": "TFJob j is created.", "lastUpdateTime": "2026-01-01T00:00:00Z",
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Running", "status": "False", "lastUpdateTime": null,
         "lastTransitionTime": null}],
      "replicaStatuses": {"PS": {}, "Worker": {"active": 1, "succeeded": 1,
                          "labelSelector": {"matchLabels": {"a": "b"}}, "selector": "a=b"}},
      "startTime": "2026-01-01T00:00:01Z",
      "completionTime": "2026-01-01T00:00:02Z"})"));
  CHECK(StatusToJson(JobStatus{}) == json::object());
}

TEST_CASE("taas status extensions are written only when used and read back") {
  JobStatus status;
  ReplicaStatus& worker = status.replica_statuses[ReplicaType::kWorker];
  worker.succeeded_indexes = {0, 2};
  worker.restarts = 3;
  worker.container_restarts = {{1, 2}, {12, 1}};
  status.last_reconcile_time = At(5);
  const json written = StatusToJson(status);
  CHECK(written["replicaStatuses"]["Worker"] ==
        json::parse(R"({"succeededIndexes": [0, 2], "restarts": 3,
                        "containerRestarts": {"1": 2, "12": 1}})"));
  const auto read = StatusFromJson(written);
  REQUIRE(read.ok());
  CHECK(*read == status);
}

TEST_CASE("status reading is lenient about what newer controllers write") {
  const auto status = StatusFromJson(json::parse(R"({
      "conditions": [{"type": "Created", "status": "True"},
                     {"type": "SomethingNew", "status": "True"}],
      "replicaStatuses": {"Worker": {"active": 2, "newCounter": 1}, "Launcher": {"active": 1}},
      "observedGeneration": 4})"));
  REQUIRE(status.ok());
  CHECK(status->conditions.size() == 1);
  CHECK(status->replica_statuses.size() == 1);
  CHECK(status->replica_statuses.at(ReplicaType::kWorker).active == 2);

  const auto bad_index = StatusFromJson(
      json::parse(R"({"replicaStatuses": {"Worker": {"containerRestarts": {"x": 1}}}})"));
  REQUIRE_FALSE(bad_index.ok());
  CHECK(ErrorField(bad_index.status()) == "status.replicaStatuses.Worker.containerRestarts.x");

  const auto bad = StatusFromJson(json::parse(R"({"conditions": [{"type": "Running",
      "status": "True", "lastUpdateTime": 12}]})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(ErrorField(bad.status()) == "status.conditions[0].lastUpdateTime");
}

TEST_CASE("a job with status round-trips") {
  auto job = TFJobFromJson(json::parse(kManifest));
  REQUIRE(job.ok());
  job->status.conditions.push_back(
      {ConditionType::kFailed, ConditionStatus::kTrue, "TFJobFailed", "m", At(3), At(4)});
  job->status.replica_statuses[ReplicaType::kPS].failed = 1;
  job->status.start_time = At(1);
  const auto again = TFJobFromJson(TFJobToJson(*job));
  REQUIRE(again.ok());
  CHECK(*again == *job);
}

TEST_CASE("no value anywhere in a manifest makes the rules throw") {
  // Every node of the manifest is replaced, in turn, by each odd value; parsing, defaulting,
  // validating and writing must answer with a status, never an exception.
  const json manifest = json::parse(kManifest);
  const json odd_values[] = {nullptr,
                             true,
                             -1,
                             1.5,
                             3000000000u,
                             "x",
                             "",
                             json::array(),
                             json::object(),
                             std::string("\xff\xfe")};
  std::size_t rejected = 0;
  std::size_t total = 0;
  const json leaves = manifest.flatten();
  for (const auto& [pointer, unused] : leaves.items()) {
    // Replace the leaf and every ancestor of it.
    for (json::json_pointer node(pointer); !node.empty(); node = node.parent_pointer()) {
      for (const json& value : odd_values) {
        json mutated = manifest;
        mutated[node] = value;
        ++total;
        CHECK_NOTHROW({
          auto job = LoadTFJob(mutated);
          if (!job.ok()) {
            ++rejected;
          } else {
            const auto again = TFJobFromJson(TFJobToJson(*job));
            CHECK(again.ok());
            job->status = ComputeJobStatus(*job, {}, At(0)).status;
            for (const auto& [type, spec] : job->spec.replica_specs) {
              CHECK_FALSE(KubernetesTfConfig(*job, TaskId{type, 0}, ServiceAddressing{}).empty());
            }
          }
        });
      }
    }
  }
  CHECK(total > 100);
  CHECK(rejected > 0);
}

}  // namespace
TEST_CASE("an unreadable status is dropped, not a reason to reject the job") {
  // Anyone allowed to patch the status subresource may write anything there; the operator used to
  // fail a running job over `"conditions": "all good"`.
  json object = json::parse(R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
    "metadata": {"name": "j", "namespace": "ns"},
    "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1}}},
    "status": {"conditions": "all good", "startTime": 5}})");
  const auto job = TFJobFromJson(object);
  REQUIRE(job.ok());
  CHECK(job->status == JobStatus{});
  CHECK(job->spec.replica_specs.at(ReplicaType::kWorker).replicas == 1);
  CHECK(ErrorField(StatusFromJson(object["status"]).status()) == "status.conditions");
}

}  // namespace taas::tfjob
