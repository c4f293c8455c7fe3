#include "taas/tfjob/status.h"

#include <doctest/doctest.h>

#include <limits>

#include "taas/tfjob/serialization.h"
#include "test_support.h"

namespace taas::tfjob {
namespace {

using testing::At;
using testing::TestJob;
using enum ReplicaType;
using enum ReplicaPhase;

ObservedReplica Replica(ReplicaType type, int index, ReplicaPhase phase,
                        std::optional<int> exit_code = std::nullopt) {
  ObservedReplica replica;
  replica.type = type;
  replica.index = index;
  replica.phase = phase;
  replica.exit_code = exit_code;
  return replica;
}

// A running replica whose container the kubelet restarted in place `restarts` times.
ObservedReplica RestartedInPlace(ReplicaType type, int index, int restarts) {
  ObservedReplica replica = Replica(type, index, kRunning, 1);
  replica.restarts = restarts;
  return replica;
}

// Feeds the result back into the job, as the operator does after writing status.
StatusUpdate Step(TFJob& job, const std::vector<ObservedReplica>& observed, Time now,
                  const StatusOptions& options = {}) {
  StatusUpdate update = ComputeJobStatus(job, observed, now, options);
  job.status = update.status;
  return update;
}

const JobCondition& Condition(const JobStatus& status, ConditionType type) {
  const JobCondition* condition = FindCondition(status, type);
  REQUIRE(condition != nullptr);
  return *condition;
}

std::vector<ConditionType> TypesOf(const JobStatus& status) {
  std::vector<ConditionType> types;
  for (const auto& condition : status.conditions) types.push_back(condition.type);
  return types;
}

// ---------------------------------------------------------------------------------------------
// SetCondition

TEST_CASE("setting a condition: new, unchanged, reason change and status change") {
  JobStatus status;
  CHECK(SetCondition(status, ConditionType::kCreated, ConditionStatus::kTrue, "TFJobCreated",
                     "created", At(0)));
  CHECK(Condition(status, ConditionType::kCreated).last_update_time == At(0));
  CHECK(Condition(status, ConditionType::kCreated).last_transition_time == At(0));

  SUBCASE("same status and reason is no change, even with a new message") {
    CHECK_FALSE(SetCondition(status, ConditionType::kCreated, ConditionStatus::kTrue,
                             "TFJobCreated", "other", At(5)));
    CHECK(Condition(status, ConditionType::kCreated).message == "created");
  }
  SUBCASE("a new reason with the same status keeps the transition time") {
    CHECK(
        SetCondition(status, ConditionType::kCreated, ConditionStatus::kTrue, "Other", "m", At(5)));
    CHECK(Condition(status, ConditionType::kCreated).last_update_time == At(5));
    CHECK(Condition(status, ConditionType::kCreated).last_transition_time == At(0));
  }
  SUBCASE("a new status moves the transition time") {
    CHECK(SetCondition(status, ConditionType::kCreated, ConditionStatus::kFalse, "TFJobCreated",
                       "m", At(5)));
    CHECK(Condition(status, ConditionType::kCreated).last_transition_time == At(5));
  }
}

TEST_CASE("Running and Restarting replace each other; finishing turns Running False") {
  JobStatus status;
  SetCondition(status, ConditionType::kCreated, ConditionStatus::kTrue, kReasonCreated, "", At(0));
  SetCondition(status, ConditionType::kRunning, ConditionStatus::kTrue, kReasonRunning, "", At(1));
  SetCondition(status, ConditionType::kRestarting, ConditionStatus::kTrue, kReasonRestarting, "",
               At(2));
  CHECK(TypesOf(status) ==
        std::vector<ConditionType>{ConditionType::kCreated, ConditionType::kRestarting});
  SetCondition(status, ConditionType::kRunning, ConditionStatus::kTrue, kReasonRunning, "", At(3));
  CHECK(TypesOf(status) ==
        std::vector<ConditionType>{ConditionType::kCreated, ConditionType::kRunning});

  SetCondition(status, ConditionType::kSucceeded, ConditionStatus::kTrue, kReasonSucceeded, "",
               At(4));
  CHECK(Condition(status, ConditionType::kRunning).status == ConditionStatus::kFalse);
  CHECK(Condition(status, ConditionType::kRunning).last_transition_time == At(4));
  CHECK(IsSucceeded(status));
  CHECK(IsFinished(status));
  CHECK_FALSE(IsRunning(status));
}

TEST_CASE("once finished, conditions never change again") {
  for (ConditionType final_type : {ConditionType::kFailed, ConditionType::kSucceeded}) {
    JobStatus status;
    SetCondition(status, final_type, ConditionStatus::kTrue, "X", "", At(0));
    const JobStatus frozen = status;
    CHECK_FALSE(SetCondition(status, ConditionType::kRunning, ConditionStatus::kTrue,
                             kReasonRunning, "", At(1)));
    CHECK_FALSE(SetCondition(status, ConditionType::kFailed, ConditionStatus::kTrue, kReasonFailed,
                             "", At(1)));
    CHECK(status == frozen);
  }
}

TEST_CASE("status changes ignore lastReconcileTime") {
  JobStatus a;
  JobStatus b;
  b.last_reconcile_time = At(9);
  CHECK_FALSE(StatusChanged(a, b));
  b.start_time = At(1);
  CHECK(StatusChanged(a, b));
  b = a;
  b.completion_time = At(1);
  CHECK(StatusChanged(a, b));
  b = a;
  b.conditions.push_back({});
  CHECK(StatusChanged(a, b));
  b = a;
  b.replica_statuses[kPS].restarts = 1;
  CHECK(StatusChanged(a, b));
}

TEST_CASE("replica phases parse from pod phases") {
  CHECK(ParseReplicaPhase("Running") == kRunning);
  CHECK(ParseReplicaPhase("Failed") == kFailed);
  CHECK_FALSE(ParseReplicaPhase("running").has_value());
  CHECK(ToString(kSucceeded) == "Succeeded");
}

// ---------------------------------------------------------------------------------------------
// ComputeJobStatus: lifecycle

TEST_CASE("a new job is Created with a start time and replica selectors") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 2}});
  const StatusUpdate update = Step(job, {}, At(0));
  CHECK(TypesOf(job.status) == std::vector<ConditionType>{ConditionType::kCreated});
  const JobCondition& created = Condition(job.status, ConditionType::kCreated);
  CHECK(created.reason == "TFJobCreated");
  CHECK(created.message == "TFJob j is created.");
  CHECK(job.status.start_time == At(0));
  CHECK(job.status.replica_statuses.at(kWorker).selector ==
        "training.kubeflow.org/job-name=j,training.kubeflow.org/operator-name=tfjob-controller,"
        "training.kubeflow.org/replica-type=worker");
  CHECK(update.events == std::vector<JobEvent>{{false, "TFJobCreated", "TFJob j is created."}});
  CHECK(ReplicasToCreate(job, {}) == std::vector<ReplicaRef>{{kPS, 0}, {kWorker, 0}, {kWorker, 1}});

  SUBCASE("a second computation with the same observations changes nothing") {
    const StatusUpdate again = ComputeJobStatus(job, {}, At(10));
    CHECK_FALSE(StatusChanged(job.status, again.status));
    CHECK(again.events.empty());
  }
}

