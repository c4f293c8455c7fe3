#include "replica_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/numbers.h"
#include "job_result.h"
#include "taas/base/json_fields.h"
#include "taas/contract/env.h"
#include "taas/tfjob/settings.h"
#include "taas/tfjob/tf_config.h"

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;
using tfjob::ReplicaType;

constexpr const char* kBinPrefix = "/opt/taas/bin/";

// The container's command then its args, each a list of strings (as the API server demands).
absl::StatusOr<std::vector<std::string>> CommandOf(const json_fields::Json& container,
                                                   const std::string& field) {
  std::vector<std::string> argv;
  for (const char* key : {"command", "args"}) {
    const std::string path = field + "." + key;
    TAAS_ASSIGN_OR_RETURN(const json_fields::Json* list,
                          json_fields::OptionalArray(container, key, path));
    for (std::size_t i = 0; list && i < list->size(); ++i) {
      if (!(*list)[i].is_string()) {
        return absl::InvalidArgumentError(path + "[" + std::to_string(i) +
                                          "]: must be a string, got " +
                                          std::string(json_fields::TypeName((*list)[i])));
      }
      argv.push_back((*list)[i].get<std::string>());
    }
  }
  return argv;
}

// KEY=VALUE entries, null-terminated like `environ`, by name (entries without '=' skipped).
std::map<std::string, std::string> EnvironmentOf(char* const* entries) {
  std::map<std::string, std::string> env;
  for (char* const* e = entries; e && *e; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

// Sets a variable whose value is the launcher's, saying so when the manifest or --env gave
// another (`what` names the launcher's).
void SetLaunchersOwn(ReplicaLaunch& r, std::string_view name, const std::string& value,
                     std::string_view what, const std::function<void(const std::string&)>& say) {
  std::string& set = r.env[std::string(name)];
  if (!set.empty() && set != value) {
    say(r.name + ": " + std::string(name) + " " + set + " replaced by " + std::string(what));
  }
  set = value;
}

}  // namespace

int EphemeralPortsStart(std::string_view ip_local_port_range) {
  int first = 0;
  const std::string_view digits =
      ip_local_port_range.substr(0, ip_local_port_range.find_first_not_of("0123456789"));
  if (digits.empty() || digits.size() > 5 ||
      !absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &first) ||
      first < kLowestChosenPort + 1024 || first > 65535) {
    return kDefaultEphemeralPortsStart;
  }
  return first;
}

absl::StatusOr<std::vector<int>> FreePorts(int count) {
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  std::string range_text(32, '\0');
  range_file.read(range_text.data(), static_cast<std::streamsize>(range_text.size()));
  range_text.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, range_file.gcount())));
  const int end = EphemeralPortsStart(range_text);
  const int span = end - kLowestChosenPort;
  // Tried from a random place, so that launchers started together rarely try the same ports.
  const int offset = static_cast<int>(std::random_device{}() % static_cast<unsigned>(span));
  std::vector<int> fds, ports;
  for (int tried = 0; tried < span && static_cast<int>(ports.size()) < count; ++tried) {
    const int port = kLowestChosenPort + (offset + tried) % span;
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      continue;
    }
    fds.push_back(fd);
    ports.push_back(port);
  }
  for (int f : fds) ::close(f);  // Held until all are chosen, so no port is handed out twice.
  if (static_cast<int>(ports.size()) < count) {
    return absl::UnavailableError("cannot reserve " + std::to_string(count) +
                                  " loopback ports from " + std::to_string(kLowestChosenPort) +
                                  " to " + std::to_string(end - 1) + ": too few are free");
  }
  return ports;
}

absl::StatusOr<std::chrono::seconds> TerminationGraceOf(const nlohmann::json& pod_template,
                                                        const std::string& path) {
  const std::chrono::seconds kubernetes_default{contract::kKubernetesTerminationGracePeriodSecs};
  TAAS_ASSIGN_OR_RETURN(const json_fields::Json* spec,
                        json_fields::OptionalObject(pod_template, "spec", path + ".spec"));
  if (spec == nullptr) return kubernetes_default;
  const std::string field = path + ".spec.terminationGracePeriodSeconds";
  TAAS_ASSIGN_OR_RETURN(std::optional<std::int64_t> secs,
                        json_fields::OptionalInt(*spec, "terminationGracePeriodSeconds", field));
  if (!secs) return kubernetes_default;
  if (*secs < 0) {
    return absl::InvalidArgumentError(field + " must be >= 0, got " + std::to_string(*secs));
  }
  return std::chrono::seconds(*secs);
}

