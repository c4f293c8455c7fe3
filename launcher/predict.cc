#include "predict.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "args.h"
#include "job_secret_files.h"
#include "manifest.h"
#include "processes.h"
#include "replica_env.h"
#include "taas/contract/env.h"
#include "taas/flags/flags.h"
#include "taas/tfjob/validation.h"

extern char** environ;

namespace taas::launcher {

namespace fs = std::filesystem;

std::string PredictUsage() {
  return "usage: taas predict JOB.yaml --model-dir DIR --input PATTERN [--input PATTERN]...\n"
         "                    --output FILE.csv|FILE.npy [--checkpoint PREFIX] [--batch-size N]\n"
         "                    [--env KEY=VALUE]... [--bin-dir DIR] [--build-dir DIR]\n"
         "  Runs the job's model (the Evaluator's command; else the Chief's, Master's or\n"
         "  Worker's) on the input files with the model dir's newest checkpoint (or PREFIX),\n"
         "  and writes each example's outputs (and class, and label when the inputs have one).";
}

absl::StatusOr<PredictArgs> ParsePredictArgs(const std::vector<std::string>& args,
                                             const std::string& self_path) {
  const std::string usage = PredictUsage();
  if (args.empty() || args[0] != "predict") return absl::InvalidArgumentError(usage);
  PredictArgs o;
  flags::FlagSet set;
  set.String("model-dir", &o.model_dir);
  set.String("checkpoint", &o.checkpoint);
  set.String("output", &o.output);
  set.Int("batch-size", 1, std::int64_t{1} << 20, &o.batch_size);
  set.KeyValues("env", &o.env);
  set.String("bin-dir", &o.bin_dir);
  set.String("build-dir", &o.build_dir);
  // --input is repeatable: each value one pattern.
  std::vector<std::string> rest;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--input" && i + 1 < args.size()) {
      o.inputs.push_back(args[++i]);
    } else if (a.rfind("--input=", 0) == 0) {
      o.inputs.push_back(a.substr(8));
    } else {
      rest.push_back(a);
    }
  }
  auto parsed = set.Parse(rest);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(std::string(parsed.status().message()) + "\n" + usage);
  }
  o.help = parsed->help;
  if (o.help) return o;
  if (parsed->positional.size() != 1) {
    return absl::InvalidArgumentError(
        (parsed->positional.empty() ? "no job file"
                                    : "only one job file, got " + parsed->positional[1] + " too") +
        std::string("\n") + usage);
  }
  o.job_file = parsed->positional.front();
  for (const auto& [given, missing] :
       {std::pair{o.model_dir.empty(), "--model-dir: needed (the model dir `taas run` printed)"},
        std::pair{o.inputs.empty(), "--input: needed (the files to predict on)"},
        std::pair{o.output.empty(), "--output: needed (a .csv or .npy file to write)"}}) {
    if (given) return absl::InvalidArgumentError(std::string(missing) + "\n" + usage);
  }
  for (const std::string& pattern : o.inputs) {
    if (pattern.empty()) return absl::InvalidArgumentError("--input: an empty pattern\n" + usage);
    // The model's process gets the patterns comma-separated (TAAS_PREDICT_INPUT).
    if (pattern.find(',') != std::string::npos) {
      return absl::InvalidArgumentError(
          "--input " + pattern + ": a pattern may not hold a comma (give one --input each)\n" +
          usage);
    }
  }
  LocateLauncher(self_path, o.launcher_dir, o.build_dir, o.build_dir_given);
  std::error_code ec;
  o.model_dir = fs::absolute(o.model_dir, ec).string();
  o.output = fs::absolute(o.output, ec).string();
  return o;
}

absl::StatusOr<tfjob::ReplicaType> PredictingReplica(const tfjob::TFJobSpec& spec) {
  using tfjob::ReplicaType;
  for (ReplicaType type :
       {ReplicaType::kEvaluator, ReplicaType::kChief, ReplicaType::kMaster, ReplicaType::kWorker}) {
    if (spec.replica_specs.count(type) != 0) return type;
  }
  return absl::InvalidArgumentError(
      "spec.tfReplicaSpecs: no Evaluator, Chief, Master or Worker whose command could predict");
}

