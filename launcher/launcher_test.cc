#include "launcher.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "predict.h"
#include "replica_env.h"

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

TEST_CASE("run arguments: job file, options, errors") {
  auto o = ParseArgs({"run", "job.yaml", "--model-dir", "/m", "--env=A=1", "--env", "B=x=y",
                      "--build-dir=/b", "--progress-secs", "3", "--bin-dir", "/bins"},
                     "/nonexistent/taas");
  REQUIRE(o.ok());
  CHECK(o->job_file == "job.yaml");
  CHECK(o->model_dir == "/m");
  CHECK(o->build_dir == "/b");
  CHECK(o->build_dir_given);
  CHECK(o->bin_dir == "/bins");
  CHECK(o->env.at("A") == "1");
  CHECK(o->env.at("B") == "x=y");
  CHECK(o->progress_secs == doctest::Approx(3));
  CHECK_FALSE(o->verbose);
  CHECK(ParseArgs({"run", "job.yaml", "--verbose"}, "taas")->verbose);
  CHECK_FALSE(ParseArgs({"start", "job.yaml"}, "taas").ok());
  CHECK_FALSE(ParseArgs({"run"}, "taas").ok());
  CHECK(std::string(ParseArgs({"run", "j", "--bogus"}, "taas").status().message())
            .rfind("--bogus: unknown option", 0) == 0);
  CHECK(std::string(ParseArgs({"run", "j", "--env", "novalue"}, "taas").status().message())
            .rfind("--env: expected KEY=VALUE", 0) == 0);
}

TEST_CASE("run arguments: the evaluator's grace, the operator's by default, bounded") {
  auto o = ParseArgs({"run", "job.yaml"}, "taas");
  REQUIRE(o.ok());
  CHECK(o->evaluator_grace == tfjob::StatusOptions{}.evaluator_grace);
  o = ParseArgs({"run", "job.yaml", "--evaluator-grace-seconds", "0"}, "taas");
  REQUIRE(o.ok());
  CHECK(o->evaluator_grace == std::chrono::seconds(0));
  CHECK(std::string(
            ParseArgs({"run", "j", "--evaluator-grace-seconds=3601"}, "taas").status().message())
            .rfind("--evaluator-grace-seconds: expected a number from 0 to 3600, got 3601", 0) ==
        0);
}

TEST_CASE("run arguments: the web UI") {
  auto o = ParseArgs({"run", "job.yaml", "--build-dir", "/b"}, "taas");
  REQUIRE(o.ok());
  CHECK(o->ui);
  CHECK(o->ui_port == 8080);
  CHECK_FALSE(o->ui_port_given);
  CHECK_FALSE(o->keep_ui);
  CHECK(o->ui_assets == "/b/web-ui/dist");
  CHECK(o->local_gpus == 0);
  o = ParseArgs(
      {"run", "job.yaml", "--ui-port=0", "--keep-ui", "--ui-assets", "/a", "--local-gpus", "2"},
      "taas");
  REQUIRE(o.ok());
  CHECK(o->ui_port == 0);
  CHECK(o->ui_port_given);
  CHECK(o->keep_ui);
  CHECK(o->ui_assets == "/a");
  CHECK(o->local_gpus == 2);
  o = ParseArgs({"run", "job.yaml", "--no-ui"}, "taas");
  REQUIRE(o.ok());
  CHECK_FALSE(o->ui);
  CHECK(std::string(ParseArgs({"run", "j", "--ui-port", "http"}, "taas").status().message())
            .rfind("--ui-port: expected a number from 0 to 65535, got http", 0) == 0);
  CHECK_FALSE(ParseArgs({"run", "j", "--ui-port", "70000"}, "taas").ok());
  CHECK_FALSE(ParseArgs({"run", "j", "--no-ui=yes"}, "taas").ok());
}

