// The pure parts of a job's progress: what a trainer's page says, where it is read, the estimate
// (percent, ETA), when it is written, and how it rides with the decided status.
#include "taas/controller/progress.h"

#include <doctest/doctest.h>

#include <limits>

#include "taas/controller/plan.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace taas::controller {
namespace {

namespace tf = taas::tfjob;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

const tf::Time kNow = std::chrono::floor<std::chrono::seconds>(
    std::chrono::sys_days{std::chrono::year{2026} / 1 / 1} + std::chrono::hours(12));
const Clock::time_point kT0{};

TrainerReport Report(std::string_view page) {
  return ReadTrainerReport(prometheus::ParsePrometheusSamples(page));
}

json Container(json env = json::array(), json ports = json::array()) {
  json c = {{"name", "tensorflow"}, {"image", "taas/trainer"}};
  if (!env.empty()) c["env"] = env;
  if (!ports.empty()) c["ports"] = ports;
  return c;
}

tf::TFJob Job(json replica_specs) {
  auto job = tf::LoadTFJob({{"apiVersion", "kubeflow.org/v1"},
                            {"kind", "TFJob"},
                            {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "u"}}},
                            {"spec", {{"tfReplicaSpecs", replica_specs}}}});
  REQUIRE_MESSAGE(job.ok(), job.status().ToString());
  return *job;
}

json Spec(json container, int replicas = 1) {
  return {{"replicas", replicas}, {"template", {{"spec", {{"containers", {container}}}}}}};
}

TEST_CASE("progress: a trainer's page, as the runtime writes it") {
  const TrainerReport r = Report(
      "# HELP taas_global_step Global training step this replica last saw\n"
      "# TYPE taas_global_step gauge\n"
      "taas_global_step 2520\n"
      "taas_max_steps 6000\n"
      "taas_loss 0.412\n"
      "taas_examples_per_second 3310.5\n"
      "taas_learning_rate 0.001\n"
      "taas_eval_accuracy 0.884\n"
      "taas_final_metric{metric=\"accuracy\"} 0.9087\n"
      "taas_final_metric{metric=\"loss\"} 0.26\n"
      "taas_replica_device_info{device=\"cpu\",name=\"\"} 1\n");
  CHECK(r.global_step == 2520);
  CHECK(r.max_steps == 6000);
  CHECK(r.loss == doctest::Approx(0.412));
  CHECK(r.examples_per_second == doctest::Approx(3310.5));
  CHECK(r.eval_accuracy == doctest::Approx(0.884));
  CHECK(r.final_metrics == std::map<std::string, double>{{"accuracy", 0.9087}, {"loss", 0.26}});
  CHECK(Report("") == TrainerReport{});
}

TEST_CASE("progress: a hostile page gives nothing out of range, and the first value of a gauge") {
  std::string page =
      "taas_global_step -5\n"
      "taas_global_step 2520.9\n"  // the first valid one wins over the next
      "taas_global_step 9\n"
      "taas_max_steps 0\n"
      "taas_max_steps 1e300\n"
      "taas_loss +Inf\n"
      "taas_examples_per_second -3\n"
      "taas_eval_accuracy -Inf\n"
      "taas_final_metric 1\n"  // no metric label
      "taas_final_metric{metric=\"bad name\"} 1\n"
      "taas_final_metric{metric=\"accuracy\"} Inf\n"
      "taas_final_metric{metric=\"accuracy\"} 0.5\n"
      "taas_final_metric{metric=\"accuracy\"} 0.7\n";
  for (int i = 0; i < 40; ++i)
    page += "taas_final_metric{metric=\"m" + std::to_string(i) + "\"} 1\n";
  const TrainerReport r = Report(page);
  CHECK(r.global_step == 2520);
  CHECK_FALSE(r.max_steps.has_value());
  CHECK_FALSE(r.loss.has_value());
  CHECK_FALSE(r.examples_per_second.has_value());
  CHECK_FALSE(r.eval_accuracy.has_value());
  CHECK(r.final_metrics.size() == tf::kMaxProgressMetrics);
  CHECK(r.final_metrics.at("accuracy") == 0.5);
  CHECK(Report("taas_global_step 1e16\n").global_step == std::nullopt);  // > 2^53
}

