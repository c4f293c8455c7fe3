#include "job_result.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("taas-result-test-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

TEST_CASE("a replica's termination message lives beside its log in the model dir") {
  CHECK(ReplicaFilesDir("/m/run") == "/m/run/logs");
  CHECK(TerminationMessagePath("/m/run/logs", "mnist-worker-0") ==
        "/m/run/logs/mnist-worker-0.termination-log");
}

TEST_CASE("the chief's report is read from its file") {
  TempDir tmp;
  const std::string path =
      tmp.Write("chief", R"({"finalMetrics":{"accuracy":0.9087,"loss":0.2571},"globalStep":6000})");
  auto report = ReadJobReport(path);
  REQUIRE(report.ok());
  CHECK(report->global_step == 6000);
  CHECK(report->final_metrics.at("accuracy") == doctest::Approx(0.9087));
  CHECK(DescribeReport(*report) == "at step 6000: final accuracy 0.9087, loss 0.2571");
}

TEST_CASE("the job's result: the chief's report, else the evaluator's score of the end") {
  TempDir tmp;
  const std::string dir = tmp.path.string();
  tmp.Write("j-worker-0.termination-log", R"({"globalStep":300,"finalMetrics":{}})");
  SUBCASE("no evaluator: the chief's, without metrics") {
    auto result = ReadJobResult(dir, "j-worker-0", "");
    REQUIRE(result.ok());
    CHECK(result->final_metrics.empty());
  }
  SUBCASE("the evaluator scored the final checkpoint") {
    tmp.Write("j-evaluator-0.termination-log",
              R"({"globalStep":300,"finalMetrics":{"accuracy":0.8315}})");
    auto result = ReadJobResult(dir, "j-worker-0", "j-evaluator-0");
    REQUIRE(result.ok());
    CHECK(DescribeReport(*result) == "at step 300: final accuracy 0.8315");
  }
  SUBCASE("an evaluator's unreadable report counts as none") {
    tmp.Write("j-evaluator-0.termination-log", "garbage");
    auto result = ReadJobResult(dir, "j-worker-0", "j-evaluator-0");
    REQUIRE(result.ok());
    CHECK(result->global_step == 300);
  }
  SUBCASE("without the chief's, the evaluator's; without either, the chief's error") {
    tmp.Write("j-evaluator-0.termination-log",
              R"({"globalStep":300,"finalMetrics":{"accuracy":0.8315}})");
    CHECK(ReadJobResult(dir, "j-chief-0", "j-evaluator-0").ok());
    const auto none = ReadJobResult(dir, "j-chief-0", "");
    CHECK(none.status().code() == absl::StatusCode::kNotFound);
    CHECK(absl::StrContains(none.status().message(), "j-chief-0.termination-log"));
  }
  SUBCASE("only the evaluator ran a trainer and left no report: its error, not NotFound") {
    tmp.Write("j-evaluator-0.termination-log", "");
    const auto result = ReadJobResult(dir, "j-chief-0", "j-evaluator-0");
    CHECK(result.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(result.status().message(), "j-evaluator-0.termination-log"));
  }
}

TEST_CASE("a missing, bad or hostile report is an error naming the file, never a wait") {
  TempDir tmp;
  SUBCASE("none") {
    const auto missing = ReadJobReport((tmp.path / "none").string());
    CHECK(missing.status().code() == absl::StatusCode::kNotFound);
    CHECK(missing.status().message().find((tmp.path / "none").string()) != std::string::npos);
  }
  SUBCASE("not JSON, or the wrong types") {
    for (const char* text : {"garbage", "[]", R"({"globalStep":"6000","finalMetrics":{}})",
                             R"({"globalStep":1,"finalMetrics":{"a":"x"}})"}) {
      CAPTURE(text);
      const std::string path = tmp.Write("bad", text);
      const auto bad = ReadJobReport(path);
      CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK(bad.status().message().rfind(path + ": job report: ", 0) == 0);
    }
  }
  SUBCASE("empty: a trainer started (its runtime creates the file) and left no report") {
    const std::string path = tmp.Write("empty", "");
    const auto empty = ReadJobReport(path);
    CHECK(empty.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(empty.status().message() ==
          "no report in " + path + ": its trainer started but left none");
  }
  SUBCASE("too large: refused after reading one byte more than a report may hold") {
    const std::string path = tmp.Write("big", std::string(10 << 20, ' '));
    const auto big = ReadJobReport(path);
    CHECK(big.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(big.status().message().find("2049 bytes, more than the 2048") != std::string::npos);
  }
  SUBCASE("a FIFO in its place is refused without blocking; so is a folder") {
    const fs::path fifo = tmp.path / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK(ReadJobReport(fifo.string()).status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(ReadJobReport(tmp.path.string()).status().code() ==
          absl::StatusCode::kFailedPrecondition);
  }
}

TEST_CASE("the console's words for a report") {
  job_report::JobReport report;
  report.global_step = 300;
  CHECK(DescribeReport(report) ==
        "at step 300; its model reported no final metrics (Session::ReportFinalMetrics)");
  report.final_metrics = {{"accuracy", 1}, {"mse", 0.0000123}, {"zero", 0}, {"big", 12345.678}};
  CHECK(DescribeReport(report) ==
        "at step 300: final accuracy 1.0000, big 12345.6780, mse 1.23e-05, zero 0.0000");
  // A chief whose evaluation failed: its error, not "no final metrics".
  report.final_metrics.clear();
  report.error = "evaluate() failed: no test set in /data";
  CHECK(DescribeReport(report) == "at step 300: evaluate() failed: no test set in /data");
}

}  // namespace
}  // namespace taas::launcher