TEST_CASE("workers running make the job Running; replica counts follow the phases") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 3}});
  Step(job, {}, At(0));
  Step(job,
       {Replica(kPS, 0, kRunning), Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kPending),
        Replica(kWorker, 2, kRunning)},
       At(5));
  const JobCondition& running = Condition(job.status, ConditionType::kRunning);
  CHECK(running.status == ConditionStatus::kTrue);
  CHECK(running.reason == "TFJobRunning");
  CHECK(running.message == "TFJob default/j is running.");
  CHECK(job.status.replica_statuses.at(kPS).active == 1);
  CHECK(job.status.replica_statuses.at(kWorker).active == 2);
  CHECK(job.status.replica_statuses.at(kWorker).failed == 0);
}

TEST_CASE("with a chief, only the chief makes the job Running and Succeeded") {
  TFJob job = TestJob({{kChief, 1}, {kPS, 1}, {kWorker, 2}}, RestartPolicy::kNever);
  job.spec.run_policy.clean_pod_policy = CleanPodPolicy::kRunning;
  Step(job, {}, At(0));
  Step(job, {Replica(kPS, 0, kRunning), Replica(kWorker, 0, kRunning)}, At(1));
  CHECK_FALSE(FindCondition(job.status, ConditionType::kRunning));

  Step(job, {Replica(kChief, 0, kRunning), Replica(kPS, 0, kRunning)}, At(2));
  CHECK(IsRunning(job.status));

  SUBCASE("worker 0 finishing does not finish a job that has a chief") {
    Step(job, {Replica(kChief, 0, kRunning), Replica(kWorker, 0, kSucceeded, 0)}, At(3));
    CHECK_FALSE(IsFinished(job.status));
  }
  SUBCASE("the chief finishing does") {
    const std::vector<ObservedReplica> observed = {
        Replica(kChief, 0, kSucceeded, 0), Replica(kPS, 0, kRunning), Replica(kWorker, 0, kRunning),
        Replica(kWorker, 1, kSucceeded, 0)};
    const StatusUpdate update = Step(job, observed, At(4));
    const JobCondition& succeeded = Condition(job.status, ConditionType::kSucceeded);
    CHECK(succeeded.reason == "TFJobSucceeded");
    CHECK(succeeded.message == "TFJob default/j successfully completed.");
    CHECK(Condition(job.status, ConditionType::kRunning).status == ConditionStatus::kFalse);
    CHECK(job.status.completion_time == At(4));
    // Kubeflow counts replicas still active at the end as succeeded.
    CHECK(job.status.replica_statuses.at(kPS).active == 0);
    CHECK(job.status.replica_statuses.at(kPS).succeeded == 1);
    CHECK(update.events.back().reason == "TFJobSucceeded");
    // cleanPodPolicy Running removes what still runs.
    CHECK(ReplicasToDelete(job, observed) == std::vector<ReplicaRef>{{kPS, 0}, {kWorker, 0}});
    CHECK(ReplicasToCreate(job, observed).empty());
  }
}

TEST_CASE("Master is the chief too") {
  TFJob job = TestJob({{kMaster, 1}, {kWorker, 1}});
  Step(job, {Replica(kMaster, 0, kSucceeded, 0), Replica(kWorker, 0, kRunning)}, At(1));
  CHECK(IsSucceeded(job.status));
}

TEST_CASE("without a chief, worker 0 succeeding finishes the job by default") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 3}});
  Step(job, {Replica(kWorker, 0, kSucceeded, 0), Replica(kWorker, 1, kRunning)}, At(1));
  CHECK(IsSucceeded(job.status));
  CHECK(job.status.replica_statuses.at(kWorker).succeeded == 2);  // worker 1 moved over
}

TEST_CASE("AllWorkers waits for every worker") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 3}});
  job.spec.success_policy = SuccessPolicy::kAllWorkers;
  Step(job, {Replica(kWorker, 0, kSucceeded, 0), Replica(kWorker, 1, kRunning)}, At(1));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(IsRunning(job.status));
  Step(job,
       {Replica(kWorker, 0, kSucceeded, 0), Replica(kWorker, 1, kSucceeded, 0),
        Replica(kWorker, 2, kSucceeded, 0), Replica(kPS, 0, kRunning)},
       At(2));
  CHECK(IsSucceeded(job.status));
}

TEST_CASE("a succeeded index is remembered when its pod disappears and never run again") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 3}});
  job.spec.success_policy = SuccessPolicy::kAllWorkers;
  Step(job, {Replica(kWorker, 1, kSucceeded, 0), Replica(kWorker, 0, kRunning)}, At(1));
  CHECK(job.status.replica_statuses.at(kWorker).succeeded_indexes == std::vector<int>{1});
  // worker 1's pod is garbage-collected
  const std::vector<ObservedReplica> observed = {Replica(kWorker, 0, kRunning),
                                                 Replica(kPS, 0, kRunning)};
  Step(job, observed, At(2));
  CHECK(job.status.replica_statuses.at(kWorker).succeeded == 1);
  CHECK(ReplicasToCreate(job, observed) == std::vector<ReplicaRef>{{kWorker, 2}});
  Step(job,
       {Replica(kWorker, 0, kSucceeded, 0), Replica(kWorker, 2, kSucceeded, 0),
        Replica(kPS, 0, kRunning)},
       At(3));
  CHECK(IsSucceeded(job.status));
}

// ---------------------------------------------------------------------------------------------
// ComputeJobStatus: failures and restarts

TEST_CASE("under Never a failed worker fails the job") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 2}}, RestartPolicy::kNever);
  Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kRunning)}, At(1));
  const StatusUpdate update =
      Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kFailed, 1)}, At(2));
  const JobCondition& failed = Condition(job.status, ConditionType::kFailed);
  CHECK(failed.reason == "TFJobFailed");
  CHECK(failed.message == "TFJob default/j has failed because 1 Worker replica(s) failed.");
  CHECK(Condition(job.status, ConditionType::kRunning).status == ConditionStatus::kFalse);
  CHECK(job.status.completion_time == At(2));
  CHECK(job.status.replica_statuses.at(kWorker).failed == 1);
  CHECK(update.restart.empty());
  CHECK(update.events == std::vector<JobEvent>{{true, "TFJobFailed", failed.message}});

  SUBCASE("a failed job never changes again, whatever is observed") {
    const JobStatus frozen = job.status;
    Step(job, {Replica(kWorker, 0, kSucceeded, 0)}, At(3));
    CHECK(job.status == frozen);
  }
  SUBCASE("cleanPodPolicy None keeps every pod; All removes them all") {
    const std::vector<ObservedReplica> observed = {Replica(kWorker, 0, kRunning),
                                                   Replica(kWorker, 1, kFailed, 1)};
    CHECK(ReplicasToDelete(job, observed).empty());
    job.spec.run_policy.clean_pod_policy = CleanPodPolicy::kAll;
    CHECK(ReplicasToDelete(job, observed) == std::vector<ReplicaRef>{{kWorker, 0}, {kWorker, 1}});
  }
}