TEST_CASE("progress: the chief's word on steps, the evaluator's accuracy when the chief has none") {
  TrainerReport chief = Report("taas_global_step 2000\ntaas_loss 0.5\n");
  const TrainerReport evaluator = Report(
      "taas_global_step 1000\ntaas_eval_accuracy 0.8\ntaas_final_metric{metric=\"accuracy\"} "
      "0.9\n");
  TrainerReport merged = MergeReports(chief, evaluator);
  CHECK(merged.global_step == 2000);  // not the evaluator's checkpoint step
  CHECK(merged.eval_accuracy == 0.8);
  CHECK(merged.final_metrics.at("accuracy") == 0.9);
  chief.eval_accuracy = 0.85;  // evaluating on the chief
  chief.final_metrics = {{"accuracy", 0.95}};
  merged = MergeReports(chief, evaluator);
  CHECK(merged.eval_accuracy == 0.85);
  CHECK(merged.final_metrics.at("accuracy") == 0.95);
  // The chief did not answer: no step from the evaluator either.
  merged = MergeReports(std::nullopt, evaluator);
  CHECK_FALSE(merged.global_step.has_value());
  CHECK(merged.eval_accuracy == 0.8);
  CHECK(MergeReports(std::nullopt, std::nullopt) == TrainerReport{});
}

TEST_CASE("progress: the job's rate is the chief's and every other training replica's added") {
  const TrainerReport chief = Report("taas_global_step 2000\ntaas_examples_per_second 722\n");
  const std::vector<TrainerReport> workers = {Report("taas_examples_per_second 150.5\n"),
                                              Report("taas_global_step 1999\n"),  // no rate yet
                                              Report("taas_examples_per_second 130.5\n")};
  // The job's 1003, not the chief's 722 (issue 37: the status said one worker's rate).
  TrainerReport merged = MergeReports(chief, std::nullopt, workers);
  REQUIRE(merged.examples_per_second);
  CHECK(*merged.examples_per_second == doctest::Approx(1003));
  CHECK(merged.global_step == 2000);  // the chief's, not a worker's
  // A chief that did not answer: the others' rates still add up.
  merged = MergeReports(std::nullopt, std::nullopt, workers);
  CHECK(*merged.examples_per_second == doctest::Approx(281));
  CHECK_FALSE(merged.global_step.has_value());
  CHECK(MergeReports(chief, std::nullopt).examples_per_second == 722);
}

TEST_CASE("progress: read from the chief's and the evaluator's headless services") {
  const json metrics_port = json::array({{{"name", "metrics"}, {"containerPort", 9100}}});
  tf::TFJob job = Job({{"PS", Spec(Container())},
                       {"Worker", Spec(Container(json::array(), metrics_port), 2)},
                       {"Evaluator", Spec(Container())}});
  // Worker 1 for its rate: the job's is every training replica's.
  CHECK(ProgressTargets(job, {}, {}) == ScrapeTargets{"j-worker-0.ns.svc:9100",
                                                      "j-evaluator-0.ns.svc:9090",
                                                      {"j-worker-1.ns.svc:9100"}});
  tf::ServiceAddressing domain;
  domain.cluster_domain = "cluster.local";
  CHECK(ProgressTargets(job, domain, {{"ns/j-evaluator-0", "127.0.0.1:4000"}}) ==
        ScrapeTargets{"j-worker-0.ns.svc.cluster.local:9100",
                      "127.0.0.1:4000",
                      {"j-worker-1.ns.svc.cluster.local:9100"}});

  job = Job({{"Chief", Spec(Container())}, {"Worker", Spec(Container(), 2)}});
  CHECK(ProgressTargets(job, {}, {}) ==
        ScrapeTargets{
            "j-chief-0.ns.svc:9090", "", {"j-worker-0.ns.svc:9090", "j-worker-1.ns.svc:9090"}});
  // At most kMaxRateTargets of a type are read.
  job = Job({{"Worker", Spec(Container(), 1000)}});
  CHECK(ProgressTargets(job, {}, {}).trainers.size() == kMaxRateTargets - 1);
  job = Job({{"Master", Spec(Container())}});
  CHECK(ProgressTargets(job, {}, {}).chief == "j-master-0.ns.svc:9090");
  job = Job({{"PS", Spec(Container())}, {"Worker", Spec(Container(), 0)}});
  CHECK(ProgressTargets(job, {}, {}) == ScrapeTargets{});
}

