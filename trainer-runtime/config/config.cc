#include "taas/config/config.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>

#include "taas/base/json_fields.h"
#include "taas/base/stall_watch.h"
#include "taas/contract/env.h"
#include "taas/contract/job_secret.h"
#include "taas/contract/ports.h"

namespace taas::config {
namespace {

// One tunable: its flag, its environment variable, and how to store a value.
struct Setting {
  std::string flag;  // without the leading "--"
  std::string env;
  std::string help;
  std::function<absl::Status(const std::string& where, const std::string& value,
                             RuntimeConfig& config)>
      apply;
};

// Bounds on what TF_CONFIG and the settings may ask for (docs/trainer-runtime.md, "Limits").
constexpr std::size_t kMaxTfConfigBytes = 1 << 20;
constexpr std::int64_t kMaxAddresses = 10000;   // In all of TF_CONFIG; also bounds task.index.
constexpr double kMaxSeconds = 30 * 24 * 3600;  // Any duration setting: 30 days.
constexpr std::int64_t kMaxReplicasPerWorker = 64;
constexpr std::int64_t kMaxComputeThreads = 1024;
constexpr std::int64_t kMaxAllReduceBytes = std::int64_t{1} << 30;

absl::Status Invalid(const std::string& where, const std::string& message) {
  return absl::InvalidArgumentError(where + ": " + message);
}

absl::StatusOr<std::int64_t> ParseInt(const std::string& where, const std::string& value,
                                      std::int64_t min) {
  std::int64_t out = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
    return Invalid(where, "must be an integer, got \"" + value + "\"");
  }
  if (out < min) {
    return Invalid(where, "must be >= " + std::to_string(min) + ", got " + value);
  }
  return out;
}

// Seconds in [0, kMaxSeconds]: a number written in full (no spaces, no NaN or infinity); the
// bound keeps every wait representable as a std::chrono duration.
absl::StatusOr<double> ParseSeconds(const std::string& where, const std::string& value) {
  char* end = nullptr;
  const double out = value.empty() || std::isspace(static_cast<unsigned char>(value[0]))
                         ? std::nan("")
                         : std::strtod(value.c_str(), &end);
  if (end != value.c_str() + value.size() || !std::isfinite(out) || out < 0 || out > kMaxSeconds) {
    return Invalid(where, "must be a number of seconds in [0, " +
                              std::to_string(static_cast<std::int64_t>(kMaxSeconds)) + "], got \"" +
                              value + "\"");
  }
  return out;
}

absl::StatusOr<bool> ParseBool(const std::string& where, const std::string& value) {
  if (value == "1" || value == "true" || value == "True" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "False" || value == "no") return false;
  return Invalid(where, "must be true or false, got \"" + value + "\"");
}

// Stores the parsed value in `field`; an integer that does not fit the field's type is an error,
// never a silent narrowing.
template <class T, class Parsed>
absl::Status Store(const std::string& where, const Parsed& parsed, T& field) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<Parsed>) {
    if (!std::in_range<T>(parsed)) {
      return Invalid(where, "must be in [" + std::to_string(std::numeric_limits<T>::min()) + ", " +
                                std::to_string(std::numeric_limits<T>::max()) + "], got " +
                                std::to_string(parsed));
    }
  }
  field = static_cast<T>(parsed);
  return absl::OkStatus();
}

template <class T, class Parse>
Setting Make(std::string flag, std::string env, std::string help, Parse parse,
             T RuntimeConfig::*field) {
  return Setting{std::move(flag), std::move(env), std::move(help),
                 [parse, field](const std::string& where, const std::string& value,
                                RuntimeConfig& config) -> absl::Status {
                   auto parsed = parse(where, value);
                   if (!parsed.ok()) return parsed.status();
                   return Store(where, *parsed, config.*field);
                 }};
}

auto IntAtLeast(std::int64_t min) {
  return [min](const std::string& where, const std::string& value) {
    return ParseInt(where, value, min);
  };
}

auto IntInRange(std::int64_t min, std::int64_t max) {
  return [min, max](const std::string& where,
                    const std::string& value) -> absl::StatusOr<std::int64_t> {
    TAAS_ASSIGN_OR_RETURN(std::int64_t parsed, ParseInt(where, value, min));
    if (parsed > max) return Invalid(where, "must be <= " + std::to_string(max) + ", got " + value);
    return parsed;
  };
}