TEST_CASE("ExitCode restarts retryable exits and fails on permanent ones") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 2}}, RestartPolicy::kExitCode);
  Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kRunning)}, At(1));

  SUBCASE("137 (SIGKILL) restarts") {
    const StatusUpdate update =
        Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kFailed, 137)}, At(2));
    CHECK_FALSE(IsFinished(job.status));
    CHECK(update.restart == std::vector<ReplicaRef>{{kWorker, 1}});
    const JobCondition& restarting = Condition(job.status, ConditionType::kRestarting);
    CHECK(restarting.reason == "TFJobRestarting");
    CHECK(restarting.message ==
          "TFJob default/j is restarting because 1 Worker replica(s) failed.");
    CHECK_FALSE(FindCondition(job.status, ConditionType::kRunning));
    CHECK(job.status.replica_statuses.at(kWorker).restarts == 1);
    CHECK(job.status.replica_statuses.at(kWorker).failed == 1);
    CHECK(update.events.back().warning);

    // The operator deletes the pod; while it terminates it is not a failure, then it is
    // recreated and runs again.
    ObservedReplica terminating = Replica(kWorker, 1, kFailed, 137);
    terminating.terminating = true;
    const StatusUpdate next = Step(job, {Replica(kWorker, 0, kRunning), terminating}, At(3));
    CHECK(next.restart.empty());
    CHECK(job.status.replica_statuses.at(kWorker).failed == 0);
    CHECK(job.status.replica_statuses.at(kWorker).restarts == 1);
    CHECK(ReplicasToCreate(job, {Replica(kWorker, 0, kRunning), terminating}) ==
          std::vector<ReplicaRef>{{kPS, 0}});
    CHECK(ReplicasToCreate(job, {Replica(kWorker, 0, kRunning)}) ==
          std::vector<ReplicaRef>{{kPS, 0}, {kWorker, 1}});
    Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kRunning)}, At(4));
    CHECK(IsRunning(job.status));
    CHECK_FALSE(FindCondition(job.status, ConditionType::kRestarting));
  }
  SUBCASE("a Failed pod without an exit code (evicted) is retryable") {
    const StatusUpdate update = Step(job, {Replica(kWorker, 1, kFailed)}, At(2));
    CHECK(update.restart == std::vector<ReplicaRef>{{kWorker, 1}});
  }
  SUBCASE("exit code 1 fails the job with Kubeflow's ExitCode message") {
    const StatusUpdate update =
        Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kFailed, 1)}, At(2));
    CHECK(IsFailed(job.status));
    CHECK(update.restart.empty());
    const JobCondition& failed = Condition(job.status, ConditionType::kFailed);
    CHECK(failed.reason == "TFJobFailed");
    CHECK(failed.message == "job \"j\" is failing because \"Worker\" replica(s) failed.");
    CHECK(update.events.back() == JobEvent{true, "TFJobFailed", failed.message});
  }
  SUBCASE("a permanent ExitCode failure wins over the chief's success in the same round") {
    TFJob chief = TestJob({{kChief, 1}, {kWorker, 1}}, RestartPolicy::kExitCode);
    Step(chief, {Replica(kChief, 0, kSucceeded, 0), Replica(kWorker, 0, kFailed, 1)}, At(2));
    CHECK(IsFailed(chief.status));
    CHECK_FALSE(IsSucceeded(chief.status));
  }
  SUBCASE("a permanent failure wins over a restart in the same round") {
    const StatusUpdate update =
        Step(job, {Replica(kWorker, 0, kFailed, 143), Replica(kWorker, 1, kFailed, 2)}, At(2));
    CHECK(IsFailed(job.status));
    CHECK(update.restart.empty());
    CHECK(job.status.replica_statuses.at(kWorker).restarts == 0);
  }
}

TEST_CASE("OnFailure and Always restart a Failed pod whatever its exit code") {
  for (RestartPolicy policy : {RestartPolicy::kOnFailure, RestartPolicy::kAlways}) {
    CAPTURE(ToString(policy));
    TFJob job = TestJob({{kWorker, 2}}, policy);
    const StatusUpdate update = Step(job, {Replica(kWorker, 1, kFailed, 1)}, At(1));
    CHECK(update.restart == std::vector<ReplicaRef>{{kWorker, 1}});
    CHECK_FALSE(IsFinished(job.status));
  }
}

TEST_CASE("enableDynamicWorker does not cover a permanent ExitCode failure, as in Kubeflow") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 3}}, RestartPolicy::kExitCode);
  job.spec.enable_dynamic_worker = true;
  Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 2, kFailed, 1)}, At(1));
  CHECK(IsFailed(job.status));
  CHECK(Condition(job.status, ConditionType::kFailed).message ==
        "job \"j\" is failing because \"Worker\" replica(s) failed.");
}

TEST_CASE("enableDynamicWorker lets the job continue past failed workers") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 3}});
  job.spec.enable_dynamic_worker = true;
  Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 2, kFailed, 1)}, At(1));
  CHECK_FALSE(IsFinished(job.status));
  Step(job, {Replica(kPS, 0, kFailed, 1)}, At(2));
  CHECK(IsFailed(job.status));
  CHECK(Condition(job.status, ConditionType::kFailed).message ==
        "TFJob default/j has failed because 1 PS replica(s) failed.");
}

TEST_CASE("a terminating replica is neither active nor failed, under any policy") {
  TFJob job = TestJob({{kWorker, 2}}, RestartPolicy::kNever);
  ObservedReplica leaving = Replica(kWorker, 0, kRunning);
  leaving.terminating = true;
  ObservedReplica gone = Replica(kWorker, 1, kFailed, 1);
  gone.terminating = true;
  Step(job, {leaving, gone}, At(1));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(job.status.replica_statuses.at(kWorker).active == 0);
  CHECK(job.status.replica_statuses.at(kWorker).failed == 0);
  CHECK(ReplicasToDelete(job, {leaving, gone}).empty());
}

// ---------------------------------------------------------------------------------------------
// ComputeJobStatus: limits