TEST_CASE("progress: max steps from the chief's TF_MAX_STEPS until the trainer says") {
  const auto env = [](json value) {
    return json::array(
        {{{"name", "OTHER"}, {"value", "1"}}, {{"name", "TF_MAX_STEPS"}, {"value", value}}});
  };
  CHECK(MaxStepsFromSpec(Job({{"Worker", Spec(Container(env("6000")))}}).spec) == 6000);
  // The chief's, not another type's.
  CHECK(MaxStepsFromSpec(
            Job({{"Chief", Spec(Container(env("100")))}, {"Worker", Spec(Container(env("200")))}})
                .spec) == 100);
  for (json bad : {json("6k"), json(""), json("-1"), json("0"), json(6000),
                   json("99999999999999999999"), json(nullptr)}) {
    CAPTURE(bad.dump());
    CHECK_FALSE(MaxStepsFromSpec(Job({{"Worker", Spec(Container(env(bad)))}}).spec).has_value());
  }
  json from = json::array({{{"name", "TF_MAX_STEPS"}, {"valueFrom", {{"configMapKeyRef", {}}}}}});
  CHECK_FALSE(MaxStepsFromSpec(Job({{"Worker", Spec(Container(from))}}).spec).has_value());
  CHECK_FALSE(MaxStepsFromSpec(Job({{"Worker", Spec(Container())}}).spec).has_value());
}

TEST_CASE("progress: percent and ETA from successive reports") {
  ProgressEstimator estimator;
  TrainerReport r = Report("taas_global_step 1000\ntaas_loss 0.9\ntaas_examples_per_second 500\n");
  tf::JobProgress p = estimator.Add(r, 6000, kT0, kNow);
  CHECK(p.global_step == 1000);
  CHECK(p.max_steps == 6000);  // the spec's, until the trainer reports its own
  CHECK(tf::ProgressPercent(p) == 16);
  CHECK_FALSE(p.eta_seconds.has_value());  // one report: no rate yet
  CHECK(p.metrics == std::map<std::string, double>{{"loss", 0.9}});
  CHECK(p.update_time == kNow);

  r = Report("taas_global_step 1600\ntaas_max_steps 4000\ntaas_eval_accuracy 0.7\n");
  p = estimator.Add(r, 6000, kT0 + std::chrono::seconds(30), kNow + std::chrono::seconds(30));
  CHECK(p.max_steps == 4000);  // the trainer's word wins
  CHECK(tf::ProgressPercent(p) == 40);
  CHECK(p.eta_seconds == 120);          // 20 steps/s, 2400 left
  CHECK(p.examples_per_second == 500);  // kept from before
  CHECK(p.metrics == std::map<std::string, double>{{"loss", 0.9}, {"accuracy", 0.7}});
  CHECK_FALSE(estimator.Finishing());

  r = Report("taas_global_step 4000\n");
  p = estimator.Add(r, 6000, kT0 + std::chrono::seconds(60), kNow + std::chrono::seconds(60));
  CHECK(tf::ProgressPercent(p) == 100);
  CHECK_FALSE(p.eta_seconds.has_value());
  CHECK(estimator.Finishing());  // training done, the final metrics not read yet

  r = Report("taas_final_metric{metric=\"accuracy\"} 0.91\n");
  p = estimator.Add(r, 6000, kT0 + std::chrono::seconds(62), kNow + std::chrono::seconds(62));
  CHECK(p.final_metrics.at("accuracy") == 0.91);
  CHECK_FALSE(estimator.Finishing());
}

