#include "taas/controller/plan.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace tf = taas::tfjob;
using nlohmann::json;
using taas::controller::Decide;
using taas::controller::Decision;
using taas::controller::LedgerFromStatus;
using taas::controller::LedgerToStatus;
using taas::controller::Observation;
using taas::controller::ObservedPod;
using taas::controller::RestartLedger;

namespace {

const tf::Time kNow = std::chrono::floor<std::chrono::seconds>(
    std::chrono::sys_days{std::chrono::year{2026} / 1 / 1} + std::chrono::hours(12));

json Template() {
  return {{"spec", {{"containers", {{{"name", "tensorflow"}, {"image", "taas/trainer"}}}}}}};
}

// 1 PS + 2 workers under ExitCode.
tf::TFJob Job(json run_policy = json::object()) {
  json object = {
      {"apiVersion", "kubeflow.org/v1"},
      {"kind", "TFJob"},
      {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "job-uid"}}},
      {"spec",
       {{"tfReplicaSpecs",
         {{"PS", {{"replicas", 1}, {"template", Template()}}},
          {"Worker",
           {{"replicas", 2}, {"restartPolicy", "ExitCode"}, {"template", Template()}}}}}}}};
  if (!run_policy.empty()) object["spec"]["runPolicy"] = run_policy;
  auto job = tf::LoadTFJob(object);
  REQUIRE_MESSAGE(job.ok(), job.status().ToString());
  return *job;
}

ObservedPod Pod(tf::ReplicaType type, int index, tf::ReplicaPhase phase,
                std::optional<int> exit_code = std::nullopt) {
  ObservedPod pod;
  pod.name = tf::ReplicaName("j", type, index);
  pod.uid = pod.name + "-uid";
  tf::ObservedReplica r;
  r.type = type;
  r.index = index;
  r.phase = phase;
  r.exit_code = exit_code;
  pod.replica = r;
  return pod;
}

// Every replica's pod Running and every service present.
Observation AllRunning() {
  Observation seen;
  seen.pods = {Pod(tf::ReplicaType::kPS, 0, tf::ReplicaPhase::kRunning),
               Pod(tf::ReplicaType::kWorker, 0, tf::ReplicaPhase::kRunning),
               Pod(tf::ReplicaType::kWorker, 1, tf::ReplicaPhase::kRunning)};
  for (const auto& pod : seen.pods) seen.services.push_back({pod.name, false});
  return seen;
}

int WorkerRestarts(const Decision& d) {
  return d.update.status.replica_statuses.at(tf::ReplicaType::kWorker).restarts;
}

// What a crash loses: the status and ledger survive (they were written), memory does not.
tf::TFJob AfterWrite(tf::TFJob job, const Decision& d, RestartLedger& ledger) {
  json status = tf::StatusToJson(d.update.status);
  LedgerToStatus(d.ledger, status);
  auto parsed = tf::StatusFromJson(status);
  REQUIRE(parsed.ok());
  job.status = *parsed;
  ledger = LedgerFromStatus(status);
  return job;
}

}  // namespace

TEST_CASE("a new job: pods first, their services once no pod is left to create") {
  tf::TFJob job = Job();
  Observation seen;
  Decision first = Decide(job, {}, seen, kNow, {});
  CHECK(first.write_status);  // Created
  CHECK(first.create_pods.size() == 3);
  CHECK(first.create_services.empty());
  CHECK(first.delete_pods.empty());
  CHECK(first.ensure_job_access);  // the Secret and NetworkPolicy before the first pod

  job.status = first.update.status;
  seen.expected_pods = first.create_pods;  // created, not yet in the cache
  Decision second = Decide(job, {}, seen, kNow, {});
  CHECK(second.create_pods.empty());
  CHECK_FALSE(second.ensure_job_access);  // nothing to create: no call for them
  CHECK(second.create_services.size() == 3);
  CHECK_FALSE(second.write_status);

  seen.expected_services = {"j-ps-0", "j-worker-0", "j-worker-1"};
  Decision third = Decide(job, {}, seen, kNow, {});
  CHECK(third.create_pods.empty());
  CHECK(third.create_services.empty());
}