std::map<std::string, std::string> PredictEnvironment(std::map<std::string, std::string> env,
                                                      const PredictArgs& args) {
  for (std::string_view dropped :
       {contract::kTfConfigEnv, contract::kMetricsPortEnv, contract::kTerminationMessagePathEnv}) {
    env.erase(std::string(dropped));
  }
  env[std::string(contract::kModelDirEnv)] = args.model_dir;
  env[std::string(contract::kPredictOutputEnv)] = args.output;
  std::string inputs;
  for (const std::string& pattern : args.inputs) inputs += (inputs.empty() ? "" : ",") + pattern;
  env[std::string(contract::kPredictInputEnv)] = inputs;
  env[std::string(contract::kPredictBatchSizeEnv)] = std::to_string(args.batch_size);
  if (args.checkpoint.empty()) {
    env.erase(std::string(contract::kPredictCheckpointEnv));
  } else {
    env[std::string(contract::kPredictCheckpointEnv)] = args.checkpoint;
  }
  return env;
}

namespace {

void Error(const std::string& message) {
  std::fprintf(stderr, "[taas] error: %s\n", message.c_str());
}

}  // namespace

int RunPredict(const PredictArgs& args) {
  auto manifest = ReadManifest(args.job_file);
  if (!manifest.ok()) {
    Error(std::string(manifest.status().message()));
    return 2;
  }
  auto job = tfjob::LoadTFJob(*manifest);
  if (!job.ok()) {
    Error(args.job_file + ": " + std::string(job.status().message()));
    return 2;
  }
  auto type = PredictingReplica(job->spec);
  if (!type.ok()) {
    Error(args.job_file + ": " + std::string(type.status().message()));
    return 2;
  }
  // The replicas as `taas run` plans them (command found, environment), without their ports and
  // secrets mattering: the predicting process is alone and joins no cluster.
  auto secrets = JobSecretFiles::Create(fs::temp_directory_path().string(), job->metadata.name);
  if (!secrets.ok()) {
    Error(std::string(secrets.status().message()));
    return 2;
  }
  const ReplicaSettings settings{
      BinaryPlaces(SearchInputsOfProcess(args.bin_dir, args.build_dir, args.build_dir_given,
                                         args.job_file, args.launcher_dir)),
      args.model_dir,
      args.env,
      {}};
  const std::vector<int> ports(2 * static_cast<std::size_t>(tfjob::TotalReplicas(job->spec)), 0);
  auto launches = PlanReplicas(*job, settings, ports, **secrets, [](const std::string& line) {
    std::fprintf(stderr, "[taas] %s\n", line.c_str());
  });
  if (!launches.ok()) {
    Error(args.job_file + ": " + std::string(launches.status().message()));
    return 2;
  }
  const ReplicaLaunch* launch = nullptr;
  for (const ReplicaLaunch& l : *launches) {
    if (l.type == *type && l.index == 0) launch = &l;
  }
  if (launch == nullptr) {
    Error(args.job_file + ": spec.tfReplicaSpecs." + std::string(tfjob::ReplicaTypeName(*type)) +
          ": no replica (replicas: 0) whose command could predict");
    return 2;
  }
  const std::vector<std::string> env_entries =
      ProcessEnvironment(PredictEnvironment(launch->env, args), environ);
  std::vector<char*> argv, envp;
  for (const std::string& a : launch->argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env_entries) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::fprintf(stderr, "[taas] predicting with %s (%s's command) on %zu pattern(s) into %s\n",
               launch->argv[0].c_str(), std::string(tfjob::ReplicaTypeName(*type)).c_str(),
               args.inputs.size(), args.output.c_str());
  pid_t pid = 0;
  if (const int err = ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data());
      err != 0) {
    Error("cannot start " + launch->argv[0] + ": " + std::strerror(err));
    return 2;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      Error("cannot wait for " + launch->argv[0] + ": " + std::strerror(errno));
      return 2;
    }
  }
  const int code = ExitCodeOf(status);
  if (code != 0) Error("the model's process exited with " + std::to_string(code));
  return code;
}

}  // namespace taas::launcher
