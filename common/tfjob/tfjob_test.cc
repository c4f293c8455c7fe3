#include "taas/tfjob/tfjob.h"

#include <doctest/doctest.h>

#include "test_support.h"

namespace taas::tfjob {
namespace {

using testing::TestJob;

TEST_CASE("replica type keys are accepted in any case, as Kubeflow's defaulting does") {
  CHECK(ParseReplicaTypeIgnoringCase("worker") == ReplicaType::kWorker);
  CHECK(ParseReplicaTypeIgnoringCase("WORKER") == ReplicaType::kWorker);
  CHECK(ParseReplicaTypeIgnoringCase("ps") == ReplicaType::kPS);
  CHECK(ParseReplicaTypeIgnoringCase("master") == ReplicaType::kMaster);
  CHECK(ParseReplicaTypeIgnoringCase("evaluator") == ReplicaType::kEvaluator);
  CHECK_FALSE(ParseReplicaTypeIgnoringCase("launcher").has_value());
  CHECK_FALSE(ParseReplicaTypeIgnoringCase("").has_value());
  CHECK_FALSE(ParseReplicaTypeIgnoringCase("workers").has_value());
}

TEST_CASE("Chief and Master are both the chief") {
  CHECK(IsChiefOrMaster(ReplicaType::kChief));
  CHECK(IsChiefOrMaster(ReplicaType::kMaster));
  CHECK_FALSE(IsChiefOrMaster(ReplicaType::kWorker));
  CHECK_FALSE(IsChiefOrMaster(ReplicaType::kPS));
  CHECK_FALSE(IsChiefOrMaster(ReplicaType::kEvaluator));
  CHECK(HasChiefOrMaster(TestJob({{ReplicaType::kMaster, 1}}).spec));
  CHECK(HasChiefOrMaster(TestJob({{ReplicaType::kChief, 0}}).spec));
  CHECK_FALSE(HasChiefOrMaster(TestJob({{ReplicaType::kWorker, 2}}).spec));
}

TEST_CASE("enumerations round-trip through their API spellings") {
  for (auto policy : {RestartPolicy::kNever, RestartPolicy::kOnFailure, RestartPolicy::kAlways,
                      RestartPolicy::kExitCode}) {
    CHECK(ParseRestartPolicy(ToString(policy)) == policy);
  }
  for (auto policy : {CleanPodPolicy::kNone, CleanPodPolicy::kRunning, CleanPodPolicy::kAll}) {
    CHECK(ParseCleanPodPolicy(ToString(policy)) == policy);
  }
  for (auto policy : {SuccessPolicy::kDefault, SuccessPolicy::kAllWorkers}) {
    CHECK(ParseSuccessPolicy(ToString(policy)) == policy);
  }
  for (auto type : {ConditionType::kCreated, ConditionType::kRunning, ConditionType::kRestarting,
                    ConditionType::kSucceeded, ConditionType::kSuspended, ConditionType::kFailed,
                    ConditionType::kStuck}) {
    CHECK(ParseConditionType(ToString(type)) == type);
  }
  for (auto status : {ConditionStatus::kTrue, ConditionStatus::kFalse, ConditionStatus::kUnknown}) {
    CHECK(ParseConditionStatus(ToString(status)) == status);
  }
}

TEST_CASE("enumeration spellings are exactly Kubeflow's and parsing is case-sensitive") {
  CHECK(ToString(RestartPolicy::kExitCode) == "ExitCode");
  CHECK(ToString(RestartPolicy::kOnFailure) == "OnFailure");
  CHECK(ToString(CleanPodPolicy::kRunning) == "Running");
  CHECK(ToString(SuccessPolicy::kDefault) == "");
  CHECK(ToString(SuccessPolicy::kAllWorkers) == "AllWorkers");
  CHECK(ToString(ConditionType::kRestarting) == "Restarting");
  CHECK(ToString(ConditionStatus::kTrue) == "True");
  CHECK_FALSE(ParseRestartPolicy("never").has_value());
  CHECK_FALSE(ParseCleanPodPolicy("all").has_value());
  CHECK_FALSE(ParseSuccessPolicy("allWorkers").has_value());
  CHECK_FALSE(ParseConditionType("running").has_value());
  CHECK_FALSE(ParseConditionStatus("true").has_value());
}

TEST_CASE("defaults of a fresh spec are Kubeflow's") {
  const ReplicaSpec replica;
  CHECK(replica.replicas == 1);
  CHECK(replica.restart_policy == RestartPolicy::kNever);
  const TFJobSpec spec;
  CHECK(spec.run_policy.clean_pod_policy == CleanPodPolicy::kNone);
  CHECK(spec.success_policy == SuccessPolicy::kDefault);
  CHECK_FALSE(spec.run_policy.suspend);
  CHECK_FALSE(spec.run_policy.backoff_limit.has_value());
  CHECK_FALSE(spec.enable_dynamic_worker);
}

TEST_CASE("job key, total replicas and the tensorflow container") {
  TFJob job = TestJob({{ReplicaType::kPS, 2}, {ReplicaType::kWorker, 3}});
  job.metadata.namespace_name = "team";
  CHECK(JobKey(job.metadata) == "team/j");
  CHECK(TotalReplicas(job.spec) == 5);

  nlohmann::json pod_template = {
      {"spec",
       {{"containers",
         {{{"name", "sidecar"}, {"image", "s"}}, {{"name", "tensorflow"}, {"image", "t"}}}}}}};
  const nlohmann::json* container = FindDefaultContainer(pod_template);
  REQUIRE(container != nullptr);
  CHECK((*container)["image"] == "t");
  CHECK(FindDefaultContainer(nlohmann::json::object()) == nullptr);
  CHECK(FindDefaultContainer(nlohmann::json::array()) == nullptr);
  CHECK(FindDefaultContainer({{"spec", {{"containers", "oops"}}}}) == nullptr);
  CHECK(FindDefaultContainer({{"spec", {{"containers", {{{"name", "main"}}}}}}}) == nullptr);
}

}  // namespace
}  // namespace taas::tfjob

