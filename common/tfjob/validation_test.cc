#include "taas/tfjob/validation.h"

#include <doctest/doctest.h>

#include "taas/tfjob/serialization.h"
#include "test_support.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;
using testing::TestJob;

std::vector<std::string> Fields(const std::vector<FieldError>& errors) {
  std::vector<std::string> fields;
  for (const auto& error : errors) fields.push_back(error.field);
  return fields;
}

TEST_CASE("a well-formed job has no errors") {
  CHECK(Validate(TestJob({{ReplicaType::kPS, 2}, {ReplicaType::kWorker, 4}})).empty());
  CHECK(Validate(TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kEvaluator, 1}})).empty());
  CHECK(Validate(TestJob({{ReplicaType::kWorker, 0}})).empty());
}

TEST_CASE("negative replicas name the field and the fix") {
  const auto errors = Validate(TestJob({{ReplicaType::kWorker, -1}}));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0] == FieldError{"spec.tfReplicaSpecs.Worker.replicas", "must be >= 0, got -1"});
}

TEST_CASE("replicas are bounded per type and per job, naming the field and the limit") {
  CHECK(Validate(TestJob({{ReplicaType::kWorker, kMaxReplicasPerType}})).empty());
  SUBCASE("one type over its maximum") {
    const auto errors = Validate(TestJob({{ReplicaType::kWorker, kMaxReplicasPerType + 1}}));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == FieldError{"spec.tfReplicaSpecs.Worker.replicas",
                                  "must be <= 1024 (the maximum per replica type), got 1025"});
  }
  SUBCASE("the largest int32 count") {
    const auto errors = Validate(TestJob({{ReplicaType::kPS, 2147483647}}));
    CHECK(Fields(errors) ==
          std::vector<std::string>{"spec.tfReplicaSpecs.PS.replicas", "spec.tfReplicaSpecs"});
  }
  SUBCASE("types within their maximum, over the job's") {
    const auto errors = Validate(TestJob(
        {{ReplicaType::kPS, 1024}, {ReplicaType::kWorker, 1024}, {ReplicaType::kEvaluator, 1}}));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] ==
          FieldError{"spec.tfReplicaSpecs",
                     "has 2049 replicas in all, over the maximum of 2048 per job; use fewer "
                     "replicas or split the job"});
  }
  SUBCASE("an installation's lower limit bounds both") {
    const Limits limits{.max_replicas_per_job = 10};
    CHECK(Validate(TestJob({{ReplicaType::kPS, 2}, {ReplicaType::kWorker, 8}}), limits).empty());
    const auto errors =
        Validate(TestJob({{ReplicaType::kPS, 2}, {ReplicaType::kWorker, 11}}), limits);
    CHECK(Fields(errors) ==
          std::vector<std::string>{"spec.tfReplicaSpecs.Worker.replicas", "spec.tfReplicaSpecs"});
    CHECK(errors[0].message == "must be <= 10 (the maximum per replica type), got 11");
  }
}

TEST_CASE("LoadTFJob applies the limits it is given") {
  const json object = TFJobToJson(TestJob({{ReplicaType::kWorker, 3}}));
  CHECK(LoadTFJob(object).ok());
  const auto limited = LoadTFJob(object, Limits{.max_replicas_per_job = 2});
  REQUIRE_FALSE(limited.ok());
  CHECK(ErrorField(limited.status()) == "spec.tfReplicaSpecs.Worker.replicas");
}

TEST_CASE("at most one chief: one Chief/Master type with at most one replica") {
  SUBCASE("two chiefs") {
    const auto errors = Validate(TestJob({{ReplicaType::kChief, 2}}));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].field == "spec.tfReplicaSpecs.Chief.replicas");
    CHECK(errors[0].message == "must be 0 or 1 (a job has at most one Chief), got 2");
  }
  SUBCASE("two masters") {
    CHECK(Fields(Validate(TestJob({{ReplicaType::kMaster, 3}}))) ==
          std::vector<std::string>{"spec.tfReplicaSpecs.Master.replicas"});
  }
  SUBCASE("Chief and Master together") {
    const auto errors = Validate(TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kMaster, 1}}));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].field == "spec.tfReplicaSpecs");
    CHECK(errors[0].message.find("both Chief and Master") != std::string::npos);
  }
}