TEST_CASE("the build dir defaults to the one holding launcher/taas") {
  std::string tmpl = (fs::temp_directory_path() / "taas-launcher-XXXXXX").string();
  fs::path root = ::mkdtemp(tmpl.data());
  fs::create_directories(root / "launcher");
  fs::create_directories(root / "examples" / "a" / "deep");
  const fs::path self = root / "launcher" / "taas";
  std::ofstream(self) << "";
  auto o = ParseArgs({"run", "job.yaml"}, self.string());
  REQUIRE(o.ok());
  CHECK(fs::equivalent(o->build_dir, root));
  CHECK_FALSE(o->build_dir_given);
  CHECK(fs::equivalent(o->launcher_dir, root / "launcher"));

  // The shallowest executable of that name wins; non-executables are ignored.
  std::ofstream(root / "examples" / "a" / "deep" / "model") << "#!/bin/sh\n";
  ::chmod((root / "examples" / "a" / "deep" / "model").c_str(), 0755);
  std::ofstream(root / "examples" / "model") << "data";
  CHECK(FindBinary(root.string(), "model") ==
        (root / "examples" / "a" / "deep" / "model").string());
  std::ofstream(root / "examples" / "a" / "model") << "#!/bin/sh\n";
  ::chmod((root / "examples" / "a" / "model").c_str(), 0755);
  CHECK(FindBinary(root.string(), "model") == (root / "examples" / "a" / "model").string());
  CHECK(FindBinary(root.string(), "missing").empty());
  fs::remove_all(root);
}

TEST_CASE("taas predict's command line, its replica and its environment") {
  auto o = ParsePredictArgs(
      {"predict", "job.yaml", "--model-dir", "m", "--input", "b*.gz", "--input=c", "--output",
       "p.csv", "--batch-size=50", "--checkpoint", "m/model.ckpt-4", "--env", "A=1"},
      "taas");
  REQUIRE(o.ok());
  CHECK(o->job_file == "job.yaml");
  CHECK(o->inputs == std::vector<std::string>{"b*.gz", "c"});
  CHECK(fs::path(o->model_dir).is_absolute());
  CHECK(fs::path(o->output).is_absolute());
  CHECK(o->batch_size == 50);
  CHECK(o->env.at("A") == "1");
  CHECK(ParsePredictArgs({"predict", "--help"}, "taas")->help);
  for (const auto& [args, error] :
       {std::pair{std::vector<std::string>{"predict", "j", "--input", "a", "--output", "p.csv"},
                  "--model-dir: needed"},
        {{"predict", "j", "--model-dir", "m", "--output", "p.csv"}, "--input: needed"},
        {{"predict", "j", "--model-dir", "m", "--input", "a"}, "--output: needed"},
        {{"predict", "--model-dir", "m", "--input", "a", "--output", "p.csv"}, "no job file"},
        {{"predict", "j", "--model-dir", "m", "--input", "a,b", "--output", "p.csv"},
         "--input a,b: a pattern may not hold a comma"},
        {{"predict", "j", "--model-dir", "m", "--input", "a", "--output", "p", "--batch-size=0"},
         "--batch-size"}}) {
    const auto refused = ParsePredictArgs(args, "taas");
    REQUIRE_FALSE(refused.ok());
    CHECK(std::string(refused.status().message()).find(error) == 0);
  }

  using tfjob::ReplicaType;
  tfjob::TFJobSpec spec;
  spec.replica_specs[ReplicaType::kWorker].replicas = 2;
  CHECK(*PredictingReplica(spec) == ReplicaType::kWorker);
  spec.replica_specs[ReplicaType::kChief].replicas = 1;
  CHECK(*PredictingReplica(spec) == ReplicaType::kChief);
  spec.replica_specs[ReplicaType::kEvaluator].replicas = 1;
  CHECK(*PredictingReplica(spec) == ReplicaType::kEvaluator);
  CHECK_FALSE(PredictingReplica({}).ok());

  const auto env = PredictEnvironment({{"TF_CONFIG", "{}"},
                                       {"TAAS_METRICS_PORT", "9"},
                                       {"TAAS_TERMINATION_MESSAGE_PATH", "/r"},
                                       {"TF_LOGDIR", "/old"},
                                       {"KEPT", "1"}},
                                      *o);
  CHECK(env == std::map<std::string, std::string>{{"KEPT", "1"},
                                                  {"TAAS_PREDICT_BATCH_SIZE", "50"},
                                                  {"TAAS_PREDICT_CHECKPOINT", "m/model.ckpt-4"},
                                                  {"TAAS_PREDICT_INPUT", "b*.gz,c"},
                                                  {"TAAS_PREDICT_OUTPUT", o->output},
                                                  {"TF_LOGDIR", o->model_dir}});
}

}  // namespace
}  // namespace taas::launcher