std::vector<Setting> Settings() {
  std::vector<Setting> s;
  s.push_back({"max_steps", std::string(contract::kMaxStepsEnv),
               "stop when the global step reaches this (10000)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 TAAS_ASSIGN_OR_RETURN(c.info.max_steps, ParseInt(w, v, 1));
                 return absl::OkStatus();
               }});
  s.push_back({"model_dir", std::string(contract::kModelDirEnv),
               "checkpoints and summaries (./taas-model)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 if (v.empty()) return Invalid(w, "must not be empty");
                 c.info.model_dir = v;
                 return absl::OkStatus();
               }});
  s.push_back({"termination_message_path", std::string(contract::kTerminationMessagePathEnv),
               "file where the chief leaves the job's final metrics (a pod's "
               "/dev/termination-log when it exists)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 if (v.empty() || v.size() > 4096) return Invalid(w, "must be a path");
                 c.termination_message_path = v;
                 return absl::OkStatus();
               }});
  s.push_back({"sync", std::string(contract::kSyncEnv),
               "synchronous replicas (false: asynchronous)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 TAAS_ASSIGN_OR_RETURN(c.info.sync, ParseBool(w, v));
                 return absl::OkStatus();
               }});
  s.push_back({"replicas_to_aggregate", std::string(contract::kReplicasToAggregateEnv),
               "gradients averaged per sync step (all training replicas)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 TAAS_ASSIGN_OR_RETURN(std::int64_t n, IntInRange(1, kMaxAddresses)(w, v));
                 c.info.replicas_to_aggregate = static_cast<int>(n);
                 return absl::OkStatus();
               }});
  s.push_back(Make("save_checkpoints_secs", "TF_SAVE_CHECKPOINTS_SECS",
                   "seconds between checkpoints, 0 = off (600)", ParseSeconds,
                   &RuntimeConfig::save_checkpoints_secs));
  s.push_back(Make("save_checkpoints_steps", "TAAS_SAVE_CHECKPOINTS_STEPS",
                   "global steps between checkpoints, 0 = off (0)", IntAtLeast(0),
                   &RuntimeConfig::save_checkpoints_steps));
  s.push_back(Make("keep_checkpoints", "TAAS_KEEP_CHECKPOINTS", "checkpoints kept (5)",
                   IntInRange(1, 100000), &RuntimeConfig::keep_checkpoints));
  s.push_back(Make("save_summaries_steps", "TF_SAVE_SUMMARIES_STEPS",
                   "global steps between TensorBoard summaries, 0 = off (100)", IntAtLeast(0),
                   &RuntimeConfig::save_summaries_steps));
  s.push_back(Make("save_summaries_secs", std::string(contract::kSaveSummariesSecsEnv),
                   "seconds between TensorBoard summaries, 0 = off; with steps too, whichever "
                   "comes first (0)",
                   ParseSeconds, &RuntimeConfig::save_summaries_secs));
  s.push_back({"summary_histograms", "TAAS_SUMMARY_HISTOGRAMS",
               "with each summary, a histogram of every variable (true)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 TAAS_ASSIGN_OR_RETURN(c.summary_histograms, ParseBool(w, v));
                 return absl::OkStatus();
               }});
  s.push_back(Make("log_steps", "TAAS_LOG_STEPS", "local steps between progress lines (10)",
                   IntAtLeast(1), &RuntimeConfig::log_steps));
  s.push_back(Make("wait_timeout_secs", "TAAS_WAIT_TIMEOUT_SECS",
                   "longest wait for a peer before exiting with the transient code (600)",
                   ParseSeconds, &RuntimeConfig::wait_timeout_secs));
  s.push_back(Make("stall_secs", "TAAS_STALL_SECS",
                   "seconds a wait for a peer lasts before it is logged and reported as a stall, "
                   "0 = off (30)",
                   ParseSeconds, &RuntimeConfig::stall_secs));
  s.push_back(Make("replica_incarnation", std::string(contract::kReplicaIncarnationEnv),
                   "which (re)creation of this replica's pod or process this is, set by the "
                   "operator and `taas run`: peers refuse an older one than they saw (0)",
                   IntAtLeast(0), &RuntimeConfig::replica_incarnation));
  s.push_back(Make("termination_grace_secs", std::string(contract::kTerminationGraceSecsEnv),
                   "seconds from SIGTERM within which the job's state is saved and the replica "
                   "exits; keep it under the pod's terminationGracePeriodSeconds (25)",
                   ParseSeconds, &RuntimeConfig::termination_grace_secs));
  s.push_back(Make("eval_interval_secs", "TAAS_EVAL_INTERVAL_SECS",
                   "evaluator's poll period for new checkpoints (5)", ParseSeconds,
                   &RuntimeConfig::eval_interval_secs));
  s.push_back({"eval_on_chief", "TAAS_EVAL_ON_CHIEF",
               "evaluate() on the chief: off, end (once training ends) or N (every N global "
               "steps and at the end) (off)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 if (v == "off" || v == "false") {
                   c.eval_on_chief = false;
                   c.eval_on_chief_steps = 0;
                   return absl::OkStatus();
                 }
                 if (v == "end" || v == "true") {
                   c.eval_on_chief = true;
                   c.eval_on_chief_steps = 0;
                   return absl::OkStatus();
                 }
                 auto steps = ParseInt(w, v, 1);
                 if (!steps.ok()) {
                   return Invalid(
                       w, "must be off, end or a number of global steps >= 1, got \"" + v + "\"");
                 }
                 c.eval_on_chief = true;
                 c.eval_on_chief_steps = *steps;
                 return absl::OkStatus();
               }});
  s.push_back({"predict_output", std::string(contract::kPredictOutputEnv),
               "predict instead of training: write the model's outputs to this .csv or .npy file",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 if (v.empty()) return Invalid(w, "must not be empty");
                 c.predict_output = v;
                 return absl::OkStatus();
               }});
  s.push_back({"predict_input", std::string(contract::kPredictInputEnv),
               "the files to predict on: patterns, comma-separated",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 c.predict_inputs.clear();
                 for (std::size_t start = 0; start <= v.size();) {
                   const std::size_t comma = std::min(v.find(',', start), v.size());
                   if (comma == start) return Invalid(w, "an empty pattern in \"" + v + "\"");
                   c.predict_inputs.push_back(v.substr(start, comma - start));
                   start = comma + 1;
                 }
                 return absl::OkStatus();
               }});
  s.push_back({"predict_checkpoint", std::string(contract::kPredictCheckpointEnv),
               "the checkpoint to predict with, a prefix such as DIR/model.ckpt-400 (the model "
               "dir's newest that verifies)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 if (v.empty()) return Invalid(w, "must not be empty");
                 c.predict_checkpoint = v;
                 return absl::OkStatus();
               }});
  s.push_back(Make("predict_batch_size", std::string(contract::kPredictBatchSizeEnv),
                   "examples per batch when predicting (100)", IntInRange(1, std::int64_t{1} << 20),
                   &RuntimeConfig::predict_batch_size));
  s.push_back(Make("evaluator_nice", "TAAS_EVALUATOR_NICE",
                   "CPU priority (nice) of the evaluator, e.g. 10 to put it below training on "
                   "shared cores (0: as started)",
                   IntInRange(0, 19), &RuntimeConfig::evaluator_nice));
  s.push_back(Make("partition_bytes", std::string(contract::kPartitionBytesEnv),
                   "variables at least this large are split across all PS (1048576)", IntAtLeast(4),
                   &RuntimeConfig::partition_bytes));
  s.push_back(Make("ps_lanes", std::string(contract::kPsLanesEnv),
                   "lanes (stores over their own connections) per PS task for large variables (2)",
                   IntInRange(1, 64), &RuntimeConfig::ps_lanes));
  s.push_back(Make("metrics_port", std::string(contract::kMetricsPortEnv),
                   "Prometheus metrics port, 0 = off (" +
                       std::to_string(contract::kDefaultMetricsPort) + " in Kubernetes, else 0)",
                   IntInRange(0, 65535), &RuntimeConfig::metrics_port));
  s.push_back(Make("ps_max_message_bytes", "TAAS_PS_MAX_MESSAGE_BYTES",
                   "largest gRPC message a PS or its client accepts (1073741824)",
                   IntInRange(1 << 20, 2147483647), &RuntimeConfig::ps_max_message_bytes));
  s.push_back({"strategy", std::string(contract::kStrategyEnv),
               "parameter_server or collective (all-reduce); default: collective when TF_CONFIG "
               "lists no ps, else parameter_server",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 const std::string ps = StrategyName(Strategy::kParameterServer);
                 const std::string collective = StrategyName(Strategy::kCollective);
                 if (v != ps && v != collective) {
                   return Invalid(w, "must be " + ps + " or " + collective + ", got \"" + v + "\"");
                 }
                 c.strategy_setting = v;
                 c.strategy_source = w;
                 return absl::OkStatus();
               }});
  s.push_back({"replicas_per_worker", std::string(contract::kReplicasPerWorkerEnv),
               "model replicas in each worker, each on its slice of the batch (collective "
               "training only; 1)",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 TAAS_ASSIGN_OR_RETURN(std::int64_t n, IntInRange(1, kMaxReplicasPerWorker)(w, v));
                 c.info.replicas_per_worker = static_cast<int>(n);
                 c.replicas_per_worker_set = true;
                 return absl::OkStatus();
               }});
  s.push_back({"device", std::string(contract::kDeviceEnv),
               "cpu or cuda; default: the CUDA devices visible to the process (one model replica "
               "per GPU under all-reduce) when there are any, else cpu",
               [](const std::string& w, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 if (v != "cpu" && v != "cuda") {
                   return Invalid(w, "must be cpu or cuda, got \"" + v + "\"");
                 }
                 c.device_setting = v;
                 c.device_source = w;
                 return absl::OkStatus();
               }});
  s.push_back(Make("compute_threads", std::string(contract::kComputeThreadsEnv),
                   "threads of each model replica's compute; 0 = the CPUs this process may use "
                   "(its cgroup's CPU limit, its affinity) shared among its model replicas (0)",
                   IntInRange(0, kMaxComputeThreads), &RuntimeConfig::compute_threads));
  s.push_back(Make("allreduce_bucket_bytes", std::string(contract::kAllReduceBucketBytesEnv),
                   "gradients per all-reduce (4194304)", IntInRange(4, kMaxAllReduceBytes),
                   &RuntimeConfig::allreduce_bucket_bytes));
  s.push_back(Make("allreduce_chunk_bytes", std::string(contract::kAllReduceChunkBytesEnv),
                   "piece of an all-reduce that pipelines around the ring (1048576)",
                   IntInRange(4096, kMaxAllReduceBytes), &RuntimeConfig::allreduce_chunk_bytes));
  s.push_back(Make("check_variables_steps", std::string(contract::kCheckVariablesStepsEnv),
                   "steps between checks that every worker holds the same variables, 0 = off "
                   "(1000)",
                   IntAtLeast(0), &RuntimeConfig::check_variables_steps));
  s.push_back({"job_name", std::string(contract::kJobNameEnv), "job name for log lines",
               [](const std::string&, const std::string& v, RuntimeConfig& c) -> absl::Status {
                 c.job_name = v;
                 return absl::OkStatus();
               }});
  return s;
}