absl::StatusOr<std::vector<ReplicaLaunch>> PlanReplicas(
    const tfjob::TFJob& job, const ReplicaSettings& settings, const std::vector<int>& ports,
    const JobSecretFiles& secrets, const std::function<void(const std::string&)>& say) {
  if (ports.size() != 2 * static_cast<std::size_t>(tfjob::TotalReplicas(job.spec))) {
    return absl::InternalError("two ports per replica needed, got " + std::to_string(ports.size()));
  }
  std::vector<ReplicaLaunch> replicas;
  std::size_t next = 0;
  std::map<std::pair<ReplicaType, int>, int> port_of;
  for (ReplicaType type : tfjob::kStatusOrder) {
    auto it = job.spec.replica_specs.find(type);
    if (it == job.spec.replica_specs.end()) continue;
    for (int i = 0; i < it->second.replicas; ++i) {
      ReplicaLaunch& r = replicas.emplace_back();
      r.type = type;
      r.index = i;
      r.name = tfjob::ReplicaName(job.metadata.name, type, i);
      r.port = ports[next++];
      r.metrics_port = ports[next++];
      r.policy = it->second.restart_policy;
      port_of[{type, i}] = r.port;
    }
  }
  const tfjob::ClusterSpec cluster =
      tfjob::BuildClusterSpec(job.spec, [&](ReplicaType type, int index) {
        return "127.0.0.1:" + std::to_string(port_of[{type, index}]);
      });
  const bool distributed = tfjob::NeedsTfConfig(job.spec);
  std::map<std::string, std::string> resolved;  // command -> local binary, said once each
  for (ReplicaLaunch& r : replicas) {
    const nlohmann::json& tmpl = job.spec.replica_specs.at(r.type).pod_template;
    const nlohmann::json* container = tfjob::FindDefaultContainer(tmpl);
    if (!container) {
      return absl::InvalidArgumentError("spec.tfReplicaSpecs." +
                                        std::string(tfjob::ReplicaTypeName(r.type)) +
                                        ".template.spec.containers: no container named tensorflow");
    }
    const std::string pod =
        "spec.tfReplicaSpecs." + std::string(tfjob::ReplicaTypeName(r.type)) + ".template";
    TAAS_ASSIGN_OR_RETURN(r.termination_grace, TerminationGraceOf(tmpl, pod));
    const std::string field = pod + ".spec.containers[tensorflow]";
    TAAS_ASSIGN_OR_RETURN(r.argv, CommandOf(*container, field));
    if (r.argv.empty()) {
      return absl::InvalidArgumentError(field +
                                        ".command: needed to run the replica locally "
                                        "(the image's entrypoint is unknown here)");
    }
    if (r.argv[0].rfind(kBinPrefix, 0) == 0) {
      const std::string name = r.argv[0].substr(std::strlen(kBinPrefix));
      auto found = resolved.find(r.argv[0]);
      if (found == resolved.end()) {
        absl::StatusOr<std::string> local = LocateBinary(settings.binary_places, name);
        if (!local.ok()) {
          return absl::Status(local.status().code(), field + ".command[0]: " + r.argv[0] + ": " +
                                                         std::string(local.status().message()));
        }
        say("using " + *local + " for " + r.argv[0]);
        found = resolved.emplace(r.argv[0], *local).first;
      }
      r.argv[0] = found->second;
    }
    TAAS_ASSIGN_OR_RETURN(const json_fields::Json* env,
                          json_fields::OptionalArray(*container, "env", field + ".env"));
    for (std::size_t i = 0; env && i < env->size(); ++i) {
      const json_fields::Json& e = (*env)[i];
      const std::string path = field + ".env[" + std::to_string(i) + "]";
      if (!e.is_object()) {
        return absl::InvalidArgumentError(path + ": must be an object, got " +
                                          std::string(json_fields::TypeName(e)));
      }
      TAAS_ASSIGN_OR_RETURN(auto name, json_fields::OptionalString(e, "name", path + ".name"));
      if (!name || name->empty()) return absl::InvalidArgumentError(path + ".name: needed");
      if (auto value = json_fields::String(e, "value")) {
        r.env[*name] = *value;
      } else if (json_fields::Find(e, "valueFrom")) {
        say(r.name + ": env " + *name + " uses valueFrom, which has no local meaning; skipped");
      }
    }
    for (const auto& [k, v] : settings.env) r.env[k] = v;
    for (const auto& [k, v] : settings.defaults) r.env.try_emplace(k, v);
    for (const auto& [k, v] : secrets.EnvFor(job.spec, r.type, r.index)) r.env[k] = v;
    SetLaunchersOwn(r, contract::kModelDirEnv, settings.model_dir, "the local model dir", say);
    SetLaunchersOwn(r, contract::kTerminationMessagePathEnv,
                    TerminationMessagePath(ReplicaFilesDir(settings.model_dir), r.name),
                    "the launcher's file for the job's report", say);
    r.env[std::string(contract::kJobNameEnv)] = job.metadata.name;
    r.env[std::string(contract::kMetricsPortEnv)] = std::to_string(r.metrics_port);
    if (distributed) {
      r.env[std::string(contract::kTfConfigEnv)] = tfjob::TfConfigJson(cluster, {r.type, r.index});
    }
  }
  return replicas;
}

std::map<std::string, std::string> LocalComputeDefaults(const tfjob::TFJobSpec& spec, int cpus,
                                                        char* const* inherited) {
  int computing = 0;
  for (const auto& [type, replica] : spec.replica_specs) {
    if (type != ReplicaType::kPS) computing += replica.replicas;
  }
  std::map<std::string, std::string> defaults = {
      {std::string(contract::kComputeThreadsEnv),
       std::to_string(std::max(1, cpus / std::max(1, computing)))},
      {std::string(contract::kOmpWaitPolicyEnv), std::string(contract::kOmpWaitPolicyPassive)}};
  for (const auto& [name, value] : EnvironmentOf(inherited)) defaults.erase(name);
  return defaults;
}

std::optional<std::string> SettingsWarning(const tfjob::TFJob& job,
                                           const ReplicaSettings& settings) {
  std::map<std::string, std::string> every_replica = settings.env;
  every_replica[std::string(contract::kModelDirEnv)] = settings.model_dir;
  const auto disagreements = tfjob::DisagreeingSettings(job.spec, every_replica);
  if (disagreements.empty()) return std::nullopt;
  return "warning: " + tfjob::DisagreementMessage(disagreements);
}

std::vector<std::string> ProcessEnvironment(const std::map<std::string, std::string>& replica_env,
                                            char* const* inherited) {
  std::map<std::string, std::string> env = EnvironmentOf(inherited);
  env.erase(std::string(contract::kTfConfigEnv));
  for (const auto& [k, v] : replica_env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace taas::launcher