TEST_CASE("templates need a tensorflow container, and every container an image") {
  TFJob job = TestJob({{ReplicaType::kWorker, 1}, {ReplicaType::kPS, 1}});
  SUBCASE("no tensorflow container") {
    job.spec.replica_specs[ReplicaType::kWorker].pod_template["spec"]["containers"][0]["name"] =
        "trainer";
    const auto errors = Validate(job);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].field == "spec.tfReplicaSpecs.Worker.template.spec.containers");
    CHECK(errors[0].message.find("named \"tensorflow\"") != std::string::npos);
  }
  SUBCASE("empty image") {
    job.spec.replica_specs[ReplicaType::kPS].pod_template["spec"]["containers"][0]["image"] = "";
    CHECK(Validate(job) ==
          std::vector<FieldError>{{"spec.tfReplicaSpecs.PS.template.spec.containers[0].image",
                                   "must be set to the container image to run"}});
  }
  SUBCASE("missing image and name of a second container") {
    job.spec.replica_specs[ReplicaType::kPS].pod_template["spec"]["containers"].push_back(
        json::object());
    CHECK(Fields(Validate(job)) ==
          std::vector<std::string>{"spec.tfReplicaSpecs.PS.template.spec.containers[1].name",
                                   "spec.tfReplicaSpecs.PS.template.spec.containers[1].image"});
  }
  SUBCASE("no containers at all") {
    job.spec.replica_specs[ReplicaType::kWorker].pod_template = json::object();
    CHECK(Fields(Validate(job)) ==
          std::vector<std::string>{"spec.tfReplicaSpecs.Worker.template.spec.containers"});
  }
}

TEST_CASE("the job name must be a DNS-1035 label short enough for its service names") {
  TFJob job = TestJob({{ReplicaType::kWorker, 1}});
  for (const char* bad : {"", "Mnist", "1mnist", "mnist_job", "mnist-", "a.b"}) {
    CAPTURE(bad);
    job.metadata.name = bad;
    CHECK(Fields(Validate(job)) == std::vector<std::string>{"metadata.name"});
  }
  job.metadata.name = std::string(52, 'a');  // + "-worker-0" = 61 characters
  CHECK(Validate(job).empty());
  job.spec.replica_specs[ReplicaType::kWorker].replicas = 100;  // "-worker-99" = 62
  CHECK(Validate(job).empty());
  job.metadata.name = std::string(55, 'a');  // + "-worker-99" = 65
  const auto errors = Validate(job);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("too long") != std::string::npos);
}

TEST_CASE("run policy numbers must make sense") {
  TFJob job = TestJob({{ReplicaType::kWorker, 1}});
  job.spec.run_policy.ttl_seconds_after_finished = -1;
  job.spec.run_policy.active_deadline_seconds = 0;
  job.spec.run_policy.backoff_limit = -2;
  job.spec.run_policy.scheduling_policy = json{{"minAvailable", -1}};
  CHECK(Fields(Validate(job)) ==
        std::vector<std::string>{
            "spec.runPolicy.ttlSecondsAfterFinished", "spec.runPolicy.activeDeadlineSeconds",
            "spec.runPolicy.backoffLimit", "spec.runPolicy.schedulingPolicy.minAvailable"});
  job.spec.run_policy = RunPolicy{};
  job.spec.run_policy.ttl_seconds_after_finished = 0;
  job.spec.run_policy.backoff_limit = 0;
  job.spec.run_policy.active_deadline_seconds = 1;
  CHECK(Validate(job).empty());
}