TEST_CASE("backoffLimit counts recorded, in-place and new restarts") {
  TFJob job = TestJob({{kWorker, 2}}, RestartPolicy::kExitCode);
  job.spec.run_policy.backoff_limit = 2;

  const StatusUpdate first = Step(job, {Replica(kWorker, 0, kFailed, 137)}, At(1));
  CHECK(first.restart.size() == 1);
  const StatusUpdate second = Step(job, {Replica(kWorker, 1, kFailed, 137)}, At(2));
  CHECK(second.restart.size() == 1);
  CHECK(job.status.replica_statuses.at(kWorker).restarts == 2);
  const StatusUpdate third = Step(job, {Replica(kWorker, 0, kFailed, 137)}, At(3));
  CHECK(third.restart.empty());
  CHECK(IsFailed(job.status));
  CHECK(Condition(job.status, ConditionType::kFailed).message ==
        "Job j has failed because it has reached the specified backoff limit");
}

TEST_CASE("backoffLimit counts restarts the kubelet did in place") {
  TFJob job = TestJob({{kWorker, 2}}, RestartPolicy::kOnFailure);
  job.spec.run_policy.backoff_limit = 3;
  ObservedReplica crashing = Replica(kWorker, 0, kRunning);
  crashing.restarts = 3;
  Step(job, {crashing, Replica(kWorker, 1, kRunning)}, At(1));
  CHECK_FALSE(IsFinished(job.status));
  crashing.restarts = 4;
  Step(job, {crashing, Replica(kWorker, 1, kRunning)}, At(2));
  CHECK(IsFailed(job.status));
}

TEST_CASE("backoffLimit counts no restart of a replica type under Never, as Kubeflow") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 1}}, RestartPolicy::kNever);
  job.spec.replica_specs[kWorker].restart_policy = RestartPolicy::kOnFailure;
  job.spec.run_policy.backoff_limit = 1;
  // The PS pod's container restarted twice (Never replicas never restart themselves, but a
  // restartCount can rise, e.g. a spec changed from OnFailure or a sidecar): not counted.
  ObservedReplica ps = Replica(kPS, 0, kRunning);
  ps.restarts = 2;
  Step(job, {ps, Replica(kWorker, 0, kRunning)}, At(1));
  CHECK_FALSE(IsFinished(job.status));
  // One restart of the OnFailure worker is within the limit; a second one is past it.
  Step(job, {ps, RestartedInPlace(kWorker, 0, 1)}, At(2));
  CHECK_FALSE(IsFinished(job.status));
  Step(job, {ps, RestartedInPlace(kWorker, 0, 2)}, At(3));
  CHECK(IsFailed(job.status));
}

TEST_CASE("backoffLimit 0 allows no restart at all") {
  TFJob job = TestJob({{kWorker, 1}}, RestartPolicy::kExitCode);
  job.spec.run_policy.backoff_limit = 0;
  const StatusUpdate update = Step(job, {Replica(kWorker, 0, kFailed, 143)}, At(1));
  CHECK(update.restart.empty());
  CHECK(IsFailed(job.status));
}

TEST_CASE("a container restarted in place is a restart: counted once, per type, and surfaced") {
  for (RestartPolicy policy : {RestartPolicy::kOnFailure, RestartPolicy::kAlways}) {
    CAPTURE(ToString(policy));
    TFJob job = TestJob({{kPS, 1}, {kWorker, 2}}, policy);
    Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kRunning)}, At(1));
    REQUIRE(IsRunning(job.status));

    const StatusUpdate update =
        Step(job, {Replica(kWorker, 0, kRunning), RestartedInPlace(kWorker, 1, 1)}, At(2));
    CHECK(update.restart.empty());  // the kubelet already restarted it
    CHECK(job.status.replica_statuses.at(kWorker).restarts == 1);
    CHECK(job.status.replica_statuses.at(kWorker).container_restarts == std::map<int, int>{{1, 1}});
    const JobCondition& restarting = Condition(job.status, ConditionType::kRestarting);
    CHECK(restarting.reason == "TFJobRestarting");
    CHECK(restarting.message ==
          "TFJob default/j is restarting because 1 Worker replica(s) failed.");
    CHECK(update.events == std::vector<JobEvent>{{true, "TFJobRestarting", restarting.message}});

    // The same restartCount seen again is not a new restart; the job is Running again.
    const StatusUpdate again =
        Step(job, {Replica(kWorker, 0, kRunning), RestartedInPlace(kWorker, 1, 1)}, At(3));
    CHECK(job.status.replica_statuses.at(kWorker).restarts == 1);
    CHECK(IsRunning(job.status));
    CHECK_FALSE(FindCondition(job.status, ConditionType::kRestarting));
    CHECK(again.events.size() == 1);
    CHECK(again.events[0].reason == "TFJobRunning");

    // Two more restarts of the same container between two observations count as two.
    Step(job, {Replica(kWorker, 0, kRunning), RestartedInPlace(kWorker, 1, 3)}, At(4));
    CHECK(job.status.replica_statuses.at(kWorker).restarts == 3);
    CHECK(job.status.replica_statuses.at(kPS).restarts == 0);
  }
}

TEST_CASE("in-place restarts stay counted when the pod is replaced") {
  TFJob job = TestJob({{kWorker, 1}}, RestartPolicy::kAlways);
  job.spec.run_policy.backoff_limit = 2;
  Step(job, {RestartedInPlace(kWorker, 0, 2)}, At(1));
  CHECK_FALSE(IsFinished(job.status));
  // The pod is deleted by hand and recreated: its restartCount starts again from 0.
  Step(job, {}, At(2));
  Step(job, {Replica(kWorker, 0, kRunning)}, At(3));
  CHECK(job.status.replica_statuses.at(kWorker).restarts == 2);
  CHECK(job.status.replica_statuses.at(kWorker).container_restarts.empty());
  CHECK_FALSE(IsFinished(job.status));
  Step(job, {RestartedInPlace(kWorker, 0, 1)}, At(4));
  CHECK(job.status.replica_statuses.at(kWorker).restarts == 3);
  CHECK(IsFailed(job.status));
  CHECK(Condition(job.status, ConditionType::kFailed).message ==
        "Job j has failed because it has reached the specified backoff limit");
}

TEST_CASE("a replica recreated by the operator starts a new restartCount") {
  TFJob job = TestJob({{kWorker, 1}}, RestartPolicy::kOnFailure);
  Step(job, {RestartedInPlace(kWorker, 0, 2)}, At(1));
  // Evicted: the pod is Failed, so the operator recreates it (a third restart).
  ObservedReplica evicted = Replica(kWorker, 0, kFailed);
  evicted.restarts = 2;
  const StatusUpdate update = Step(job, {evicted}, At(2));
  CHECK(update.restart == std::vector<ReplicaRef>{{kWorker, 0}});
  CHECK(job.status.replica_statuses.at(kWorker).restarts == 3);
  // The new pod has restarted 3 times by the time it is first seen: 3 more restarts.
  Step(job, {RestartedInPlace(kWorker, 0, 3)}, At(3));
  CHECK(job.status.replica_statuses.at(kWorker).restarts == 6);
}

