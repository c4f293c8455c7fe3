// libFuzzer target: the runtime's configuration (ParseConfig): TF_CONFIG, TF_*/TAAS_* variables
// and flags. The input is TF_CONFIG, then after a NUL byte one setting per line: `NAME=value`
// for a variable, `--flag...` for an argument. A config that parses is consistent (counts match
// the address lists, indices in range, every number within its documented bounds); nothing
// throws or aborts.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "taas/config/config.h"

namespace {

void Require(bool condition) {
  if (!condition) std::abort();
}

void CheckInvariants(const taas::config::RuntimeConfig& c) {
  const auto& info = c.info;
  Require(info.num_ps == static_cast<int>(c.ps_addresses.size()));
  Require(info.num_workers == static_cast<int>(c.worker_addresses.size()));
  Require(info.task_index >= 0 && info.task_index < 10000);
  Require(info.worker_rank >= 0);
  Require(info.replicas_to_aggregate >= 1 && info.replicas_to_aggregate <= 10000);
  Require(info.max_steps >= 1);
  Require(c.keep_checkpoints >= 1);
  Require(c.log_steps >= 1);
  Require(c.metrics_port >= 0 && c.metrics_port <= 65535);
  Require(c.ps_lanes >= 1 && c.ps_lanes <= 64);
  for (double secs : {c.wait_timeout_secs, c.eval_interval_secs, c.save_checkpoints_secs,
                      c.save_summaries_secs}) {
    Require(secs >= 0 && secs <= 30 * 24 * 3600);
  }
  Require(c.local || !c.listen_address.empty());
  Require(c.ps_addresses.size() + c.worker_addresses.size() <= 20001);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  std::map<std::string, std::string> env;
  std::vector<std::string> args;
  if (nul != 0) env["TF_CONFIG"] = std::string(input.substr(0, nul));
  if (nul != std::string_view::npos) {
    std::string_view rest = input.substr(nul + 1);
    while (!rest.empty()) {
      const std::size_t end = rest.find('\n');
      const std::string_view line = rest.substr(0, end);
      if (line.rfind("--", 0) == 0) {
        args.emplace_back(line);
      } else if (const std::size_t eq = line.find('='); eq != std::string_view::npos) {
        env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
      }
      if (end == std::string_view::npos) break;
      rest = rest.substr(end + 1);
    }
  }
  auto config = taas::config::ParseConfig(args, env);
  if (config.ok()) CheckInvariants(*config);
  return 0;
}