TEST_CASE("progress: a stalled job's status.progress says whom it waits for, not its last rate") {
  ProgressEstimator estimator;
  const TrainerReport running =
      Report("taas_global_step 1000\ntaas_examples_per_second 500\ntaas_stall_seconds_total 0\n");
  tf::JobProgress p = estimator.Add(running, 6000, kT0, kNow);
  p = estimator.Add(Report("taas_global_step 1600\ntaas_examples_per_second 500\n"), 6000,
                    kT0 + std::chrono::seconds(30), kNow + std::chrono::seconds(30));
  REQUIRE(p.eta_seconds);
  CHECK(!p.stall);

  // The chief reads well; a worker waits on the frozen PS: the job's stall is the longest.
  const TrainerReport chief = Report(
      "taas_global_step 1600\ntaas_examples_per_second 500\n"
      "taas_stall_seconds{peer=\"ps-0\"} 9.5\ntaas_stalled_seconds_total 9.5\n");
  const TrainerReport worker =
      Report("taas_examples_per_second 480\ntaas_stall_seconds{peer=\"ps-0\"} 12.2\n");
  CHECK(chief.stall == tf::ProgressStall{9, "ps-0"});
  const TrainerReport merged = MergeReports(chief, std::nullopt, {worker});
  CHECK(merged.stall == tf::ProgressStall{12, "ps-0"});
  p = estimator.Add(merged, 6000, kT0 + std::chrono::seconds(40), kNow + std::chrono::seconds(40));
  CHECK(p.stall == tf::ProgressStall{12, "ps-0"});
  CHECK(!p.examples_per_second);
  CHECK(!p.eta_seconds);
  CHECK(tf::ProgressToJson(p)["stall"]["message"] == "stalled 12s, waiting on ps-0");

  // The PS resumed: the stall is gone, the rate and the ETA are back.
  p = estimator.Add(Report("taas_global_step 2200\ntaas_examples_per_second 490\n"), 6000,
                    kT0 + std::chrono::seconds(70), kNow + std::chrono::seconds(70));
  CHECK(!p.stall);
  CHECK(p.examples_per_second == 490);
  CHECK(p.eta_seconds);
  // A finished job is stalled no more, whatever its last read said.
  tf::JobProgress stalled = p;
  stalled.stall = tf::ProgressStall{12, "ps-0"};
  CHECK(!FinishedProgress(stalled, tf::JobStatus{}).stall);
  CHECK(!WithJobReport(stalled, job_report::JobReport{}, kNow).stall);
}

TEST_CASE("progress: read again each interval, about when training ends, often at its end") {
  const auto interval = std::chrono::seconds(30);
  tf::JobProgress p;
  CHECK(ReadAgainIn(std::nullopt, false, interval) == interval);
  CHECK(ReadAgainIn(p, false, interval) == interval);  // no ETA
  p.eta_seconds = 300;
  CHECK(ReadAgainIn(p, false, interval) == interval);
  p.eta_seconds = 12;  // ends before the next read would come: read then
  CHECK(ReadAgainIn(p, false, interval) == std::chrono::seconds(12));
  p.eta_seconds = 0;
  CHECK(ReadAgainIn(p, false, interval) == kFinishingScrapeInterval);
  CHECK(ReadAgainIn(p, true, interval) == kFinishingScrapeInterval);  // waiting for the end
  CHECK(ReadAgainIn(p, true, std::chrono::seconds(1)) == std::chrono::seconds(1));
}

tf::JobProgress At(std::int64_t step, double loss = 0.5) {
  tf::JobProgress p;
  p.global_step = step;
  p.max_steps = 6000;
  p.metrics = {{"loss", loss}};
  p.update_time = kNow;
  return p;
}

TEST_CASE("progress: written at most once an interval, and only when it changed") {
  const auto interval = std::chrono::seconds(30);
  const auto t = [](int s) { return kT0 + std::chrono::seconds(s); };
  // Never written (or not since the operator started): at once.
  CHECK(ProgressWriteDue(std::nullopt, At(10), std::nullopt, t(0), interval));
  CHECK(ProgressWriteDue(At(5), At(10), std::nullopt, t(0), interval));
  // Within the interval: not even a big change.
  CHECK_FALSE(ProgressWriteDue(At(10), At(3000), t(0), t(29), interval));
  CHECK(ProgressWriteDue(At(10), At(3000), t(0), t(30), interval));
  // Unchanged (a stalled job; only the read time differs): never.
  tf::JobProgress later = At(10);
  later.update_time = kNow + std::chrono::seconds(300);
  CHECK_FALSE(ProgressWriteDue(At(10), later, t(0), t(300), interval));
  // The final metrics: at once, once.
  tf::JobProgress final_metrics = At(6000);
  final_metrics.final_metrics = {{"accuracy", 0.9}};
  CHECK(ProgressWriteDue(At(5990), final_metrics, t(0), t(1), interval));
  CHECK_FALSE(ProgressWriteDue(final_metrics, final_metrics, t(1), t(2), interval));
}

tf::JobStatus WithCondition(tf::ConditionType type) {
  tf::JobStatus status;
  tf::SetCondition(status, type, tf::ConditionStatus::kTrue, "Reason", "", kNow);
  return status;
}

// `status` with condition `type` True.
tf::JobStatus With(tf::JobStatus status, tf::ConditionType type) {
  tf::SetCondition(status, type, tf::ConditionStatus::kTrue, "R", "", kNow);
  return status;
}

// The last read of a job about to end: 10 steps short, 3 s left, `accuracy` its final metric.
tf::JobProgress Finishing(double accuracy) {
  tf::JobProgress last = At(5990);
  last.eta_seconds = 3;
  last.final_metrics = {{"accuracy", accuracy}};
  return last;
}