std::optional<Role> RoleFromKey(const std::string& key) {
  if (key == "ps") return Role::kPs;
  if (key == "worker") return Role::kWorker;
  if (key == "chief" || key == "master") return Role::kChief;
  if (key == "evaluator") return Role::kEvaluator;
  return std::nullopt;
}

using json_fields::Json;

// A "host:port" string with a port in [1, 65535], or an error naming `field`.
absl::StatusOr<std::string> Address(const std::string& field, const Json& value) {
  if (!value.is_string()) {
    return Invalid(
        field, "must be a \"host:port\" string, got " + std::string(json_fields::TypeName(value)));
  }
  const std::string& address = value.get_ref<const std::string&>();
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      !IntInRange(1, 65535)(field, address.substr(colon + 1)).ok()) {
    return Invalid(field,
                   "must be \"host:port\" with a port in [1, 65535], got \"" + address + "\"");
  }
  return address;
}

// The addresses of `list` (a JSON array at `field`), counting them against the job's maximum.
absl::StatusOr<std::vector<std::string>> Addresses(const std::string& field, const Json& list,
                                                   std::size_t& total) {
  if (!list.is_array()) return Invalid(field, "must be a list of host:port addresses");
  total += list.size();
  if (total > static_cast<std::size_t>(kMaxAddresses)) {
    return Invalid(field,
                   "TF_CONFIG lists more than " + std::to_string(kMaxAddresses) + " addresses");
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    TAAS_ASSIGN_OR_RETURN(std::string address,
                          Address(field + "[" + std::to_string(i) + "]", list[i]));
    out.push_back(std::move(address));
  }
  return out;
}