TEST_CASE("a retryable failure is counted once and its pod deleted, even across a crash") {
  tf::TFJob job = Job();
  job.status = Decide(job, {}, AllRunning(), kNow, {}).update.status;
  Observation seen = AllRunning();
  seen.pods[2] = Pod(tf::ReplicaType::kWorker, 1, tf::ReplicaPhase::kFailed, 137);

  Decision failed = Decide(job, {}, seen, kNow, {});
  CHECK(failed.write_status);
  CHECK(WorkerRestarts(failed) == 1);
  REQUIRE(failed.delete_pods.size() == 1);
  CHECK(failed.delete_pods[0].uid == "j-worker-1-uid");
  CHECK(failed.delete_pods[0].restart);
  CHECK(failed.delete_pods[0].newly_restarted);
  CHECK(failed.delete_pods[0].why == "restart after exit code 137");
  CHECK(failed.ledger == RestartLedger{"j-worker-1-uid"});

  SUBCASE("the operator crashed after the status write, before the delete") {
    RestartLedger ledger;
    tf::TFJob restarted = AfterWrite(job, failed, ledger);
    Decision again = Decide(restarted, ledger, seen, kNow, {});  // no in-memory expectations
    CHECK(WorkerRestarts(again) == 1);                           // not counted twice
    CHECK(again.ledger == RestartLedger{"j-worker-1-uid"});
    REQUIRE(again.delete_pods.size() == 1);  // the owed delete is done now
    CHECK(again.delete_pods[0].uid == "j-worker-1-uid");
    CHECK(again.delete_pods[0].restart);
    CHECK_FALSE(again.delete_pods[0].newly_restarted);
    CHECK(again.create_pods.empty());  // the old pod is still there
  }

  SUBCASE("the same process: the in-memory deletion alone also stops a second count") {
    tf::TFJob written = job;
    written.status = failed.update.status;
    seen.pods[2].deleting = true;
    Decision again = Decide(written, {}, seen, kNow, {});
    CHECK(WorkerRestarts(again) == 1);
  }

  SUBCASE("once the pod is gone the ledger forgets it and the replica is recreated") {
    RestartLedger ledger;
    tf::TFJob restarted = AfterWrite(job, failed, ledger);
    seen.pods.erase(seen.pods.begin() + 2);
    Decision gone = Decide(restarted, ledger, seen, kNow, {});
    CHECK(WorkerRestarts(gone) == 1);
    CHECK(gone.ledger.empty());
    REQUIRE(gone.create_pods.size() == 1);
    CHECK(gone.create_pods[0] == tf::ReplicaRef{tf::ReplicaType::kWorker, 1});

    // The new pod fails too: a second, distinct restart.
    seen.pods.push_back(Pod(tf::ReplicaType::kWorker, 1, tf::ReplicaPhase::kFailed, 143));
    seen.pods.back().uid = "second-uid";
    tf::TFJob later = restarted;
    later.status = gone.update.status;
    Decision second = Decide(later, gone.ledger, seen, kNow, {});
    CHECK(WorkerRestarts(second) == 2);
    CHECK(second.ledger == RestartLedger{"second-uid"});
  }
}

TEST_CASE("the ledger round-trips through the status JSON and is absent when empty") {
  json status = json::object();
  LedgerToStatus({"b", "a"}, status);
  CHECK(status["restartedPods"] == json({"a", "b"}));
  CHECK(LedgerFromStatus(status) == RestartLedger{"a", "b"});
  LedgerToStatus({}, status);
  CHECK_FALSE(status.contains("restartedPods"));
  CHECK(LedgerFromStatus(json::object()).empty());
  CHECK(LedgerFromStatus(json{{"restartedPods", "not-a-list"}}).empty());
}

TEST_CASE("the newest incarnation of a replica is the highest of its pods still observed") {
  Observation seen;
  CHECK(taas::controller::NewestIncarnation(seen, "mnist-worker-1") == 0);
  seen.pods.push_back({"mnist-worker-1", "old", std::nullopt, true, std::nullopt, "", 7});
  seen.pods.push_back({"mnist-worker-1", "older", std::nullopt, true, std::nullopt, "", 5});
  seen.pods.push_back({"mnist-worker-0", "other", std::nullopt, false, std::nullopt, "", 9});
  CHECK(taas::controller::NewestIncarnation(seen, "mnist-worker-1") == 7);
  CHECK(taas::controller::NewestIncarnation(seen, "mnist-ps-0") == 0);
}