Decision Decided(const tf::JobStatus& after, bool write_status) {
  Decision d;
  d.update.status = after;
  d.write_status = write_status;
  return d;
}

TEST_CASE("progress: rides with the decided status") {
  tf::JobStatus running = WithCondition(tf::ConditionType::kRunning);
  running.progress = At(10);

  SUBCASE("a due progress makes a write of its own") {
    Decision d = Decided(running, false);
    DecideProgress(running, At(500), true, std::nullopt, d);
    CHECK(d.write_status);
    CHECK(d.update.status.progress == At(500));
  }
  SUBCASE("one not due waits, unless the status is written anyway") {
    Decision d = Decided(running, false);
    DecideProgress(running, At(500), false, std::nullopt, d);
    CHECK_FALSE(d.write_status);
    CHECK(d.update.status.progress == At(10));
    d = Decided(running, true);
    DecideProgress(running, At(500), false, std::nullopt, d);
    CHECK(d.update.status.progress == At(500));
  }
  SUBCASE("no read yet: the status keeps what it has") {
    Decision d = Decided(running, false);
    DecideProgress(running, std::nullopt, false, std::nullopt, d);
    CHECK_FALSE(d.write_status);
    CHECK(d.update.status.progress == At(10));
  }
  SUBCASE("the write that finishes the job carries its final progress") {
    const tf::JobProgress last = Finishing(0.9);
    Decision d = Decided(With(running, tf::ConditionType::kSucceeded), true);
    DecideProgress(running, last, false, std::nullopt, d);
    REQUIRE(d.update.status.progress.has_value());
    CHECK(d.update.status.progress->global_step == 6000);  // the chief stops at max steps
    CHECK_FALSE(d.update.status.progress->eta_seconds.has_value());
    CHECK(d.update.status.progress->final_metrics.at("accuracy") == 0.9);

    d = Decided(With(running, tf::ConditionType::kFailed), true);
    DecideProgress(running, last, false, std::nullopt, d);
    CHECK(d.update.status.progress->global_step == 5990);  // what it reached
    CHECK_FALSE(d.update.status.progress->eta_seconds.has_value());
  }
  SUBCASE("a job that never reported has no progress, finished or not") {
    tf::JobStatus before = WithCondition(tf::ConditionType::kRunning);
    tf::JobStatus succeeded = before;
    tf::SetCondition(succeeded, tf::ConditionType::kSucceeded, tf::ConditionStatus::kTrue, "R", "",
                     kNow);
    Decision d = Decided(succeeded, true);
    DecideProgress(before, std::nullopt, false, std::nullopt, d);
    CHECK_FALSE(d.update.status.progress.has_value());
  }
  SUBCASE("a finished job is never written for its progress again") {
    tf::JobStatus done = running;
    tf::SetCondition(done, tf::ConditionType::kSucceeded, tf::ConditionStatus::kTrue, "R", "",
                     kNow);
    Decision d = Decided(done, false);
    DecideProgress(done, At(6000, 0.1), true, std::nullopt, d);
    CHECK_FALSE(d.write_status);
    CHECK(d.update.status.progress == At(10));
  }
  SUBCASE("the chief's result goes out with the write that finishes the job, over what was read") {
    const ReportedResult result{{5995, {{"accuracy", 0.9}}}, kNow + std::chrono::seconds(7)};
    Decision d = Decided(With(running, tf::ConditionType::kSucceeded), true);
    DecideProgress(running, Finishing(0.5), false, result, d);
    REQUIRE(d.update.status.progress.has_value());
    CHECK(d.update.status.progress->global_step == 5995);  // the chief's word, not max steps
    CHECK(d.update.status.progress->final_metrics ==
          std::map<std::string, double>{{"accuracy", 0.9}});
    CHECK(d.update.status.progress->metrics.at("loss") == 0.5);  // the rest stays
    CHECK(d.update.status.progress->update_time == result.at);
    CHECK_FALSE(d.update.status.progress->eta_seconds.has_value());

    // Never read (progress reading off): the result alone.
    const tf::JobStatus unread = WithCondition(tf::ConditionType::kRunning);
    d = Decided(With(unread, tf::ConditionType::kSucceeded), true);
    DecideProgress(unread, std::nullopt, false, result, d);
    REQUIRE(d.update.status.progress.has_value());
    CHECK(d.update.status.progress->global_step == 5995);
    CHECK(d.update.status.progress->final_metrics.at("accuracy") == 0.9);
    CHECK_FALSE(d.update.status.progress->max_steps.has_value());
  }
  SUBCASE("a running job whose chief left its result (waiting for the evaluator) writes it") {
    const ReportedResult result{{6000, {{"accuracy", 0.9}}}, kNow};
    Decision d = Decided(running, false);
    DecideProgress(running, At(5990), false, result, d);  // not due: over the status's progress
    CHECK(d.write_status);
    REQUIRE(d.update.status.progress.has_value());
    CHECK(d.update.status.progress->global_step == 6000);
    CHECK(d.update.status.progress->final_metrics.at("accuracy") == 0.9);

    // Written once: the next decision finds nothing new.
    tf::JobStatus written = running;
    written.progress = d.update.status.progress;
    d = Decided(written, false);
    DecideProgress(written, At(5990), true, result, d);
    CHECK_FALSE(d.write_status);
  }
  SUBCASE("a finished job takes no result") {
    const tf::JobStatus done = With(running, tf::ConditionType::kSucceeded);
    Decision d = Decided(done, false);
    DecideProgress(done, std::nullopt, false, ReportedResult{{1, {{"accuracy", 1.0}}}, kNow}, d);
    CHECK_FALSE(d.write_status);
    CHECK(d.update.status.progress == At(10));
  }
  SUBCASE("a suspended job loses its ETA with the write that suspends it") {
    tf::JobStatus suspended = running;
    suspended.progress->eta_seconds = 40;
    tf::SetCondition(suspended, tf::ConditionType::kSuspended, tf::ConditionStatus::kTrue, "R", "",
                     kNow);
    Decision d = Decided(suspended, true);
    DecideProgress(running, std::nullopt, false, std::nullopt, d);
    CHECK_FALSE(d.update.status.progress->eta_seconds.has_value());
  }
}

