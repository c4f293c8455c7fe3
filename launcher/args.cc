#include "args.h"

#include <algorithm>
#include <filesystem>

#include "taas/flags/flags.h"

namespace taas::launcher {

namespace fs = std::filesystem;

std::string Usage() {
  return "usage: taas run JOB.yaml [--bin-dir DIR] [--build-dir DIR] [--model-dir DIR]\n"
         "                [--env KEY=VALUE]... [--progress-secs S] [--verbose]\n"
         "                [--evaluator-grace-seconds S]\n"
         "                [--ui-port N] [--no-ui] [--keep-ui] [--ui-assets DIR] [--local-gpus N]\n"
         "       taas predict JOB.yaml --model-dir DIR --input FILES --output FILE.csv|.npy ...\n"
         "                (a trained model's predictions; taas predict --help)\n"
         "       taas new NAME [DIR]   (a model project from the SDK's template; taas new --help)";
}

void LocateLauncher(const std::string& self_path, std::string& launcher_dir, std::string& build_dir,
                    bool& build_dir_given) {
  std::error_code ec;
  const fs::path self = fs::canonical(self_path, ec);
  launcher_dir = ec ? "" : self.parent_path().string();
  build_dir_given = !build_dir.empty();
  if (!build_dir_given) build_dir = ec ? "." : self.parent_path().parent_path().string();
}

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args,
                                  const std::string& self_path) {
  const std::string usage = Usage();
  if (args.empty() || args[0] != "run") return absl::InvalidArgumentError(usage);
  Options o;
  bool no_ui = false;
  flags::FlagSet set;
  set.String("bin-dir", &o.bin_dir);
  set.String("build-dir", &o.build_dir);
  set.String("model-dir", &o.model_dir);
  set.KeyValues("env", &o.env);
  set.Double("progress-secs", 0, 86400, &o.progress_secs);
  set.Switch("verbose", &o.verbose);
  set.Int("evaluator-grace-seconds", 0, tfjob::kMaxEvaluatorGrace.count(), &o.evaluator_grace);
  set.Int("ui-port", 0, 65535, &o.ui_port);
  set.Switch("no-ui", &no_ui);
  set.Switch("keep-ui", &o.keep_ui);
  set.String("ui-assets", &o.ui_assets);
  set.Int("local-gpus", 0, 1024, &o.local_gpus);
  auto parsed = set.Parse({args.begin() + 1, args.end()});
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(std::string(parsed.status().message()) + "\n" + usage);
  }
  o.help = parsed->help;
  o.ui = !no_ui;
  o.ui_port_given =
      std::find(parsed->given.begin(), parsed->given.end(), "ui-port") != parsed->given.end();
  if (parsed->positional.size() > 1) {
    return absl::InvalidArgumentError("only one job file, got " + parsed->positional[1] + " too\n" +
                                      usage);
  }
  if (!parsed->positional.empty()) o.job_file = parsed->positional.front();
  if (o.help) return o;
  if (o.job_file.empty()) return absl::InvalidArgumentError("no job file\n" + usage);
  LocateLauncher(self_path, o.launcher_dir, o.build_dir, o.build_dir_given);
  if (o.ui_assets.empty()) o.ui_assets = (fs::path(o.build_dir) / "web-ui" / "dist").string();
  return o;
}

}  // namespace taas::launcher
