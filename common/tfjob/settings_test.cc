#include "taas/tfjob/settings.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "test_support.h"

namespace taas::tfjob {
namespace {

using testing::TestJob;

// Sets `name` to `value` in the `tensorflow` container of `type`.
void SetEnv(TFJob& job, ReplicaType type, const std::string& name, const nlohmann::json& value) {
  nlohmann::json& container = job.spec.replica_specs.at(type).pod_template["spec"]["containers"][0];
  container["env"].push_back({{"name", name}, {"value", value}});
}

std::vector<std::string> Names(const std::vector<SettingDisagreement>& found) {
  std::vector<std::string> names;
  for (const auto& d : found) names.emplace_back(d.setting->env);
  return names;
}

TEST_CASE("specs that set a shared setting alike, or leave it out alike, agree") {
  TFJob job =
      TestJob({{ReplicaType::kPS, 1}, {ReplicaType::kWorker, 2}, {ReplicaType::kEvaluator, 1}});
  CHECK(DisagreeingSettings(job.spec).empty());
  for (ReplicaType type : {ReplicaType::kPS, ReplicaType::kWorker, ReplicaType::kEvaluator}) {
    SetEnv(job, type, "TF_MAX_STEPS", "12000");
  }
  CHECK(DisagreeingSettings(job.spec).empty());
  CHECK(DisagreementMessage({}).empty());
}

TEST_CASE("a value in one spec and another, or none, in a peer's is a disagreement") {
  TFJob job = TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 2}});
  SetEnv(job, ReplicaType::kWorker, "TF_MAX_STEPS", "1000");
  const auto found = DisagreeingSettings(job.spec);
  REQUIRE(found.size() == 1);
  CHECK(found[0].setting->env == "TF_MAX_STEPS");
  CHECK(found[0].values ==
        std::map<ReplicaType, std::optional<std::string>>{{ReplicaType::kChief, std::nullopt},
                                                          {ReplicaType::kWorker, "1000"}});
  const std::string message = DisagreementMessage(found);
  CHECK(
      message.find("TF_MAX_STEPS (Chief unset, Worker \"1000\"): every trainer stops at its own") !=
      std::string::npos);
  CHECK(message.find("docs/trainer-runtime.md") != std::string::npos);

  SetEnv(job, ReplicaType::kChief, "TF_MAX_STEPS", "2000");
  REQUIRE(DisagreeingSettings(job.spec).size() == 1);
  CHECK(DisagreeingSettings(job.spec)[0].values.at(ReplicaType::kChief) == "2000");
}

TEST_CASE("only the replica types that read a setting are compared") {
  // PS replicas take max steps from the chief: a PS spec without it is fine. The evaluator reads
  // it, a parameter server reads the lanes, which the evaluator does not.
  TFJob job =
      TestJob({{ReplicaType::kPS, 2}, {ReplicaType::kWorker, 2}, {ReplicaType::kEvaluator, 1}});
  SetEnv(job, ReplicaType::kWorker, "TF_MAX_STEPS", "500");
  SetEnv(job, ReplicaType::kEvaluator, "TF_MAX_STEPS", "500");
  SetEnv(job, ReplicaType::kWorker, "TAAS_EVAL_ON_CHIEF", "end");  // the chief's own
  SetEnv(job, ReplicaType::kEvaluator, "TAAS_LOG_STEPS", "100");   // each replica's own
  CHECK(DisagreeingSettings(job.spec).empty());
  SetEnv(job, ReplicaType::kWorker, "TAAS_PS_LANES", "4");
  CHECK(Names(DisagreeingSettings(job.spec)) == std::vector<std::string>{"TAAS_PS_LANES"});
  SetEnv(job, ReplicaType::kPS, "TAAS_PS_LANES", "4");
  CHECK(DisagreeingSettings(job.spec).empty());
  // A replica type with no replicas runs nothing.
  job.spec.replica_specs[ReplicaType::kEvaluator].replicas = 0;
  SetEnv(job, ReplicaType::kWorker, "TF_LOGDIR", "/models/a");
  CHECK(DisagreeingSettings(job.spec).empty());
}