// TF_CONFIG.task: its type and index (default 0), the index in [0, kMaxAddresses).
absl::StatusOr<std::pair<std::string, std::int64_t>> Task(const Json& j) {
  TAAS_ASSIGN_OR_RETURN(const Json* task, json_fields::OptionalObject(j, "task", "TF_CONFIG.task"));
  if (task == nullptr) {
    return Invalid("TF_CONFIG.task", "must be an object {\"type\": ..., \"index\": ...}");
  }
  TAAS_ASSIGN_OR_RETURN(auto type,
                        json_fields::OptionalString(*task, "type", "TF_CONFIG.task.type"));
  if (!type) return Invalid("TF_CONFIG.task.type", "must be a string");
  TAAS_ASSIGN_OR_RETURN(auto index,
                        json_fields::OptionalInt(*task, "index", "TF_CONFIG.task.index"));
  const std::int64_t value = index.value_or(0);
  if (value < 0 || value >= kMaxAddresses) {
    return Invalid("TF_CONFIG.task.index", "must be in [0, " + std::to_string(kMaxAddresses) +
                                               "), got " + std::to_string(value));
  }
  return std::pair{*type, value};
}

// Kubeflow's sparse form (enableDynamicWorker): a worker sees every PS and itself, a PS itself.
absl::Status ParseSparseTfConfig(const Json& j, RuntimeConfig& c) {
  const Json* sparse = json_fields::Object(j, "sparseCluster");
  if (sparse == nullptr) return Invalid("TF_CONFIG.sparseCluster", "must be an object");
  TAAS_ASSIGN_OR_RETURN(auto task, Task(j));
  const auto& [type, index] = task;
  std::size_t total = 0;
  std::vector<std::string> ps;
  if (const Json* list = json_fields::Find(*sparse, "ps")) {
    TAAS_ASSIGN_OR_RETURN(ps, Addresses("TF_CONFIG.sparseCluster.ps", *list, total));
  }
  c.info.task_index = static_cast<int>(index);
  c.dynamic_workers = true;
  if (type == "ps") {
    if (ps.size() != 1) {
      return Invalid("TF_CONFIG.sparseCluster.ps", "a PS must see exactly its own address");
    }
    c.info.role = Role::kPs;
    c.listen_address = ps[0];
    return absl::OkStatus();
  }
  if (type != "worker") {
    return Invalid("TF_CONFIG.task.type",
                   "a sparse TF_CONFIG (enableDynamicWorker) has only "
                   "worker and ps tasks, got \"" +
                       type + "\"");
  }
  const std::string self = std::to_string(index);
  const Json* workers = json_fields::Object(*sparse, "worker");
  const Json* own = workers ? json_fields::Find(*workers, self) : nullptr;
  if (own == nullptr) {
    return Invalid("TF_CONFIG.sparseCluster.worker." + self, "must hold this worker's address");
  }
  TAAS_ASSIGN_OR_RETURN(c.listen_address, Address("TF_CONFIG.sparseCluster.worker." + self, *own));
  if (ps.empty())
    return Invalid("TF_CONFIG.sparseCluster.ps", "needs at least one parameter server");
  c.info.role = Role::kWorker;
  c.info.is_chief = index == 0;
  c.info.worker_rank = static_cast<int>(index);
  c.ps_addresses = ps;
  // Other workers are unknown; this worker's rank + 1 is what is known of their number (the
  // index is below kMaxAddresses, so this list is too).
  c.worker_addresses.assign(static_cast<std::size_t>(index) + 1, "");
  c.worker_addresses.back() = c.listen_address;
  return absl::OkStatus();
}