namespace taas::tfjob {
namespace {

TEST_CASE("ManagedByOtherController names a manager other than this operator, whatever the JSON") {
  using nlohmann::json;
  const auto with = [](json managed_by) {
    return json{{"spec", {{"runPolicy", {{"managedBy", std::move(managed_by)}}}}}};
  };
  CHECK(ManagedByOtherController(with("kueue.x-k8s.io/multikueue")) ==
        std::optional<std::string>("kueue.x-k8s.io/multikueue"));
  CHECK(ManagedByOtherController(with("example.com/other")) ==
        std::optional<std::string>("example.com/other"));
  CHECK(ManagedByOtherController(with("")) == std::optional<std::string>(""));
  CHECK_FALSE(ManagedByOtherController(with("kubeflow.org/training-operator")));
  // Absent, null, ill-typed at any level: not another controller's (the parser reports types).
  for (const json& object :
       {json::object(), json(nullptr), json(5), json{{"spec", 5}},
        json{{"spec", {{"runPolicy", "x"}}}}, json{{"spec", {{"runPolicy", json::object()}}}},
        with(nullptr), with(5), with(json::array()), with(json::object()), with(true)}) {
    CAPTURE(object.dump());
    CHECK_FALSE(ManagedByOtherController(object));
  }
  CHECK(IsSupportedManager("kubeflow.org/training-operator"));
  CHECK(IsSupportedManager("kueue.x-k8s.io/multikueue"));
  CHECK_FALSE(IsSupportedManager(""));
  CHECK_FALSE(IsSupportedManager("kueue.x-k8s.io/MultiKueue"));
}

}  // namespace
}  // namespace taas::tfjob
