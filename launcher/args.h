// The command line of `taas run`: what the user asked for, checked, with the defaults filled in.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/tfjob/status.h"

namespace taas::launcher {

struct Options {
  std::string job_file;
  // Where `/opt/taas/bin/<name>` commands are looked up first (binary_locator.h): a folder that
  // holds the executables directly.
  std::string bin_dir;
  // A build tree searched for them (recursively); default: the build dir this launcher binary sits
  // in (searched after the manifest's own build tree).
  std::string build_dir;
  bool build_dir_given = false;
  // The folder of the `taas` executable.
  std::string launcher_dir;
  // The shared model dir (TF_LOGDIR of every replica); default: a fresh folder under /tmp/taas.
  std::string model_dir;
  // Extra environment for every replica (`--env KEY=VALUE`), after the manifest's.
  std::map<std::string, std::string> env;
  // How often the progress view prints a line (0: never). On a terminal a bar is redrawn every
  // second instead.
  double progress_secs = 10;
  // Every replica's output on the console too, each line behind its replica's name (it always
  // goes to <model dir>/logs/<replica>.log).
  bool verbose = false;
  // How long a job with an Evaluator waits, once training succeeded, for the evaluator to score
  // the final checkpoint (tfjob::StatusOptions; the operator's default).
  std::chrono::seconds evaluator_grace = tfjob::StatusOptions{}.evaluator_grace;

  // The web UI for this job (taas::ui_server over LocalJobSource), on 127.0.0.1.
  bool ui = true;
  // 0: any free port. The default port falls back to a free one when it is taken; a port given
  // with --ui-port does not.
  int ui_port = 8080;
  bool ui_port_given = false;
  // Keep serving after the job finished, until Ctrl-C (the exit code stays the job's).
  bool keep_ui = false;
  // The built front end; default: <build_dir>/web-ui/dist.
  std::string ui_assets;
  // GPUs the cluster page shows for this machine.
  int local_gpus = 0;
  double ui_scrape_secs = 2;
  // --help or -h: print Usage() and do nothing else.
  bool help = false;
};

// Where the `taas` executable at `self_path` is (`launcher_dir`, "" when unknown) and, unless
// `build_dir` was given, the build tree it sits in (build/launcher/taas -> build).
void LocateLauncher(const std::string& self_path, std::string& launcher_dir, std::string& build_dir,
                    bool& build_dir_given);

// What `taas run --help` prints.
std::string Usage();

// Parses `run JOB.yaml [--bin-dir DIR] [--build-dir DIR] [--model-dir DIR] [--env K=V]...
// [--progress-secs S] [--verbose] [--evaluator-grace-seconds S]
// [--ui-port N] [--no-ui] [--keep-ui] [--ui-assets DIR] [--local-gpus N]`.
absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args,
                                  const std::string& self_path);

}  // namespace taas::launcher
