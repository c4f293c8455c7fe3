#include "taas/job_report/job_report.h"

#include <doctest/doctest.h>

#include <string>

namespace taas::job_report {
namespace {

TEST_CASE("a report survives its text, and the text is what the docs show") {
  const JobReport report{6000, {{"accuracy", 0.9087}, {"loss", 0.25}}};
  const std::string text = Format(report);
  CHECK(text == R"({"finalMetrics":{"accuracy":0.9087,"loss":0.25},"globalStep":6000})");
  auto parsed = Parse(text);
  REQUIRE(parsed.ok());
  CHECK(*parsed == report);
  CHECK(Parse(R"({"globalStep":0,"finalMetrics":{},"newer":[1]})")->global_step == 0);
}

TEST_CASE("a failed evaluation's report holds its error, cut to what a report may hold") {
  JobReport failed{300, {}, "evaluate() failed: no test set in /data"};
  const std::string text = Format(failed);
  CHECK(
      text ==
      R"({"error":"evaluate() failed: no test set in /data","finalMetrics":{},"globalStep":300})");
  CHECK(*Parse(text) == failed);
  // The longest error, all quotes (escaped to two bytes each), still parses.
  failed.error = std::string(5000, '"');
  auto cut = Parse(Format(failed));
  REQUIRE(cut.ok());
  CHECK(cut->error == std::string(kMaxError, '"'));
  // Bytes that are not UTF-8 (a path, a cut sequence) are replaced, never thrown over.
  failed.error = "bad \xff byte";
  CHECK(Parse(Format(failed))->error == "bad \xEF\xBF\xBD byte");
  CHECK(Parse(R"({"globalStep":1,"finalMetrics":{},"error":7})").status().message() ==
        "job report: error must be a string, got integer");
}

TEST_CASE("a hostile report is refused, naming what is wrong") {
  const auto message = [](std::string_view text) {
    return std::string(Parse(text).status().message());
  };
  CHECK(message("") == "job report: not a JSON object");
  CHECK(message("[1, 2]") == "job report: not a JSON object");
  CHECK(message(std::string(3000, ' ')) ==
        "job report: 3000 bytes, more than the 2048 a report may hold");
  CHECK(message(R"({"globalStep":-1,"finalMetrics":{}})") ==
        "job report: globalStep must be an integer >= 0, got integer");
  CHECK(message(R"({"globalStep":"7","finalMetrics":{}})") ==
        "job report: globalStep must be an integer >= 0, got string");
  CHECK(message(R"({"globalStep":1,"finalMetrics":[]})") ==
        "job report: finalMetrics must be an object of at most 16 numbers");
  CHECK(message(R"({"globalStep":1,"finalMetrics":{"accuracy":"high"}})") ==
        "job report: final metric accuracy must be a number, got string");
  CHECK(message(R"({"globalStep":1,"finalMetrics":{"a b":1}})").find("final metric name") !=
        std::string::npos);
  std::string many = R"({"globalStep":1,"finalMetrics":{)";
  for (int i = 0; i < 17; ++i)
    many += (i ? "," : "") + std::string("\"m") + std::to_string(i) + "\":1";
  CHECK(message(many + "}}") == "job report: finalMetrics must be an object of at most 16 numbers");
}

TEST_CASE("a metric's name and value are checked before it is written") {
  CHECK(CheckMetric("eval/accuracy", 0.5).ok());
  CHECK(CheckMetric("", 1).code() == absl::StatusCode::kInvalidArgument);
  CHECK(CheckMetric(std::string(65, 'a'), 1).code() == absl::StatusCode::kInvalidArgument);
  CHECK(CheckMetric("loss", std::nan("")).message() ==
        "final metric loss: must be a finite number, got nan");
}

TEST_CASE("the job's result: the chief's final metrics, else the evaluator's score of the end") {
  const JobReport chief_with{6000, {{"accuracy", 0.9087}}};
  const JobReport chief_without{6000, {}};
  const JobReport evaluator_at_end{6000, {{"accuracy", 0.9046}, {"loss", 0.27}}};
  const JobReport evaluator_behind{5003, {{"accuracy", 0.9001}}};
  CHECK(JobResult(chief_with, evaluator_at_end) == chief_with);
  // A chief whose final evaluation failed: its error is the job's result, not the evaluator's
  // score.
  const JobReport chief_failed{6000, {}, "evaluate() failed: no test set"};
  CHECK(JobResult(chief_failed, evaluator_at_end) == chief_failed);
  CHECK(JobResult(chief_without, evaluator_at_end) == evaluator_at_end);
  CHECK(JobResult(chief_without, evaluator_behind) == chief_without);
  CHECK(JobResult(std::nullopt, evaluator_behind) == evaluator_behind);
  CHECK(JobResult(chief_without, JobReport{6000, {}}) == chief_without);
  CHECK(JobResult(chief_with, std::nullopt) == chief_with);
  CHECK_FALSE(JobResult(std::nullopt, std::nullopt).has_value());
}

}  // namespace
}  // namespace taas::job_report