TEST_CASE("a pod in the way of a replica blocks it instead of a doomed create") {
  tf::TFJob job = Job();
  Observation seen = AllRunning();
  SUBCASE("terminating: the replica waits, nothing is deleted again") {
    seen.pods[1].replica->terminating = true;  // j-worker-0 is going away (deleted by hand)
    Decision d = Decide(job, {}, seen, kNow, {});
    CHECK_FALSE(d.blocked);
    CHECK(d.create_pods.empty());
    CHECK(d.delete_pods.empty());
  }
  SUBCASE("a pod of the replica's name without replica labels") {
    seen.pods[1].replica.reset();
    Decision d = Decide(job, {}, seen, kNow, {});
    CHECK(d.blocked);
    CHECK(d.create_pods.empty());
  }
}

TEST_CASE("suspend deletes every pod and service; a finished job cleans per cleanPodPolicy") {
  SUBCASE("suspended") {
    tf::TFJob job = Job({{"suspend", true}});
    Decision d = Decide(job, {}, AllRunning(), kNow, {});
    CHECK(d.delete_pods.size() == 3);
    CHECK(d.delete_services.size() == 3);
    CHECK(d.create_pods.empty());
    CHECK(d.create_services.empty());
    for (const auto& pod : d.delete_pods) CHECK(pod.why == "job suspended");
  }
  SUBCASE("worker 0 succeeded, cleanPodPolicy All") {
    tf::TFJob job = Job({{"cleanPodPolicy", "All"}});
    Observation seen = AllRunning();
    seen.pods[1] = Pod(tf::ReplicaType::kWorker, 0, tf::ReplicaPhase::kSucceeded, 0);
    Decision d = Decide(job, {}, seen, kNow, {});
    CHECK(tf::IsSucceeded(d.update.status));
    CHECK(d.delete_pods.size() == 3);
    CHECK(d.delete_services.size() == 3);
    for (const auto& pod : d.delete_pods) {
      CHECK(pod.why == "cleanPodPolicy");
      CHECK_FALSE(pod.restart);
    }
  }
}

TEST_CASE("a job past its deadline loses its pods and services under cleanPodPolicy None") {
  // As Kubeflow; and a crash after the Failed status was written still leads to the deletions,
  // since the next decision reads the reason from the status.
  tf::TFJob job = Job({{"activeDeadlineSeconds", 60}});
  RestartLedger ledger;
  Decision started = Decide(job, {}, AllRunning(), kNow, {});
  job = AfterWrite(job, started, ledger);
  Decision d = Decide(job, ledger, AllRunning(), kNow + std::chrono::seconds(60), {});
  REQUIRE(tf::IsFailed(d.update.status));
  CHECK(d.write_status);
  CHECK(d.delete_pods.size() == 3);
  CHECK(d.delete_services.size() == 3);
  for (const auto& pod : d.delete_pods) CHECK(pod.why == "failed past backoffLimit or deadline");
  job = AfterWrite(job, d, ledger);
  Decision again = Decide(job, ledger, AllRunning(), kNow + std::chrono::seconds(61), {});
  CHECK_FALSE(again.write_status);
  CHECK(again.delete_pods.size() == 3);
  CHECK(again.delete_services.size() == 3);
}

TEST_CASE("children outside the spec are deleted; pods without replica labels only block") {
  tf::TFJob job = Job();
  Observation seen = AllRunning();
  seen.pods.push_back(Pod(tf::ReplicaType::kWorker, 5, tf::ReplicaPhase::kRunning));
  seen.services.push_back({"j-worker-5", false});
  seen.services.push_back({"j-worker-6", true});  // already going
  ObservedPod unlabelled;
  unlabelled.name = "j-extra";
  unlabelled.uid = "x";
  seen.pods.push_back(unlabelled);
  Decision d = Decide(job, {}, seen, kNow, {});
  REQUIRE(d.delete_pods.size() == 1);
  CHECK(d.delete_pods[0].name == "j-worker-5");
  CHECK(d.delete_pods[0].why == "not in spec");
  REQUIRE(d.delete_services.size() == 1);
  CHECK(d.delete_services[0].name == "j-worker-5");
}

