// taas — the local launcher: `taas run job.yaml` runs a TFJob's replicas as local processes.
#include <cstdio>

#include "launcher.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
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