TEST_CASE("runPolicy.managedBy takes only Kubeflow's two managers, as Kubeflow 1.9's webhook") {
  TFJob job = TestJob({{ReplicaType::kWorker, 1}});
  for (const char* ok : {"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"}) {
    CAPTURE(ok);
    job.spec.run_policy.managed_by = ok;
    CHECK(Validate(job).empty());
  }
  job.spec.run_policy.managed_by = "example.com/my-operator";
  CHECK(Validate(job) ==
        std::vector<FieldError>{{"spec.runPolicy.managedBy",
                                 "must be \"kubeflow.org/training-operator\" or "
                                 "\"kueue.x-k8s.io/multikueue\" (omit it for this operator), got "
                                 "\"example.com/my-operator\""}});
  job.spec.run_policy.managed_by = "";  // Kubeflow rejects the empty string too
  CHECK(Fields(Validate(job)) == std::vector<std::string>{"spec.runPolicy.managedBy"});
  job.spec.run_policy.managed_by = std::string(1 << 20, 'x');
  const auto errors = Validate(job);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("a string of 1048576 characters") != std::string::npos);
  CHECK(errors[0].message.size() < 200);
}

TEST_CASE("a managedBy of another JSON type is refused by the parser, naming the field") {
  for (const char* value : {"5", "true", "[]", "{}", "1.5"}) {
    CAPTURE(value);
    const json object = json::parse(
        std::string(R"({"metadata": {"name": "j"}, "spec": {"runPolicy": {"managedBy": )") + value +
        R"(}, "tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
          {"name": "tensorflow", "image": "taas/trainer:1"}]}}}}}})");
    const auto loaded = LoadTFJob(object);
    REQUIRE_FALSE(loaded.ok());
    CHECK(ErrorField(loaded.status()) == "spec.runPolicy.managedBy");
  }
}

TEST_CASE("a job without replica types is invalid") {
  TFJob job = TestJob({});
  CHECK(Fields(Validate(job)) == std::vector<std::string>{"spec.tfReplicaSpecs"});
}

TEST_CASE("validation errors become one InvalidArgument naming the job and the fields") {
  TFJob job = TestJob({{ReplicaType::kWorker, -1}});
  job.metadata.namespace_name = "team";
  CHECK(ValidationStatus(job.metadata, {}).ok());
  const absl::Status status = ValidationStatus(job.metadata, Validate(job));
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(status.message() ==
        "tfjob team/j: spec.tfReplicaSpecs.Worker.replicas must be >= 0, got -1");
  CHECK(ErrorField(status) == "spec.tfReplicaSpecs.Worker.replicas");

  const absl::Status two = ValidationStatus(job.metadata, {{"a", "is bad"}, {"b", "is worse"}});
  CHECK(two.message() == "tfjob team/j: a is bad; b is worse");
  CHECK(ErrorField(two) == "a");
  CHECK_FALSE(ErrorField(absl::InternalError("x")).has_value());
}

TEST_CASE("LoadTFJob parses, defaults and validates") {
  const json manifest = json::parse(R"({
    "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
    "metadata": {"name": "mnist", "namespace": "ml"},
    "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
      {"name": "tensorflow", "image": "taas/trainer:1"}]}}}}}})");
  const auto job = LoadTFJob(manifest);
  REQUIRE(job.ok());
  CHECK(job->spec.replica_specs.at(ReplicaType::kWorker)
            .pod_template["spec"]["containers"][0]["ports"][0]["containerPort"] == 2222);

  json invalid = manifest;
  invalid["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = -3;
  const auto rejected = LoadTFJob(invalid);
  REQUIRE_FALSE(rejected.ok());
  CHECK(rejected.status().message() ==
        "tfjob ml/mnist: spec.tfReplicaSpecs.Worker.replicas must be >= 0, got -3");

  invalid["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = "two";
  const auto ill_typed = LoadTFJob(invalid);
  REQUIRE_FALSE(ill_typed.ok());
  CHECK(ErrorField(ill_typed.status()) == "spec.tfReplicaSpecs.Worker.replicas");
}

}  // namespace
}  // namespace taas::tfjob