TEST_CASE("backoffLimit is job-wide: restarts of every replica type add up") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 2}}, RestartPolicy::kAlways);
  job.spec.run_policy.backoff_limit = 2;
  Step(job, {RestartedInPlace(kPS, 0, 1), RestartedInPlace(kWorker, 1, 1)}, At(1));
  CHECK(job.status.replica_statuses.at(kPS).restarts == 1);
  CHECK(job.status.replica_statuses.at(kWorker).restarts == 1);
  CHECK_FALSE(IsFinished(job.status));
  job.spec.replica_specs.at(kWorker).restart_policy = RestartPolicy::kExitCode;
  const StatusUpdate update =
      Step(job, {RestartedInPlace(kPS, 0, 1), Replica(kWorker, 0, kFailed, 137)}, At(2));
  CHECK(update.restart.empty());
  CHECK(IsFailed(job.status));
}

TEST_CASE("a terminating replica that exits with a retryable code is no failure and no restart") {
  TFJob job = TestJob({{kWorker, 2}}, RestartPolicy::kExitCode);
  job.spec.run_policy.backoff_limit = 0;
  Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kRunning)}, At(1));
  ObservedReplica stopped = Replica(kWorker, 1, kFailed, 143);  // SIGTERM from the deletion
  stopped.terminating = true;
  const StatusUpdate update = Step(job, {Replica(kWorker, 0, kRunning), stopped}, At(2));
  CHECK(update.restart.empty());
  CHECK_FALSE(IsFinished(job.status));
  CHECK(job.status.replica_statuses.at(kWorker).failed == 0);
  CHECK(job.status.replica_statuses.at(kWorker).restarts == 0);
  // Once gone it is created again, which is not a restart either.
  CHECK(ReplicasToCreate(job, {Replica(kWorker, 0, kRunning)}) ==
        std::vector<ReplicaRef>{{kWorker, 1}});
}

TEST_CASE("activeDeadlineSeconds fails the job on time and asks for a requeue at the deadline") {
  TFJob job = TestJob({{kWorker, 1}});
  job.spec.run_policy.active_deadline_seconds = 60;
  const StatusUpdate started = Step(job, {}, At(0));
  CHECK(started.requeue_at == At(60));
  const StatusUpdate before = Step(job, {Replica(kWorker, 0, kRunning)}, At(59));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(before.requeue_at == At(60));
  const StatusUpdate after = Step(job, {Replica(kWorker, 0, kRunning)}, At(60));
  CHECK(IsFailed(job.status));
  CHECK(Condition(job.status, ConditionType::kFailed).message ==
        "Job j has failed because it was active longer than specified deadline");
  CHECK(job.status.completion_time == At(60));
  CHECK_FALSE(after.requeue_at.has_value());
}

TEST_CASE("a job failed past its limits loses every pod, whatever cleanPodPolicy says") {
  // Kubeflow's ReconcileJobs deletes the pods and services of a job past backoffLimit or
  // activeDeadlineSeconds before it marks it Failed, so cleanPodPolicy (None by default) keeps
  // nothing: a job past its deadline must not hold its GPUs.
  for (CleanPodPolicy policy : {CleanPodPolicy::kNone, CleanPodPolicy::kRunning}) {
    CAPTURE(ToString(policy));
    TFJob job = TestJob({{kPS, 1}, {kWorker, 2}}, RestartPolicy::kExitCode);
    job.spec.run_policy.clean_pod_policy = policy;
    SUBCASE("deadline") {
      job.spec.run_policy.active_deadline_seconds = 10;
      Step(job, {}, At(0));
      const std::vector<ObservedReplica> observed = {Replica(kPS, 0, kRunning),
                                                     Replica(kWorker, 0, kSucceeded, 0),
                                                     Replica(kWorker, 1, kPending)};
      Step(job, observed, At(10));
      REQUIRE(IsFailed(job.status));
      CHECK(FailedByLimit(job.status));
      CHECK(ReplicasToDelete(job, observed) ==
            std::vector<ReplicaRef>{{kPS, 0}, {kWorker, 0}, {kWorker, 1}});
    }
    SUBCASE("backoffLimit") {
      job.spec.run_policy.backoff_limit = 0;
      const std::vector<ObservedReplica> observed = {Replica(kPS, 0, kRunning),
                                                     Replica(kWorker, 0, kFailed, 137)};
      Step(job, observed, At(1));
      REQUIRE(IsFailed(job.status));
      CHECK(FailedByLimit(job.status));
      CHECK(ReplicasToDelete(job, observed) == std::vector<ReplicaRef>{{kPS, 0}, {kWorker, 0}});
    }
  }
  SUBCASE("another failure keeps cleanPodPolicy None's meaning") {
    TFJob job = TestJob({{kPS, 1}, {kWorker, 1}}, RestartPolicy::kExitCode);
    const std::vector<ObservedReplica> observed = {Replica(kPS, 0, kRunning),
                                                   Replica(kWorker, 0, kFailed, 1)};
    Step(job, observed, At(1));
    REQUIRE(IsFailed(job.status));
    CHECK_FALSE(FailedByLimit(job.status));
    CHECK(ReplicasToDelete(job, observed).empty());
  }
  SUBCASE("a status written by an older taas (its message) is recognised too") {
    JobStatus status;
    SetCondition(status, ConditionType::kFailed, ConditionStatus::kTrue, "TFJobFailed",
                 "TFJob default/j has failed because it was active longer than specified deadline",
                 At(1));
    CHECK(FailedByLimit(status));
  }
}

TEST_CASE("backoffLimit is checked before activeDeadlineSeconds, as Kubeflow") {
  TFJob job = TestJob({{kWorker, 1}}, RestartPolicy::kExitCode);
  job.spec.run_policy.active_deadline_seconds = 10;
  job.spec.run_policy.backoff_limit = 0;
  Step(job, {}, At(0));
  Step(job, {Replica(kWorker, 0, kFailed, 137)}, At(10));
  CHECK(Condition(job.status, ConditionType::kFailed).message ==
        "Job j has failed because it has reached the specified backoff limit");
}

