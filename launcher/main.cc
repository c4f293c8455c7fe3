// taas — the local launcher: `taas run job.yaml` runs a TFJob's replicas as local processes;
// `taas predict job.yaml ...` runs its model on files with a checkpoint (predict.h); `taas new
// NAME` creates a model project from the SDK's template.
#include <cstdio>

#include "launcher.h"
#include "new_project.h"
#include "predict.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "new") {
    return taas::launcher::RunNew({args.begin() + 1, args.end()}, argv[0]);
  }
  if (!args.empty() && args.front() == "predict") {
    auto predict = taas::launcher::ParsePredictArgs(args, argv[0]);
    if (!predict.ok()) {
      std::fprintf(stderr, "%s\n", std::string(predict.status().message()).c_str());
      return 2;
    }
    if (predict->help) {
      std::printf("%s\n", taas::launcher::PredictUsage().c_str());
      return 0;
    }
    return taas::launcher::RunPredict(*predict);
  }
  auto options = taas::launcher::ParseArgs(args, argv[0]);
  if (!options.ok()) {
    std::fprintf(stderr, "%s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (options->help) {
    std::printf("%s\n", taas::launcher::Usage().c_str());
    return 0;
  }
  return taas::launcher::Run(*options);
}