absl::Status ParseTfConfig(const std::string& text, RuntimeConfig& c) {
  if (text.size() > kMaxTfConfigBytes) {
    return Invalid(std::string(contract::kTfConfigEnv),
                   "is " + std::to_string(text.size()) + " bytes, more than the " +
                       std::to_string(kMaxTfConfigBytes) + " allowed");
  }
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Invalid(std::string(contract::kTfConfigEnv), "is not valid JSON");
  if (!j.is_object()) return Invalid(std::string(contract::kTfConfigEnv), "must be a JSON object");
  if (!j.contains("cluster") && j.contains("sparseCluster")) return ParseSparseTfConfig(j, c);
  const Json* cluster_json = json_fields::Object(j, "cluster");
  if (cluster_json == nullptr) {
    return Invalid("TF_CONFIG.cluster", "must be an object mapping replica types to addresses");
  }
  std::map<std::string, std::vector<std::string>> cluster;
  std::size_t total = 0;
  for (const auto& [key, hosts] : cluster_json->items()) {
    std::string field = "TF_CONFIG.cluster." + key;
    if (!RoleFromKey(key)) {
      return Invalid(field, "unknown replica type (expected chief, master, worker, ps, evaluator)");
    }
    TAAS_ASSIGN_OR_RETURN(cluster[key], Addresses(field, hosts, total));
  }
  if (cluster.count("chief") && cluster.count("master")) {
    return Invalid("TF_CONFIG.cluster", "has both chief and master; use one");
  }
  for (const char* key : {"chief", "master"}) {
    if (cluster.count(key) && cluster[key].size() != 1) {
      return Invalid(std::string("TF_CONFIG.cluster.") + key,
                     "must have exactly 1 replica, got " + std::to_string(cluster[key].size()));
    }
  }
  TAAS_ASSIGN_OR_RETURN(auto task, Task(j));
  const auto& [type, index] = task;
  auto role = RoleFromKey(type);
  if (!role) return Invalid("TF_CONFIG.task.type", "unknown replica type \"" + type + "\"");
  if (!cluster.count(type)) {
    return Invalid("TF_CONFIG.task.type", "\"" + type + "\" is not in TF_CONFIG.cluster");
  }
  if (index >= static_cast<std::int64_t>(cluster[type].size())) {
    return Invalid("TF_CONFIG.task.index",
                   std::to_string(index) + " is out of range for TF_CONFIG.cluster." + type + " (" +
                       std::to_string(cluster[type].size()) + " replicas)");
  }
  c.info.role = *role;
  c.info.task_index = static_cast<int>(index);
  c.replica_name = PeerName(type, static_cast<int>(index));
  c.listen_address = cluster[type][static_cast<std::size_t>(index)];
  c.ps_addresses = cluster["ps"];
  const bool has_chief = cluster.count("chief") || cluster.count("master");
  for (const char* key : {"chief", "master", "worker"}) {
    const auto& addresses = cluster[key];
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      c.worker_addresses.push_back(addresses[i]);
      c.worker_names.push_back(PeerName(key, static_cast<int>(i)));
    }
  }
  c.info.is_chief = *role == Role::kChief || (!has_chief && *role == Role::kWorker && index == 0);
  if (*role == Role::kWorker) c.info.worker_rank = static_cast<int>(index) + (has_chief ? 1 : 0);
  if (c.info.role != Role::kEvaluator) {
    if (c.worker_addresses.empty()) {
      return Invalid("TF_CONFIG.cluster.worker", "needs at least one chief or worker");
    }
  }
  return absl::OkStatus();
}

