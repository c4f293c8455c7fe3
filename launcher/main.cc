// taas — the local launcher: `taas run job.yaml` runs a TFJob's replicas as local processes;
// `taas new NAME` creates a model project from the SDK's template.
#include <cstdio>

#include "launcher.h"
#include "new_project.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "new") {
    return taas::launcher::RunNew({args.begin() + 1, args.end()}, argv[0]);
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