TEST_CASE("an activeDeadlineSeconds past the clock's range never requeues the job in the past") {
  // 2^63-1 seconds from the start overflowed into a time in the past: a requeue every second.
  TFJob job = TestJob({{kWorker, 1}});
  job.spec.run_policy.active_deadline_seconds = std::numeric_limits<std::int64_t>::max();
  const StatusUpdate started = Step(job, {Replica(kWorker, 0, kRunning)}, At(0));
  CHECK_FALSE(started.requeue_at.has_value());
  const StatusUpdate later = Step(job, {Replica(kWorker, 0, kRunning)}, At(1000000));
  CHECK_FALSE(IsFinished(job.status));
  CHECK_FALSE(later.requeue_at.has_value());
}

// ---------------------------------------------------------------------------------------------
// ComputeJobStatus: suspend and resume

TEST_CASE("suspend stops every replica and resume restarts the clock") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 2}});
  job.spec.run_policy.active_deadline_seconds = 100;
  const std::vector<ObservedReplica> running = {
      Replica(kPS, 0, kRunning), Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kRunning)};
  Step(job, running, At(0));
  REQUIRE(IsRunning(job.status));

  job.spec.run_policy.suspend = true;
  const StatusUpdate suspended = Step(job, running, At(10));
  CHECK(IsSuspended(job.status));
  const JobCondition& condition = Condition(job.status, ConditionType::kSuspended);
  CHECK(condition.reason == "TFJobSuspended");
  CHECK(condition.message == "TFJob j is suspended.");
  CHECK(Condition(job.status, ConditionType::kRunning).status == ConditionStatus::kFalse);
  CHECK(Condition(job.status, ConditionType::kRunning).reason == "TFJobSuspended");
  CHECK(job.status.replica_statuses.at(kWorker).active == 0);
  CHECK(ReplicasToDelete(job, running).size() == 3);
  CHECK(ReplicasToCreate(job, {}).empty());
  CHECK(suspended.events.size() == 2);

  SUBCASE("no deadline while suspended") {
    Step(job, {}, At(500));
    CHECK_FALSE(IsFinished(job.status));
  }

  job.spec.run_policy.suspend = false;
  Step(job, {}, At(600));
  const JobCondition& resumed = Condition(job.status, ConditionType::kSuspended);
  CHECK(resumed.status == ConditionStatus::kFalse);
  CHECK(resumed.reason == "TFJobResumed");
  CHECK(resumed.message == "TFJob j is resumed.");
  CHECK(job.status.start_time == At(600));
  CHECK(ReplicasToCreate(job, {}).size() == 3);
  Step(job, running, At(650));
  CHECK(IsRunning(job.status));
  CHECK_FALSE(IsFinished(job.status));
}

TEST_CASE("a job created suspended has no start time until resumed") {
  TFJob job = TestJob({{kWorker, 1}});
  job.spec.run_policy.suspend = true;
  Step(job, {}, At(0));
  CHECK(IsSuspended(job.status));
  CHECK_FALSE(job.status.start_time.has_value());
}

// ---------------------------------------------------------------------------------------------
// Stuck replicas (taas)

TEST_CASE("a replica stuck in ImagePullBackOff surfaces as a Stuck condition") {
  TFJob job = TestJob({{kWorker, 2}});
  StatusOptions options;
  options.stuck_after = std::chrono::seconds(60);
  ObservedReplica pulling = Replica(kWorker, 1, kPending);
  pulling.reason = "ImagePullBackOff";
  pulling.message = "Back-off pulling image \"nope\"";
  pulling.waiting_since = At(0);

  const StatusUpdate early = Step(job, {Replica(kWorker, 0, kRunning), pulling}, At(30), options);
  CHECK_FALSE(FindCondition(job.status, ConditionType::kStuck));
  CHECK(early.requeue_at == At(60));

  Step(job, {Replica(kWorker, 0, kRunning), pulling}, At(60), options);
  const JobCondition& stuck = Condition(job.status, ConditionType::kStuck);
  CHECK(stuck.status == ConditionStatus::kTrue);
  CHECK(stuck.reason == "ImagePullBackOff");
  CHECK(stuck.message ==
        "replica j-worker-1 is stuck: ImagePullBackOff: Back-off pulling image "
        "\"nope\"");
  CHECK(IsRunning(job.status));  // Stuck sits beside Running, it does not replace it

  Step(job, {Replica(kWorker, 0, kRunning), Replica(kWorker, 1, kRunning)}, At(90), options);
  CHECK(Condition(job.status, ConditionType::kStuck).status == ConditionStatus::kFalse);
}

TEST_CASE("a running replica in CrashLoopBackOff is stuck; a plain running one is not") {
  TFJob job = TestJob({{kWorker, 1}}, RestartPolicy::kOnFailure);
  ObservedReplica crashing = Replica(kWorker, 0, kRunning);
  crashing.waiting_since = At(0);
  Step(job, {crashing}, At(1000));
  CHECK_FALSE(FindCondition(job.status, ConditionType::kStuck));
  crashing.reason = "CrashLoopBackOff";
  Step(job, {crashing}, At(1000));
  CHECK(Condition(job.status, ConditionType::kStuck).reason == "CrashLoopBackOff");

  SUBCASE("disabled with stuck_after = 0") {
    TFJob other = TestJob({{kWorker, 1}});
    Step(other, {crashing}, At(1000), StatusOptions{std::chrono::seconds(0)});
    CHECK_FALSE(FindCondition(other.status, ConditionType::kStuck));
  }
}

// ---------------------------------------------------------------------------------------------
// Waiting for the evaluator (taas)

// A replica that ended at `at` (its container's finishedAt, its process's exit).
ObservedReplica Ended(ReplicaType type, int index, ReplicaPhase phase, int exit_code,
                      std::optional<Time> at) {
  ObservedReplica replica = Replica(type, index, phase, exit_code);
  replica.finished_at = at;
  return replica;
}

// Chief, PS, 2 workers and an evaluator under cleanPodPolicy Running (what Kubeflow users set so
// that the evaluator does not outlive the job), every replica running.
TFJob RunningJobWithEvaluator() {
  TFJob job = TestJob({{kChief, 1}, {kPS, 1}, {kWorker, 2}, {kEvaluator, 1}});
  job.spec.run_policy.clean_pod_policy = CleanPodPolicy::kRunning;
  Step(job,
       {Replica(kChief, 0, kRunning), Replica(kPS, 0, kRunning), Replica(kWorker, 0, kRunning),
        Replica(kWorker, 1, kRunning), Replica(kEvaluator, 0, kRunning)},
       At(0));
  REQUIRE(IsRunning(job.status));
  return job;
}

TEST_CASE("the default grace after the chief's success is 2 minutes, at most an hour") {
  CHECK(StatusOptions{}.evaluator_grace == std::chrono::minutes(2));
  CHECK(kMaxEvaluatorGrace == std::chrono::hours(1));
}