TEST_CASE("progress: the chief's report over what was read") {
  tf::JobProgress read = At(5990);
  read.eta_seconds = 4;
  read.final_metrics = {{"accuracy", 0.5}, {"auc", 0.7}};
  job_report::JobReport report{6000, {{"accuracy", 0.9}, {"loss", 0.2}}};
  const tf::Time at = kNow + std::chrono::seconds(9);
  tf::JobProgress p = WithJobReport(read, report, at);
  CHECK(p.global_step == 6000);
  CHECK(p.max_steps == 6000);
  CHECK(p.final_metrics == std::map<std::string, double>{{"accuracy", 0.9}, {"loss", 0.2}});
  CHECK(p.metrics == read.metrics);
  CHECK_FALSE(p.eta_seconds.has_value());
  CHECK(p.update_time == at);

  // A report without final metrics keeps the ones read; names a progress may not hold are
  // dropped (a report allows '/', and a digit first); a step beyond 2^53 is not taken.
  p = WithJobReport(read, {6000, {}}, at);
  CHECK(p.final_metrics == read.final_metrics);
  p = WithJobReport(read, {std::int64_t{1} << 60, {{"eval/accuracy", 0.8}, {"1st", 0.1}}}, at);
  CHECK(p.final_metrics == read.final_metrics);
  CHECK(p.global_step == 5990);
  p = WithJobReport(tf::JobProgress{}, {7, {{"eval/accuracy", 0.8}, {"top_5", 0.95}}}, at);
  CHECK(p.global_step == 7);
  CHECK(p.final_metrics == std::map<std::string, double>{{"top_5", 0.95}});
}

TEST_CASE("progress: a chief whose final evaluation failed: the status names the error") {
  const tf::Time at = kNow + std::chrono::seconds(9);
  tf::JobProgress p = WithJobReport(At(300), {300, {}, "evaluate() failed: no test set"}, at);
  CHECK(p.final_error == "evaluate() failed: no test set");
  CHECK(p.final_metrics.empty());
  // A restarted chief that then succeeded clears it.
  p = WithJobReport(p, {300, {{"accuracy", 0.9}}}, at);
  CHECK(p.final_error.empty());
  // Cut to what a progress holds, never inside a character.
  const std::string long_error = std::string(tf::kMaxProgressErrorBytes - 1, 'x') + "\xc3\xa9";
  p = WithJobReport(At(300), {300, {}, long_error}, at);
  CHECK(p.final_error == std::string(tf::kMaxProgressErrorBytes - 1, 'x'));
}

}  // namespace
}  // namespace taas::controller
