#include "taas/tfjob/progress.h"

#include <doctest/doctest.h>

#include <limits>

#include "taas/tfjob/serialization.h"
#include "taas/tfjob/status.h"
#include "test_support.h"

namespace taas::tfjob {
namespace {

using nlohmann::json;
using testing::At;
using Clock = StepRate::Clock;

JobProgress Running() {
  JobProgress p;
  p.global_step = 2520;
  p.max_steps = 6000;
  p.examples_per_second = 3310.5;
  p.eta_seconds = 65;
  p.metrics = {{"loss", 0.412}, {"accuracy", 0.884}};
  p.update_time = At(60);
  return p;
}

TEST_CASE("progress: percent is the step of max steps, rounded down and held to 0-100") {
  JobProgress p = Running();
  CHECK(ProgressPercent(p) == 42);
  p.global_step = 5999;
  CHECK(ProgressPercent(p) == 99);  // not 100 before the last step
  p.global_step = 9000;             // a job resumed with a lower TF_MAX_STEPS
  CHECK(ProgressPercent(p) == 100);
  p.max_steps = 0;
  CHECK_FALSE(ProgressPercent(p).has_value());
  p.max_steps.reset();
  CHECK_FALSE(ProgressPercent(p).has_value());
  p = Running();
  p.global_step = std::numeric_limits<std::int64_t>::max();  // never overflows
  CHECK_FALSE(ProgressPercent(p).has_value());
}

TEST_CASE("progress: the accuracy column shows the final accuracy once known, else the latest") {
  JobProgress p = Running();
  CHECK(ProgressAccuracy(p) == doctest::Approx(0.884));
  p.final_metrics = {{"accuracy", 0.9087}};
  CHECK(ProgressAccuracy(p) == doctest::Approx(0.9087));
  p.metrics.clear();
  p.final_metrics = {{"loss", 0.3}};
  CHECK_FALSE(ProgressAccuracy(p).has_value());
}

TEST_CASE("progress: the ETA as a person reads it") {
  CHECK(FormatEta(std::chrono::seconds(0)) == "0s");
  CHECK(FormatEta(std::chrono::seconds(-5)) == "0s");
  CHECK(FormatEta(std::chrono::seconds(42)) == "42s");
  CHECK(FormatEta(std::chrono::seconds(185)) == "3m05s");
  CHECK(FormatEta(std::chrono::seconds(3720)) == "1h02m");
  CHECK(FormatEta(std::chrono::seconds(3 * 86400 + 4 * 3600 + 59)) == "3d04h");
}

TEST_CASE("progress: the ETA comes from the step rate") {
  CHECK(EtaSeconds(2520, 6000, 40.0) == 87);  // 3480 / 40 = 87
  CHECK(EtaSeconds(2520, 6000, 7.0) == 498);  // 497.1: rounded up
  CHECK_FALSE(EtaSeconds(2520, 6000, std::nullopt).has_value());
  CHECK_FALSE(EtaSeconds(2520, 6000, 0.0).has_value());
  CHECK_FALSE(EtaSeconds(2520, 6000, std::numeric_limits<double>::quiet_NaN()).has_value());
  CHECK_FALSE(EtaSeconds(6000, 6000, 40.0).has_value());               // done
  CHECK(EtaSeconds(0, kMaxProgressStep, 1e-300) == kMaxProgressStep);  // held to a bound
  CHECK_FALSE(EtaSeconds(-1, 6000, 40.0).has_value());
}

TEST_CASE("progress: the step rate spans its window and starts over on a lower step") {
  StepRate rate(std::chrono::seconds(60));
  const Clock::time_point t0{};
  CHECK_FALSE(rate.PerSecond().has_value());
  rate.Add(t0, 100);
  CHECK_FALSE(rate.PerSecond().has_value());  // one sample
  rate.Add(t0 + std::chrono::seconds(30), 400);
  CHECK(*rate.PerSecond() == doctest::Approx(10));
  rate.Add(t0 + std::chrono::seconds(60), 1000);
  CHECK(*rate.PerSecond() == doctest::Approx(15));  // (1000 - 100) / 60
  // The pace changes: after the window, only the last minute (and one sample before) counts.
  rate.Add(t0 + std::chrono::seconds(90), 1300);
  rate.Add(t0 + std::chrono::seconds(120), 1600);
  CHECK(*rate.PerSecond() == doctest::Approx(10));  // (1600 - 1000) / 60
  rate.Add(t0 + std::chrono::seconds(150), 200);    // restored from an older checkpoint
  CHECK_FALSE(rate.PerSecond().has_value());
  rate.Add(t0 + std::chrono::seconds(160), 200);  // no progress: no rate
  CHECK_FALSE(rate.PerSecond().has_value());
}

TEST_CASE("progress: a change is anything but the time it was read") {
  const JobProgress p = Running();
  JobProgress later = p;
  later.update_time = At(90);
  CHECK_FALSE(ProgressChanged(p, later));
  later.eta_seconds = 60;
  CHECK(ProgressChanged(p, later));
  CHECK(ProgressChanged(std::nullopt, p));
  CHECK(ProgressChanged(p, std::nullopt));
  CHECK_FALSE(ProgressChanged(std::nullopt, std::nullopt));
  JobProgress finished = p;
  finished.final_metrics = {{"accuracy", 0.9}};
  CHECK(ProgressChanged(p, finished));
}

TEST_CASE("progress: JSON with the derived percent, eta and accuracy, and back") {
  JobProgress p = Running();
  p.final_metrics = {{"accuracy", 0.9087}};
  const json j = ProgressToJson(p);
  CHECK(j == json::parse(R"({"globalStep": 2520, "maxSteps": 6000, "percent": 42,
      "examplesPerSecond": 3310.5, "etaSeconds": 65, "eta": "1m05s",
      "metrics": {"accuracy": 0.884, "loss": 0.412}, "finalMetrics": {"accuracy": 0.9087},
      "accuracy": 0.9087, "lastUpdateTime": "2026-01-01T00:01:00Z"})"));
  CHECK(ProgressFromJson(j) == p);
  CHECK(ProgressToJson(JobProgress{}) == json::object());
  CHECK(ProgressFromJson(json::object()) == JobProgress{});
  CHECK_FALSE(ProgressFromJson(json::array()).has_value());
  CHECK_FALSE(ProgressFromJson("42%").has_value());
}

TEST_CASE("progress: a failed final evaluation is a finalError, bounded and a change") {
  JobProgress failed = Running();
  failed.final_error = "evaluate() failed: no test set in /data";
  const json j = ProgressToJson(failed);
  CHECK(j["finalError"] == "evaluate() failed: no test set in /data");
  CHECK(ProgressFromJson(j) == failed);
  CHECK(ProgressChanged(Running(), failed));
  // Cut to kMaxProgressErrorBytes, never inside a character ("é" is two bytes).
  std::string long_error(kMaxProgressErrorBytes - 1, 'x');
  long_error += "\u00e9 and more";
  const auto read = ProgressFromJson({{"finalError", json::parse("\"" + long_error + "\"")}});
  CHECK(read->final_error == std::string(kMaxProgressErrorBytes - 1, 'x'));
  CHECK(ProgressFromJson({{"finalError", 7}})->final_error.empty());
}

TEST_CASE("progress: a hostile status.progress loses the fields it got wrong, nothing else") {
  json bad = ProgressToJson(Running());
  bad["globalStep"] = "2520";                // a string
  bad["maxSteps"] = -1;                      // out of range
  bad["etaSeconds"] = 1e300;                 // out of range
  bad["examplesPerSecond"] = json::array();  // an array
  bad["lastUpdateTime"] = "yesterday";       // not RFC 3339
  bad["metrics"] = {{"loss", "low"}, {"accuracy", 0.5}, {"", 1}, {"9lives", 1}, {"a b", 1}};
  bad["finalMetrics"] = 7;
  bad["percent"] = 1000;  // derived: never read
  const auto read = ProgressFromJson(bad);
  REQUIRE(read.has_value());
  CHECK_FALSE(read->global_step.has_value());
  CHECK_FALSE(read->max_steps.has_value());
  CHECK_FALSE(read->eta_seconds.has_value());
  CHECK_FALSE(read->examples_per_second.has_value());
  CHECK_FALSE(read->update_time.has_value());
  CHECK(read->metrics == std::map<std::string, double>{{"accuracy", 0.5}});
  CHECK(read->final_metrics.empty());

  json many = json::object();
  for (int i = 0; i < 40; ++i) many["m" + std::to_string(i)] = i;
  many[std::string(kMaxProgressMetricNameBytes + 1, 'x')] = 1;
  CHECK(ProgressFromJson({{"metrics", many}})->metrics.size() == kMaxProgressMetrics);
  CHECK(IsProgressMetricName(std::string(kMaxProgressMetricNameBytes, 'x')));
  CHECK(IsProgressMetricName("eval.top_5-accuracy"));
  CHECK_FALSE(IsProgressMetricName("x\n"));
}

TEST_CASE("progress: the status carries it, a change of it is a status change") {
  JobStatus status;
  status.progress = Running();
  const json j = StatusToJson(status);
  CHECK(j["progress"]["percent"] == 42);
  const auto read = StatusFromJson(j);
  REQUIRE(read.ok());
  CHECK(*read == status);

  JobStatus later = status;
  later.progress->update_time = At(120);
  CHECK_FALSE(StatusChanged(status, later));
  later.progress->global_step = 3000;
  CHECK(StatusChanged(status, later));

  // Garbage under status.progress never costs the rest of the status.
  json garbage = j;
  garbage["progress"] = "half done";
  garbage["conditions"] = json::array();
  const auto kept = StatusFromJson(garbage);
  REQUIRE(kept.ok());
  CHECK_FALSE(kept->progress.has_value());
}

TEST_CASE("progress: a replica's stall is the longest peer-labelled stall sample of its page") {
  using prometheus::ParsePrometheusSamples;
  CHECK(!ReplicaStall(ParsePrometheusSamples("taas_global_step 10\n")));
  // No sample while nothing stalls: the page declares the gauge and holds none.
  CHECK(!ReplicaStall(ParsePrometheusSamples("# TYPE taas_stall_seconds gauge\n")));
  const auto stall = ReplicaStall(ParsePrometheusSamples(
      "taas_stall_seconds{peer=\"ps-0\"} 12.7\ntaas_stall_seconds{peer=\"ps-1\"} 30.2\n"));
  REQUIRE(stall);
  CHECK(*stall == ProgressStall{30, "ps-1"});
  // A hostile page: no peer, a negative or endless value, an overlong peer (cut).
  CHECK(!ReplicaStall(ParsePrometheusSamples("taas_stall_seconds 12\n")));
  CHECK(!ReplicaStall(ParsePrometheusSamples("taas_stall_seconds{peer=\"\"} 12\n")));
  CHECK(!ReplicaStall(ParsePrometheusSamples("taas_stall_seconds{peer=\"ps-0\"} -1\n")));
  CHECK(!ReplicaStall(ParsePrometheusSamples("taas_stall_seconds{peer=\"ps-0\"} +Inf\n")));
  const auto cut = ReplicaStall(
      ParsePrometheusSamples("taas_stall_seconds{peer=\"" + std::string(500, 'p') + "\"} 9\n"));
  REQUIRE(cut);
  CHECK(cut->waiting_on.size() == kMaxProgressPeerBytes);
}

TEST_CASE("progress: a job's stall is its longest replica stall, said instead of the rate") {
  JobStall job;
  CHECK(!job.Longest());
  job.Add(std::nullopt);
  job.Add(ProgressStall{8, "ps-0"});
  job.Add(ProgressStall{12, "worker-1"});
  job.Add(ProgressStall{3, "ps-1"});
  REQUIRE(job.Longest());
  CHECK(*job.Longest() == ProgressStall{12, "worker-1"});
  CHECK(DescribeStall({12, "ps-0"}) == "stalled 12s, waiting on ps-0");
  CHECK(DescribeStall({75, "ps-0"}) == "stalled 1m15s, waiting on ps-0");

  JobProgress p = Running();
  ApplyStall(p, ProgressStall{12, "ps-0"});
  CHECK(p.stall == ProgressStall{12, "ps-0"});
  CHECK(!p.examples_per_second);  // the last rate is not the job's now
  CHECK(!p.eta_seconds);
  CHECK(p.global_step == 2520);
  JobProgress resumed = Running();
  resumed.stall = ProgressStall{12, "ps-0"};
  ApplyStall(resumed, std::nullopt);
  CHECK(!resumed.stall);
  CHECK(resumed.examples_per_second == 3310.5);
}

TEST_CASE("progress: a stall in JSON with its message, and back; a change of it is a change") {
  JobProgress p = Running();
  ApplyStall(p, ProgressStall{12, "ps-0"});
  const json j = ProgressToJson(p);
  CHECK(j["stall"] ==
        json{{"seconds", 12}, {"waitingOn", "ps-0"}, {"message", "stalled 12s, waiting on ps-0"}});
  CHECK(!j.contains("examplesPerSecond"));
  const auto back = ProgressFromJson(j);
  REQUIRE(back);
  CHECK(back->stall == p.stall);
  CHECK(ProgressChanged(Running(), p));
  JobProgress longer = p;
  longer.stall->seconds = 40;
  CHECK(ProgressChanged(p, longer));
  // Whoever may write the status may write anything there.
  json hostile = j;
  hostile["stall"] = {{"seconds", -3}, {"waitingOn", "ps-0"}};
  CHECK(!ProgressFromJson(hostile)->stall);
  hostile["stall"] = {{"seconds", 3}, {"waitingOn", 7}};
  CHECK(!ProgressFromJson(hostile)->stall);
  hostile["stall"] = "stalled";
  CHECK(!ProgressFromJson(hostile)->stall);
  CHECK(ProgressFromJson(hostile)->global_step == 2520);
}

TEST_CASE("progress: the job's examples per second is every training replica's rate added") {
  // Whose rates count: the replicas that train, not a parameter server or an evaluator.
  CHECK(TrainsExamples(ReplicaType::kChief));
  CHECK(TrainsExamples(ReplicaType::kMaster));
  CHECK(TrainsExamples(ReplicaType::kWorker));
  CHECK_FALSE(TrainsExamples(ReplicaType::kPS));
  CHECK_FALSE(TrainsExamples(ReplicaType::kEvaluator));

  JobExamplesRate rate;
  CHECK_FALSE(rate.PerSecond());
  rate.Add(std::nullopt);  // a replica without a rate yet
  CHECK_FALSE(rate.PerSecond());
  // The chief (722) and two more workers: the job's 1003, not the chief's 722.
  rate.Add(722);
  rate.Add(150.5);
  rate.Add(130.5);
  REQUIRE(rate.PerSecond());
  CHECK(*rate.PerSecond() == doctest::Approx(1003));
  // A hostile page's rate is no rate.
  rate.Add(-1);
  rate.Add(std::numeric_limits<double>::infinity());
  rate.Add(std::numeric_limits<double>::quiet_NaN());
  CHECK(*rate.PerSecond() == doctest::Approx(1003));
}

}  // namespace
}  // namespace taas::tfjob
