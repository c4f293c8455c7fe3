#include "taas/tfjob/labels.h"

#include <doctest/doctest.h>

#include "test_support.h"

namespace taas::tfjob {
namespace {

using testing::TestJob;

TEST_CASE("every replica carries Kubeflow's labels, with a lower-case replica type") {
  const TFJob job = TestJob({{ReplicaType::kPS, 1}, {ReplicaType::kWorker, 2}});
  const Labels labels = ReplicaLabels(job.spec, "mnist", ReplicaType::kPS, 0);
  CHECK(labels == Labels{{"training.kubeflow.org/operator-name", "tfjob-controller"},
                         {"training.kubeflow.org/job-name", "mnist"},
                         {"training.kubeflow.org/replica-type", "ps"},
                         {"training.kubeflow.org/replica-index", "0"}});
}

TEST_CASE("job-role=master goes to the chief, or to worker 0 when there is no chief") {
  const TFJob with_chief = TestJob({{ReplicaType::kChief, 1}, {ReplicaType::kWorker, 2}});
  CHECK(ReplicaLabels(with_chief.spec, "j", ReplicaType::kChief, 0)
            .at("training.kubeflow.org/job-role") == "master");
  CHECK_FALSE(ReplicaLabels(with_chief.spec, "j", ReplicaType::kWorker, 0)
                  .contains("training.kubeflow.org/job-role"));

  const TFJob with_master = TestJob({{ReplicaType::kMaster, 1}, {ReplicaType::kWorker, 1}});
  CHECK(IsMasterRole(with_master.spec, ReplicaType::kMaster, 0));
  CHECK_FALSE(IsMasterRole(with_master.spec, ReplicaType::kWorker, 0));

  const TFJob workers = TestJob({{ReplicaType::kPS, 1}, {ReplicaType::kWorker, 2}});
  CHECK(IsMasterRole(workers.spec, ReplicaType::kWorker, 0));
  CHECK(IsResultEvaluator(ReplicaType::kEvaluator, 0));
  CHECK_FALSE(IsResultEvaluator(ReplicaType::kEvaluator, 1));
  CHECK_FALSE(IsResultEvaluator(ReplicaType::kWorker, 0));
  CHECK_FALSE(IsMasterRole(workers.spec, ReplicaType::kWorker, 1));
  CHECK_FALSE(IsMasterRole(workers.spec, ReplicaType::kPS, 0));
  CHECK(ReplicaLabels(workers.spec, "j", ReplicaType::kWorker, 0)
            .at("training.kubeflow.org/job-role") == "master");
}

TEST_CASE("a replica's service labels are Kubeflow's: no job-role even for the chief") {
  const TFJob workers = TestJob({{ReplicaType::kWorker, 2}});
  const Labels expected{{"training.kubeflow.org/operator-name", "tfjob-controller"},
                        {"training.kubeflow.org/job-name", "j"},
                        {"training.kubeflow.org/replica-type", "worker"},
                        {"training.kubeflow.org/replica-index", "0"}};
  CHECK(ReplicaIndexLabels("j", ReplicaType::kWorker, 0) == expected);
  Labels pod = expected;
  pod["training.kubeflow.org/job-role"] = "master";
  CHECK(ReplicaLabels(workers.spec, "j", ReplicaType::kWorker, 0) == pod);
}

TEST_CASE("selectors select a job or one replica type") {
  CHECK(SelectorString(JobLabels("j")) ==
        "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=tfjob-controller");
  CHECK(SelectorString(ReplicaTypeLabels("j", ReplicaType::kWorker)) ==
        "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=tfjob-controller,"
        "training.kubeflow.org/replica-type=worker");
  CHECK(SelectorString({}) == "");
  CHECK(LabelSelectorJson({{"a", "1"}}) == nlohmann::json::parse(R"({"matchLabels":{"a":"1"}})"));
}

}  // namespace
}  // namespace taas::tfjob