TEST_CASE("a job with an evaluator succeeds once the evaluator scored the final checkpoint") {
  TFJob job = RunningJobWithEvaluator();
  // The chief ended at 100; the evaluator still scores the final checkpoint.
  const std::vector<ObservedReplica> waiting = {
      Ended(kChief, 0, kSucceeded, 0, At(100)), Replica(kPS, 0, kRunning),
      Replica(kWorker, 0, kSucceeded, 0), Replica(kWorker, 1, kSucceeded, 0),
      Replica(kEvaluator, 0, kRunning)};
  const StatusUpdate first = Step(job, waiting, At(101));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(IsRunning(job.status));
  CHECK_FALSE(job.status.completion_time.has_value());
  CHECK(first.events.empty());
  CHECK(first.requeue_at == At(220));
  CHECK(first.awaiting_evaluator_until == At(220));
  // Nothing is removed while it waits: the evaluator keeps its pod.
  CHECK(ReplicasToDelete(job, waiting).empty());

  const StatusUpdate later = Step(job, waiting, At(150));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(later.requeue_at == At(220));
  CHECK(later.events.empty());

  SUBCASE("the evaluator exits 0: Succeeded then, not at the grace's end") {
    std::vector<ObservedReplica> done = waiting;
    done.back() = Ended(kEvaluator, 0, kSucceeded, 0, At(160));
    const StatusUpdate update = Step(job, done, At(161));
    REQUIRE(IsSucceeded(job.status));
    CHECK(Condition(job.status, ConditionType::kSucceeded).message ==
          "TFJob default/j successfully completed.");
    CHECK(job.status.completion_time == At(161));
    CHECK(job.status.replica_statuses.at(kEvaluator).succeeded == 1);
    CHECK_FALSE(update.awaiting_evaluator_until.has_value());
    CHECK_FALSE(update.requeue_at.has_value());
    CHECK(update.events.back().reason == "TFJobSucceeded");
    CHECK(ReplicasToDelete(job, done) == std::vector<ReplicaRef>{{kPS, 0}});
  }
  SUBCASE("the evaluator fails: the chief's success stands, without a wait or a restart") {
    for (RestartPolicy policy : {RestartPolicy::kNever, RestartPolicy::kExitCode}) {
      CAPTURE(ToString(policy));
      TFJob copy = job;
      copy.spec.replica_specs.at(kEvaluator).restart_policy = policy;
      std::vector<ObservedReplica> failed = waiting;
      failed.back() = Ended(kEvaluator, 0, kFailed, 137, At(160));
      const StatusUpdate update = Step(copy, failed, At(161));
      CHECK(IsSucceeded(copy.status));
      CHECK(update.restart.empty());
    }
  }
  SUBCASE("the grace passed: Succeeded, and cleanPodPolicy removes the evaluator as before") {
    const StatusUpdate update = Step(job, waiting, At(220));
    REQUIRE(IsSucceeded(job.status));
    CHECK(job.status.completion_time == At(220));
    CHECK_FALSE(update.awaiting_evaluator_until.has_value());
    CHECK(ReplicasToDelete(job, waiting) == std::vector<ReplicaRef>{{kPS, 0}, {kEvaluator, 0}});
  }
  SUBCASE("a Pending evaluator is waited for too; one being deleted is not") {
    std::vector<ObservedReplica> pending = waiting;
    pending.back().phase = kPending;
    CHECK_FALSE(IsFinished(ComputeJobStatus(job, pending, At(150)).status));
    std::vector<ObservedReplica> deleted = waiting;
    deleted.back().terminating = true;
    CHECK(IsSucceeded(ComputeJobStatus(job, deleted, At(150)).status));
  }
}

TEST_CASE("a job whose chief ended before it was seen running is Running while it waits") {
  // The operator's first look after the pods started finds the chief done (kwok, a short job):
  // the job was never Running, and its evaluator still works, so it is Running now, not Created.
  TFJob job = TestJob({{kChief, 1}, {kEvaluator, 1}});
  const std::vector<ObservedReplica> waiting = {Ended(kChief, 0, kSucceeded, 0, At(100)),
                                                Replica(kEvaluator, 0, kRunning)};
  const StatusUpdate update = Step(job, waiting, At(101));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(IsRunning(job.status));
  CHECK(update.awaiting_evaluator_until == At(220));
  Step(job, {waiting[0], Ended(kEvaluator, 0, kSucceeded, 0, At(130))}, At(131));
  CHECK(IsSucceeded(job.status));
  CHECK_FALSE(IsRunning(job.status));
}

TEST_CASE("while it waits for the evaluator, no failure or restart undoes the chief's success") {
  TFJob job = RunningJobWithEvaluator();
  job.spec.replica_specs.at(kWorker).restart_policy = RestartPolicy::kExitCode;
  job.spec.replica_specs.at(kPS).restart_policy = RestartPolicy::kNever;
  job.spec.run_policy.backoff_limit = 0;
  job.spec.run_policy.active_deadline_seconds = 120;
  // The PS fails under Never, a worker with a permanent code, another past the backoff limit,
  // and the deadline passes: each would fail the job (rules 5, 6, 8) had the chief not succeeded.
  const std::vector<ObservedReplica> observed = {
      Ended(kChief, 0, kSucceeded, 0, At(100)), Ended(kPS, 0, kFailed, 1, At(101)),
      Ended(kWorker, 0, kFailed, 1, At(101)), Ended(kWorker, 1, kFailed, 137, At(101)),
      Replica(kEvaluator, 0, kRunning)};
  const StatusUpdate waiting = Step(job, observed, At(130));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(waiting.restart.empty());
  CHECK(waiting.awaiting_evaluator_until == At(220));
  CHECK(waiting.requeue_at == At(220));
  const StatusUpdate done = Step(job, observed, At(220));
  CHECK(IsSucceeded(job.status));
  CHECK_FALSE(IsFailed(job.status));
  CHECK(done.restart.empty());

  SUBCASE("without an evaluator Kubeflow's order stands: the failure in the same round wins") {
    TFJob plain = TestJob({{kChief, 1}, {kWorker, 1}}, RestartPolicy::kExitCode);
    Step(plain, {Ended(kChief, 0, kSucceeded, 0, At(1)), Ended(kWorker, 0, kFailed, 1, At(1))},
         At(2));
    CHECK(IsFailed(plain.status));
  }
}

