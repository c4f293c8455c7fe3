// `taas predict JOB.yaml --model-dir DIR --input FILES --output preds.csv`: scores files with a
// trained model, as `taas run` trained it. The model is the user's own binary, so predicting runs
// the job's own command, the one that scores checkpoints (the Evaluator's; else the Chief's, the
// Master's or the Worker's), with its environment and arguments, as one process without TF_CONFIG
// and with the predict settings (TAAS_PREDICT_*; docs/trainer-runtime.md "Predict"), which
// RunMain turns into its predict mode: the model's checkpoint restored, its predict_inputs and
// predict hooks run, the output written under a temporary name and renamed when complete.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/tfjob/tfjob.h"

namespace taas::launcher {

struct PredictArgs {
  std::string job_file;
  std::string model_dir;   // the job's model dir, as `taas run` printed it
  std::string checkpoint;  // a prefix in it ("DIR/model.ckpt-400"); default: the newest
  std::vector<std::string> inputs;
  std::string output;
  std::int64_t batch_size = 100;
  std::map<std::string, std::string> env;  // --env, over the manifest's
  std::string bin_dir;                     // as `taas run`'s (args.h)
  std::string build_dir;
  bool build_dir_given = false;
  std::string launcher_dir;
  bool help = false;
};

// What `taas predict --help` prints.
std::string PredictUsage();

// Parses `predict JOB.yaml --model-dir DIR --input PATTERN [--input PATTERN]... --output FILE
// [--checkpoint PREFIX] [--batch-size N] [--env K=V]... [--bin-dir DIR] [--build-dir DIR]`.
// InvalidArgument naming what is missing or wrong, with the usage.
absl::StatusOr<PredictArgs> ParsePredictArgs(const std::vector<std::string>& args,
                                             const std::string& self_path);

// The replica type whose command predicts: Evaluator, else Chief, Master, Worker; InvalidArgument
// for a job without any of them.
absl::StatusOr<tfjob::ReplicaType> PredictingReplica(const tfjob::TFJobSpec& spec);

// The environment `taas predict` gives the model's process over its replica's (`replica_env`):
// no TF_CONFIG, metrics port or termination message (one process, no cluster, no job report),
// the model dir and the predict settings.
std::map<std::string, std::string> PredictEnvironment(
    std::map<std::string, std::string> replica_env, const PredictArgs& args);

// Runs it: the model's exit code (0 when the output is complete), 2 for a bad manifest or a
// command that cannot be found or started.
int RunPredict(const PredictArgs& args);

}  // namespace taas::launcher