TEST_CASE(
    "the result's messages: worker 0's without a Chief, the Chief's with one, Evaluator 0's") {
  const tf::TFJob job = Job();
  Observation seen = AllRunning();
  CHECK_FALSE(taas::controller::FindResultMessages(job.spec, seen).chief);
  seen.pods[2].termination_message = "worker 1's";  // not the chief
  CHECK_FALSE(taas::controller::FindResultMessages(job.spec, seen).chief);
  seen.pods[1].termination_message = "worker 0's";
  seen.pods[1].replica->finished_at = kNow;
  const auto found = taas::controller::FindResultMessages(job.spec, seen).chief;
  REQUIRE(found);
  CHECK(found->pod == "j-worker-0");
  CHECK(found->text == "worker 0's");
  CHECK(found->finished_at == kNow);

  json object = {{"apiVersion", "kubeflow.org/v1"},
                 {"kind", "TFJob"},
                 {"metadata", {{"name", "j"}, {"namespace", "ns"}}},
                 {"spec",
                  {{"tfReplicaSpecs",
                    {{"Chief", {{"replicas", 1}, {"template", Template()}}},
                     {"Worker", {{"replicas", 2}, {"template", Template()}}}}}}}};
  const auto with_chief = tf::LoadTFJob(object);
  REQUIRE(with_chief.ok());
  CHECK_FALSE(
      taas::controller::FindResultMessages(with_chief->spec, seen).chief);  // worker 0 is no chief
  seen.pods.push_back(Pod(tf::ReplicaType::kChief, 0, tf::ReplicaPhase::kSucceeded, 0));
  seen.pods.back().termination_message = "the chief's";
  CHECK(taas::controller::FindResultMessages(with_chief->spec, seen).chief->text == "the chief's");
  seen.pods.back().replica.reset();  // a pod without replica labels is nobody's
  CHECK_FALSE(taas::controller::FindResultMessages(with_chief->spec, seen).chief);

  seen.pods.push_back(Pod(tf::ReplicaType::kEvaluator, 0, tf::ReplicaPhase::kSucceeded, 0));
  seen.pods.back().termination_message = "the evaluator's";
  const auto messages = taas::controller::FindResultMessages(with_chief->spec, seen);
  REQUIRE(messages.evaluator);
  CHECK(messages.evaluator->text == "the evaluator's");
  CHECK(messages.evaluator->pod == seen.pods.back().name);
}

TEST_CASE("the job's result: the chief's report, else the evaluator's, at its replica's exit") {
  namespace jr = taas::job_report;
  taas::controller::ResultMessages messages;
  messages.chief = taas::controller::ReplicaMessage{"j-worker-0", "", kNow};
  messages.evaluator =
      taas::controller::ReplicaMessage{"j-evaluator-0", "", kNow + std::chrono::seconds(30)};
  const tf::Time read_at = kNow + std::chrono::seconds(60);
  const jr::JobReport chief_without{300, {}};
  const jr::JobReport evaluator_at_end{300, {{"accuracy", 0.83}}};
  const auto from_evaluator =
      taas::controller::PickResult(messages, chief_without, evaluator_at_end, read_at);
  REQUIRE(from_evaluator);
  CHECK(from_evaluator->report == evaluator_at_end);
  CHECK(from_evaluator->at == kNow + std::chrono::seconds(30));
  const jr::JobReport chief_with{300, {{"accuracy", 0.9}}};
  const auto from_chief =
      taas::controller::PickResult(messages, chief_with, evaluator_at_end, read_at);
  REQUIRE(from_chief);
  CHECK(from_chief->report == chief_with);
  CHECK(from_chief->at == kNow);
  messages.evaluator->finished_at.reset();  // a pod without finishedAt: when it was read
  CHECK(taas::controller::PickResult(messages, std::nullopt, evaluator_at_end, read_at)->at ==
        read_at);
  CHECK_FALSE(taas::controller::PickResult(messages, std::nullopt, std::nullopt, read_at));
}