TEST_CASE("without a chief, worker 0's finish starts the grace; AllWorkers the last worker's") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 2}, {kEvaluator, 1}});
  const ObservedReplica evaluating = Replica(kEvaluator, 0, kRunning);
  const StatusUpdate worker0 = Step(
      job, {Ended(kWorker, 0, kSucceeded, 0, At(10)), Replica(kWorker, 1, kRunning), evaluating},
      At(11));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(worker0.awaiting_evaluator_until == At(130));

  TFJob all = TestJob({{kPS, 1}, {kWorker, 2}, {kEvaluator, 1}});
  all.spec.success_policy = SuccessPolicy::kAllWorkers;
  const StatusUpdate first = Step(
      all, {Ended(kWorker, 0, kSucceeded, 0, At(10)), Replica(kWorker, 1, kRunning), evaluating},
      At(11));
  CHECK_FALSE(first.awaiting_evaluator_until.has_value());  // the rule does not hold yet
  const StatusUpdate last = Step(all,
                                 {Ended(kWorker, 0, kSucceeded, 0, At(10)),
                                  Ended(kWorker, 1, kSucceeded, 0, At(50)), evaluating},
                                 At(51));
  CHECK_FALSE(IsFinished(all.status));
  CHECK(last.awaiting_evaluator_until == At(170));
}

TEST_CASE("no evaluator, or no grace: the job succeeds with its chief, as Kubeflow's") {
  SUBCASE("no Evaluator in the spec") {
    TFJob job = TestJob({{kChief, 1}, {kWorker, 1}});
    const StatusUpdate update =
        Step(job, {Ended(kChief, 0, kSucceeded, 0, At(10)), Replica(kWorker, 0, kRunning)}, At(11));
    CHECK(IsSucceeded(job.status));
    CHECK_FALSE(update.awaiting_evaluator_until.has_value());
  }
  SUBCASE("an Evaluator with 0 replicas, and a stray evaluator outside the spec") {
    TFJob job = TestJob({{kChief, 1}, {kEvaluator, 0}});
    Step(job, {Ended(kChief, 0, kSucceeded, 0, At(10)), Replica(kEvaluator, 0, kRunning)}, At(11));
    CHECK(IsSucceeded(job.status));
  }
  SUBCASE("grace 0") {
    TFJob job = TestJob({{kChief, 1}, {kEvaluator, 1}});
    StatusOptions options;
    options.evaluator_grace = std::chrono::seconds(0);
    Step(job, {Ended(kChief, 0, kSucceeded, 0, At(10)), Replica(kEvaluator, 0, kRunning)}, At(11),
         options);
    CHECK(IsSucceeded(job.status));
  }
}

TEST_CASE("hostile finish times never make the wait unbounded") {
  TFJob job = TestJob({{kChief, 1}, {kEvaluator, 1}});
  const ObservedReplica evaluating = Replica(kEvaluator, 0, kRunning);
  const auto succeeds = [&](std::optional<Time> finished_at, Time now,
                            const StatusOptions& options = {}) {
    TFJob copy = job;
    Step(copy, {Ended(kChief, 0, kSucceeded, 0, finished_at), evaluating}, now, options);
    return IsSucceeded(copy.status);
  };
  SUBCASE("missing: no wait (a grace from `now` would move with every round)") {
    CHECK(succeeds(std::nullopt, At(10)));
  }
  SUBCASE("ahead of the clock by less than the grace (another node's clock): waited from it") {
    const StatusUpdate update =
        ComputeJobStatus(job, {Ended(kChief, 0, kSucceeded, 0, At(130)), evaluating}, At(100));
    CHECK_FALSE(IsFinished(update.status));
    CHECK(update.requeue_at == At(250));
    CHECK(succeeds(At(130), At(250)));
  }
  SUBCASE("further ahead than the grace, up to the clock's end: not believed, no wait") {
    CHECK(succeeds(At(221), At(100)));
    CHECK(succeeds(Time::max(), At(100)));
  }
  SUBCASE("long ago, or at the clock's start: the grace is over") {
    CHECK(succeeds(Time::min(), At(100)));
    CHECK(succeeds(Time{}, At(100)));
  }
  SUBCASE("a grace past the clock's range is cut to an hour") {
    StatusOptions options;
    options.evaluator_grace = std::chrono::seconds::max();
    CHECK_FALSE(succeeds(At(0), At(3599), options));
    CHECK(succeeds(At(0), At(3600), options));
    options.evaluator_grace = std::chrono::seconds(-5);
    CHECK(succeeds(At(0), At(1), options));
  }
  SUBCASE("a finish time on a replica that did not succeed starts nothing") {
    TFJob copy = job;
    ObservedReplica running = Replica(kChief, 0, kRunning);
    running.finished_at = At(0);
    Step(copy, {running, evaluating}, At(500));
    CHECK_FALSE(IsFinished(copy.status));
    CHECK(IsRunning(copy.status));
  }
}

// ---------------------------------------------------------------------------------------------
// Cleanup helpers

TEST_CASE("replicas outside the spec are deleted and ignored by the counts") {
  TFJob job = TestJob({{kWorker, 2}});
  const std::vector<ObservedReplica> observed = {
      Replica(kWorker, 0, kRunning), Replica(kWorker, 2, kRunning), Replica(kPS, 0, kFailed, 1)};
  Step(job, observed, At(1));
  CHECK_FALSE(IsFinished(job.status));
  CHECK(job.status.replica_statuses.at(kWorker).active == 1);
  CHECK_FALSE(job.status.replica_statuses.contains(kPS));
  CHECK(ReplicasToDelete(job, observed) == std::vector<ReplicaRef>{{kWorker, 2}, {kPS, 0}});
}

TEST_CASE("TTL expires ttlSecondsAfterFinished after completion") {
  TFJob job = TestJob({{kWorker, 1}});
  job.spec.run_policy.ttl_seconds_after_finished = 30;
  Step(job, {Replica(kWorker, 0, kRunning)}, At(0));
  CHECK_FALSE(TtlExpiry(job).has_value());
  Step(job, {Replica(kWorker, 0, kSucceeded, 0)}, At(100));
  CHECK(TtlExpiry(job) == At(130));
  CHECK_FALSE(TtlExpired(job, At(129)));
  CHECK(TtlExpired(job, At(130)));
  job.spec.run_policy.ttl_seconds_after_finished.reset();
  CHECK_FALSE(TtlExpired(job, At(100000)));
}

TEST_CASE("the computed status serialises the way Kubeflow's does") {
  TFJob job = TestJob({{kPS, 1}, {kWorker, 1}});
  Step(job, {Replica(kPS, 0, kRunning), Replica(kWorker, 0, kRunning)}, At(0));
  const nlohmann::json written = StatusToJson(job.status);
  CHECK(written["conditions"][0]["type"] == "Created");
  CHECK(written["conditions"][1]["type"] == "Running");
  CHECK(written["conditions"][1]["reason"] == "TFJobRunning");
  CHECK(written["replicaStatuses"]["PS"]["active"] == 1);
  CHECK(written["replicaStatuses"]["Worker"]["labelSelector"]["matchLabels"]
               ["training.kubeflow.org/replica-type"] == "worker");
  CHECK(written["startTime"] == "2026-01-01T00:00:00Z");
}

}  // namespace
}  // namespace taas::tfjob