// A token file's contents: exactly the hex of contract::kTokenBytes, one trailing newline allowed.
absl::StatusOr<std::string> ParseToken(const std::string& where, std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  const bool hex = text.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  if (text.size() != 2 * contract::kTokenBytes || !hex) {
    return Invalid(where, "must name a file holding " + std::to_string(2 * contract::kTokenBytes) +
                              " hex characters (the job's token), got " +
                              std::to_string(text.size()) + " characters" +
                              (hex ? "" : " that are not all hex"));
  }
  return text;
}

// The token in the file that `env_name` names; "" when unset and `needed_by` is empty.
absl::StatusOr<std::string> ReadToken(const std::map<std::string, std::string>& env,
                                      std::string_view env_name, const std::string& needed_by) {
  const std::string where(env_name);
  auto it = env.find(where);
  if (it == env.end() || it->second.empty()) {
    if (needed_by.empty()) return std::string();
    return Invalid(where, "not set: " + needed_by +
                              " needs this token file (the operator mounts it from the Secret "
                              "<job>" +
                              std::string(contract::kJobSecretSuffix) +
                              ", `taas run` writes one per run)");
  }
  std::ifstream file(it->second, std::ios::binary);
  if (!file) return Invalid(where, "cannot read " + it->second);
  // One byte more than a token and its newline tells a larger file apart without reading it all.
  std::string text(2 * contract::kTokenBytes + 2, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(file.gcount()));
  return ParseToken(where + " (" + it->second + ")", std::move(text));
}