TEST_CASE(
    "parameter-server settings matter only with parameter servers, all-reduce ones only without") {
  TFJob ps = TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 1}, {ReplicaType::kPS, 1}});
  SetEnv(ps, ReplicaType::kWorker, "TF_SYNC", "true");
  SetEnv(ps, ReplicaType::kWorker, "TF_REPLICAS_TO_AGGREGATE", "1");
  SetEnv(ps, ReplicaType::kWorker, "TAAS_ALLREDUCE_BUCKET_BYTES", "1024");
  CHECK(Names(DisagreeingSettings(ps.spec)) ==
        std::vector<std::string>{"TF_SYNC", "TF_REPLICAS_TO_AGGREGATE"});
  CHECK(DisagreementMessage(DisagreeingSettings(ps.spec)).find("the chief's value counts") !=
        std::string::npos);

  TFJob all_reduce = TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 1}});
  SetEnv(all_reduce, ReplicaType::kWorker, "TF_SYNC", "true");
  SetEnv(all_reduce, ReplicaType::kWorker, "TAAS_ALLREDUCE_BUCKET_BYTES", "1024");
  SetEnv(all_reduce, ReplicaType::kChief, "TAAS_STRATEGY", "collective");
  CHECK(Names(DisagreeingSettings(all_reduce.spec)) ==
        std::vector<std::string>{"TAAS_STRATEGY", "TAAS_ALLREDUCE_BUCKET_BYTES"});
}

TEST_CASE("a value every replica gets over its spec's ends the disagreement (taas run --env)") {
  TFJob job = TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 2}});
  SetEnv(job, ReplicaType::kWorker, "TF_MAX_STEPS", "1000");
  CHECK(DisagreeingSettings(job.spec, {{"TF_MAX_STEPS", "300"}}).empty());
  CHECK(DisagreeingSettings(job.spec, {{"TAAS_LOG_STEPS", "1"}}).size() == 1);
}

TEST_CASE("references are compared as written; envFrom makes an unset value unknown") {
  TFJob job = TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 1}});
  const nlohmann::json from = {{"configMapKeyRef", {{"name", "settings"}, {"key", "steps"}}}};
  for (ReplicaType type : {ReplicaType::kChief, ReplicaType::kWorker}) {
    job.spec.replica_specs.at(type).pod_template["spec"]["containers"][0]["env"].push_back(
        {{"name", "TF_MAX_STEPS"}, {"valueFrom", from}});
  }
  CHECK(DisagreeingSettings(job.spec).empty());
  SetEnv(job, ReplicaType::kWorker, "TF_LOGDIR", "/models/j");
  CHECK(Names(DisagreeingSettings(job.spec)) == std::vector<std::string>{"TF_LOGDIR"});
  job.spec.replica_specs.at(ReplicaType::kChief).pod_template["spec"]["containers"][0]["envFrom"] =
      {{{"configMapRef", {{"name", "settings"}}}}};
  CHECK(DisagreeingSettings(job.spec).empty());
}

TEST_CASE("values in the message are bounded, whatever a spec holds") {
  TFJob job = TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 1}});
  SetEnv(job, ReplicaType::kWorker, "TF_LOGDIR", std::string(10000, 'x'));
  const auto found = DisagreeingSettings(job.spec);
  REQUIRE(found.size() == 1);
  CHECK(found[0].values.at(ReplicaType::kWorker)->size() == 64);
  CHECK(DisagreementMessage(found).size() < 1024);
}

TEST_CASE("every shared setting names who reads it and what happens when they differ") {
  for (const SharedSetting& s : SharedSettings()) {
    CAPTURE(s.env);
    CHECK_FALSE(s.read_by.empty());
    CHECK_FALSE(s.when_they_differ.empty());
    // Chief and Master are one role: a setting read by one is read by the other.
    const auto reads = [&](ReplicaType t) {
      return std::find(s.read_by.begin(), s.read_by.end(), t) != s.read_by.end();
    };
    CHECK(reads(ReplicaType::kChief) == reads(ReplicaType::kMaster));
  }
}

}  // namespace
}  // namespace taas::tfjob
