// evaluate() on the chief (TAAS_EVAL_ON_CHIEF) under both strategies: RunMain in this process,
// without TF_CONFIG (parameter servers: one in-process PS on loopback; collective: one worker).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>

#include "taas/contract/model_dir.h"
#include "taas/job_report/job_report.h"
#include "taas/runtime/dist_model.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

// One variable, loss (w - 3)^2; evaluate() records the steps it was called at.
struct Recorded {
  std::mutex mu;
  std::vector<std::int64_t> eval_steps;
  std::vector<float> eval_w;
  bool after_train_saw_eval = false;
  // What after_train reports as final metrics, beside the final evaluation's.
  std::map<std::string, double> reported;
};

// How evaluate() fails, if it does.
enum class EvalFailure { kNone, kReturnsError, kThrows };

struct Quadratic : DistModel {
  Recorded* recorded = nullptr;
  EvalFailure failure = EvalFailure::kNone;
  Variable w{"w", Tensor({1}), Tensor({1})};

  absl::Status build_model(ModelBuilder& builder) override {
    builder.AddVariable(&w);
    optim::OptimizerConfig sgd;
    sgd.learning_rate.initial = 0.1f;
    builder.SetOptimizer(sgd);
    return absl::OkStatus();
  }
  StepResult train(Session&) override {
    const float d = w.value.data()[0] - 3.0f;
    w.gradient.data()[0] = 2 * d;
    StepResult result;
    result.loss = d * d;
    return result;
  }
  absl::StatusOr<std::map<std::string, double>> evaluate(Session& session) override {
    if (failure == EvalFailure::kThrows) throw std::runtime_error("evaluation data missing");
    if (failure == EvalFailure::kReturnsError) {
      return absl::NotFoundError("no test set in /data: give --test_data");
    }
    std::lock_guard lock(recorded->mu);
    recorded->eval_steps.push_back(session.global_step());
    recorded->eval_w.push_back(w.value.data()[0]);
    return std::map<std::string, double>{{"accuracy", 0.5},
                                         {"distance", std::abs(w.value.data()[0] - 3.0)}};
  }
  void after_train(Session& session, bool is_chief) override {
    std::lock_guard lock(recorded->mu);
    if (is_chief) recorded->after_train_saw_eval = !recorded->eval_steps.empty();
    session.ReportFinalMetrics(recorded->reported);
  }
};

struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "taas-chief-eval-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

int Run(const std::vector<std::string>& flags, Recorded& recorded,
        EvalFailure failure = EvalFailure::kNone) {
  std::vector<std::string> args = {"chief_eval_test"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return RunMain(static_cast<int>(argv.size()), argv.data(), [&recorded, failure] {
    auto model = std::make_unique<Quadratic>();
    model->recorded = &recorded;
    model->failure = failure;
    return std::unique_ptr<DistModel>(std::move(model));
  });
}

bool HasEventFile(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().find("events.out.tfevents") == 0) return true;
  }
  return false;
}

TEST_CASE("the chief evaluates every N steps and at the end, under both strategies") {
  for (const std::string strategy : {"parameter_server", "collective"}) {
    CAPTURE(strategy);
    TempDir dir;
    Recorded recorded;
    REQUIRE(Run({"--strategy=" + strategy, "--max_steps=12", "--model_dir=" + dir.path,
                 "--save_checkpoints_secs=0", "--eval_on_chief=5", "--metrics_port=0"},
                recorded) == 0);
    CHECK(recorded.eval_steps == std::vector<std::int64_t>{5, 10, 12});
    // The final evaluation sees the final values, and after_train comes after it.
    CHECK(recorded.eval_w.back() > recorded.eval_w.front());
    CHECK(recorded.after_train_saw_eval);
    CHECK(HasEventFile(fs::path(dir.path) / "eval_chief"));
    CHECK_FALSE(fs::exists(fs::path(dir.path) / "eval"));  // an Evaluator replica's, untouched
  }
}

TEST_CASE("at the end only, or not at all by default") {
  TempDir end_dir;
  Recorded at_end;
  REQUIRE(Run({"--max_steps=7", "--model_dir=" + end_dir.path, "--eval_on_chief=end",
               "--metrics_port=0"},
              at_end) == 0);
  CHECK(at_end.eval_steps == std::vector<std::int64_t>{7});

  TempDir off_dir;
  Recorded off;
  REQUIRE(Run({"--max_steps=7", "--model_dir=" + off_dir.path, "--metrics_port=0"}, off) == 0);
  CHECK(off.eval_steps.empty());
  CHECK_FALSE(fs::exists(fs::path(off_dir.path) / "eval_chief"));
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("the final evaluation and after_train's report are the job's final metrics") {
  for (const std::string strategy : {"parameter_server", "collective"}) {
    CAPTURE(strategy);
    TempDir dir;
    Recorded recorded;
    // after_train overrides the evaluation's accuracy, adds its own, and a bad name is skipped.
    recorded.reported = {{"accuracy", 0.75}, {"test/f1", 0.5}, {"bad name", 1.0}};
    const fs::path report = fs::path(dir.path) / "termination-log";
    REQUIRE(Run({"--strategy=" + strategy, "--max_steps=6", "--model_dir=" + dir.path,
                 "--eval_on_chief=end", "--metrics_port=0",
                 "--termination_message_path=" + report.string()},
                recorded) == 0);
    auto parsed = job_report::Parse(ReadFile(report));
    REQUIRE(parsed.ok());
    CHECK(parsed->global_step == 6);
    CHECK(parsed->final_metrics.size() == 3);
    CHECK(parsed->final_metrics["accuracy"] == 0.75);
    CHECK(parsed->final_metrics["test/f1"] == 0.5);
    CHECK(parsed->final_metrics.contains("distance"));  // the final evaluation's
  }
}

TEST_CASE("a failed final evaluation is the model's failure (exit 3), named in the report") {
  const std::map<EvalFailure, std::string> errors = {
      {EvalFailure::kReturnsError, "evaluate() failed: no test set in /data: give --test_data"},
      {EvalFailure::kThrows, "evaluate() failed: evaluate() threw: evaluation data missing"}};
  for (const auto& [failure, expected_error] : errors) {
    // A named copy: CAPTURE's lambda cannot capture a structured binding under clang 14 (the
    // sanitizer trees' compiler).
    const std::string error = expected_error;
    for (const std::string strategy : {"parameter_server", "collective"}) {
      CAPTURE(strategy);
      CAPTURE(error);
      TempDir dir;
      Recorded recorded;
      const fs::path report = fs::path(dir.path) / "termination-log";
      CHECK(Run({"--strategy=" + strategy, "--max_steps=3", "--model_dir=" + dir.path,
                 "--eval_on_chief=end", "--metrics_port=0",
                 "--termination_message_path=" + report.string()},
                recorded, failure) == kExitModelError);
      auto parsed = job_report::Parse(ReadFile(report));
      REQUIRE(parsed.ok());
      CHECK(parsed->global_step == 3);
      CHECK(parsed->final_metrics.empty());
      CHECK(parsed->error == error);
      // Not done: a restarted chief evaluates the final checkpoint again.
      CHECK_FALSE(fs::exists(fs::path(dir.path) / contract::kTrainingDoneFile));
    }
  }
}

}  // namespace
}  // namespace taas