// The strategy: TF_CONFIG's (no `ps` means collective) unless a setting chose; a setting that
// contradicts TF_CONFIG is an error naming both. Collective training is synchronous over every
// training replica.
absl::Status ChooseStrategy(const std::string& replicas_source, RuntimeConfig& c) {
  const std::string& chosen = c.strategy_setting;
  const std::string setting = c.strategy_source + "=" + chosen;
  if (c.local) {
    // Alone, several model replicas ask for all-reduce among them (Kubeflow gives a job of one
    // worker no TF_CONFIG).
    const bool collective = chosen.empty() ? c.info.replicas_per_worker > 1
                                           : chosen == StrategyName(Strategy::kCollective);
    c.info.strategy = collective ? Strategy::kCollective : Strategy::kParameterServer;
  } else if (c.ps_addresses.empty()) {
    if (chosen == StrategyName(Strategy::kParameterServer)) {
      return Invalid(setting,
                     "contradicts TF_CONFIG.cluster, which lists no ps: add PS replicas "
                     "to the TFJob or drop the setting (all-reduce needs none)");
    }
    c.info.strategy = Strategy::kCollective;
  } else {
    if (chosen == StrategyName(Strategy::kCollective)) {
      return Invalid(setting, "contradicts TF_CONFIG.cluster.ps, which lists " +
                                  std::to_string(c.ps_addresses.size()) +
                                  " parameter server(s): remove the PS replicas from the TFJob "
                                  "or drop the setting");
    }
    c.info.strategy = Strategy::kParameterServer;
  }
  if (c.info.strategy == Strategy::kParameterServer) {
    if (c.info.replicas_per_worker > 1) {
      return Invalid(std::string(contract::kReplicasPerWorkerEnv),
                     "several model replicas per worker need collective training (a TFJob "
                     "without PS replicas)");
    }
    return absl::OkStatus();
  }
  if (!replicas_source.empty() && c.info.replicas_to_aggregate != c.info.num_workers) {
    return Invalid(replicas_source,
                   "only parameter-server training aggregates some of the replicas; all-reduce "
                   "averages every worker's gradients each step: drop the setting");
  }
  c.info.sync = true;
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadSecrets(const std::map<std::string, std::string>& env, RuntimeConfig& c) {
  if (auto it = env.find(std::string(contract::kPodIpEnv));
      it != env.end() && !it->second.empty()) {
    unsigned char ignored[sizeof(in6_addr)];
    if (::inet_pton(AF_INET, it->second.c_str(), ignored) != 1 &&
        ::inet_pton(AF_INET6, it->second.c_str(), ignored) != 1) {
      return Invalid(std::string(contract::kPodIpEnv),
                     "must be an IP address (the pod's status.podIP), got \"" + it->second + "\"");
    }
    c.pod_ip = it->second;
  }
  if (c.local) return absl::OkStatus();
  const bool needs_chief = c.info.is_chief || c.info.role == Role::kPs;
  TAAS_ASSIGN_OR_RETURN(c.job_token,
                        ReadToken(env, contract::kJobTokenFileEnv, "every distributed replica"));
  TAAS_ASSIGN_OR_RETURN(c.chief_token, ReadToken(env, contract::kChiefTokenFileEnv,
                                                 needs_chief ? "the chief and the PS" : ""));
  return absl::OkStatus();
}

std::string RoleName(Role role) {
  switch (role) {
    case Role::kPs:
      return "ps";
    case Role::kWorker:
      return "worker";
    case Role::kChief:
      return "chief";
    case Role::kEvaluator:
      return "evaluator";
  }
  return "unknown";
}

std::string StrategyName(Strategy strategy) {
  return std::string(strategy == Strategy::kCollective ? contract::kCollectiveStrategy
                                                       : contract::kParameterServerStrategy);
}

absl::StatusOr<DeviceChoice> ChooseDevices(const RuntimeConfig& config, int cuda_devices) {
  const TrainerInfo& info = config.info;
  const bool collective_trainer =
      info.strategy == Strategy::kCollective && info.role != Role::kEvaluator;
  const int replicas = collective_trainer ? info.replicas_per_worker : 1;
  const std::string visible =
      (config.nvidia_visible_devices.empty() ? std::string()
                                             : std::string(contract::kNvidiaVisibleDevicesEnv) +
                                                   "=" + config.nvidia_visible_devices + ", ") +
      std::string(contract::kCudaVisibleDevicesEnv) + "=" + config.cuda_visible_devices;
  DeviceChoice choice;
  if (info.role == Role::kPs) {
    choice.devices = {Device::Cpu()};
    choice.chosen_by = "parameter server";
    return choice;
  }
  const std::string setting = config.device_source + "=" + config.device_setting;
  if (config.device_setting == "cpu" || (config.device_setting.empty() && cuda_devices <= 0)) {
    choice.devices.assign(static_cast<std::size_t>(replicas), Device::Cpu());
    choice.chosen_by = !config.device_setting.empty() ? setting
                       : cuda_devices < 0             ? "built without CUDA"
                                                      : "no CUDA device visible (" + visible + ")";
    return choice;
  }
  if (cuda_devices <= 0) {
    return absl::FailedPreconditionError(
        setting + ": no CUDA device is visible to this process (" + visible + ")" +
        (cuda_devices < 0 ? ", and this trainer was built without CUDA (TAAS_WITH_CUDA)" : "") +
        ": give the replica GPUs (resources.limits nvidia.com/gpu in its TFJob replica spec; "
        "NVIDIA's device plugin then sets " +
        std::string(contract::kNvidiaVisibleDevicesEnv) + ") or set " +
        std::string(contract::kDeviceEnv) + "=cpu");
  }
  int gpus = 1;
  if (collective_trainer) {
    gpus = config.replicas_per_worker_set ? info.replicas_per_worker : cuda_devices;
    if (gpus > cuda_devices) {
      return absl::FailedPreconditionError(
          std::string(contract::kReplicasPerWorkerEnv) + ": " + std::to_string(gpus) +
          " model replicas, but " + std::to_string(cuda_devices) + " CUDA device(s) are visible (" +
          visible + "): one replica per GPU; lower it, or give the replica more GPUs");
    }
  }
  for (int g = 0; g < gpus; ++g) choice.devices.push_back(Device{DeviceType::kCuda, g});
  choice.chosen_by =
      (config.device_setting.empty() ? std::string("visible CUDA devices") : setting) + " (" +
      visible + ", " + std::to_string(cuda_devices) + " visible" +
      (gpus < cuda_devices ? ", " + std::to_string(gpus) + " used" : "") + ")";
  return choice;
}

ComputeThreadsChoice ChooseComputeThreads(const RuntimeConfig& config, const AvailableCpus& cpus) {
  if (config.compute_threads > 0) {
    return {config.compute_threads, std::string(contract::kComputeThreadsEnv)};
  }
  const int replicas =
      config.info.strategy == Strategy::kCollective ? config.info.replicas_per_worker : 1;
  return {std::max(1, cpus.cpus / std::max(1, replicas)), cpus.limited_by};
}

std::string HelpText() {
  std::string out = "Settings (flag --name=value, or the environment variable):\n";
  for (const auto& s : Settings()) out += "  --" + s.flag + " / " + s.env + ": " + s.help + "\n";
  out += "  TF_CONFIG: Kubeflow's cluster/task JSON; absent = one local process with its own PS\n";
  out += "Arguments after -- are passed to the model.\n";
  return out;
}

absl::StatusOr<RuntimeConfig> ParseConfig(const std::vector<std::string>& args,
                                          const std::map<std::string, std::string>& env) {
  RuntimeConfig c;
  c.info.max_steps = 10000;
  c.info.model_dir = "taas-model";
  // In a pod the port the operator declares and the UI scrapes; a local process serves none.
  if (env.count("KUBERNETES_SERVICE_HOST")) c.metrics_port = contract::kDefaultMetricsPort;
  const std::vector<Setting> settings = Settings();

  for (const auto& s : settings) {
    auto it = env.find(s.env);
    if (it != env.end()) TAAS_RETURN_IF_ERROR(s.apply(s.env, it->second, c));
  }
  // Only for messages; a hostile value cannot make them unbounded.
  if (auto it = env.find(std::string(contract::kCudaVisibleDevicesEnv)); it != env.end()) {
    c.cuda_visible_devices = "\"" + it->second.substr(0, 128) + "\"";
  }
  if (auto it = env.find(std::string(contract::kNvidiaVisibleDevicesEnv)); it != env.end()) {
    c.nvidia_visible_devices = "\"" + it->second.substr(0, 128) + "\"";
  }
  std::string replicas_source = env.count(std::string(contract::kReplicasToAggregateEnv))
                                    ? std::string(contract::kReplicasToAggregateEnv)
                                    : "";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      c.info.args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (arg.rfind("--", 0) != 0) {
      return Invalid(arg, "unexpected argument (the model's own arguments go after --)");
    }
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Setting* found = nullptr;
    for (const auto& s : settings) {
      if (s.flag == name) found = &s;
    }
    if (!found) return Invalid("--" + name, "unknown flag; see --help");
    if (!has_value) {
      if (name == "sync") {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Invalid("--" + name, "needs a value");
      }
    }
    TAAS_RETURN_IF_ERROR(found->apply("--" + name, value, c));
    if (name == "replicas_to_aggregate") replicas_source = "--replicas_to_aggregate";
  }

  auto tf_config = env.find(std::string(contract::kTfConfigEnv));
  if (tf_config == env.end() || tf_config->second.empty()) {
    c.local = true;
    c.info.role = Role::kChief;
    c.info.is_chief = true;
    c.info.task_index = 0;
    c.worker_addresses = {"local"};
  } else {
    TAAS_RETURN_IF_ERROR(ParseTfConfig(tf_config->second, c));
  }
  if (!c.predict_output.empty()) {
    if (c.predict_inputs.empty()) {
      return Invalid(std::string(contract::kPredictInputEnv),
                     "predicting (" + std::string(contract::kPredictOutputEnv) +
                         " is set) needs the input files");
    }
    // Predicting is one process that scores, as an evaluator does, whatever its TF_CONFIG says.
    c.info.role = Role::kEvaluator;
    c.info.is_chief = false;
    c.info.predicting = true;
  } else if (!c.predict_inputs.empty() || !c.predict_checkpoint.empty()) {
    return Invalid(std::string(contract::kPredictOutputEnv),
                   "the predict settings need the output file too");
  }
  c.info.num_ps = static_cast<int>(c.ps_addresses.size());
  c.info.num_workers = static_cast<int>(c.worker_addresses.size());
  if (c.dynamic_workers && c.info.sync) {
    return Invalid(replicas_source.empty() ? std::string(contract::kSyncEnv) : replicas_source,
                   "synchronous training needs the whole cluster, but TF_CONFIG is sparse "
                   "(enableDynamicWorker): use asynchronous training");
  }
  TAAS_RETURN_IF_ERROR(ChooseStrategy(replicas_source, c));
  if (replicas_source.empty()) {
    // Every training replica, and at least one: an evaluator's TF_CONFIG may list none (it scores
    // the checkpoints of a model dir other replicas, or another job, write).
    c.info.replicas_to_aggregate = std::max(1, c.info.num_workers);
  } else if (c.info.replicas_to_aggregate > c.info.num_workers) {
    return Invalid(replicas_source, std::to_string(c.info.replicas_to_aggregate) + " exceeds the " +
                                        std::to_string(c.info.num_workers) +
                                        " training replicas (chief + workers)");
  }
  return c;
}

absl::StatusOr<RuntimeConfig> ConfigFromProcess(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string key = entry.substr(0, eq);
    if (key == contract::kTfConfigEnv || key == "KUBERNETES_SERVICE_HOST" ||
        key == contract::kCudaVisibleDevicesEnv || key == contract::kNvidiaVisibleDevicesEnv ||
        key.rfind("TF_", 0) == 0 || key.rfind("TAAS_", 0) == 0) {
      env[key] = entry.substr(eq + 1);
    }
  }
  TAAS_ASSIGN_OR_RETURN(RuntimeConfig config, ParseConfig(args, env));
  TAAS_RETURN_IF_ERROR(ReadSecrets(env, config));
  return config;
}

}  // namespace taas::config
