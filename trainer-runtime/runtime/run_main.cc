#include <arpa/inet.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "exit_code.h"
#include "internal.h"
#include "taas/base/cpus.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/ps/server.h"
#include "taas/tensor/device.h"
#include "termination.h"

namespace taas {
namespace runtime {
namespace {

std::uint64_t NewIncarnation() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// The PS's settings from the config: its tokens, pod IP, lanes and limits (taas/ps/server.h).
ps::PsServerOptions ServerOptions(const config::RuntimeConfig& cfg, const std::string& address) {
  ps::PsServerOptions o;
  o.address = address;
  o.pod_ip = cfg.pod_ip;
  o.lanes = cfg.ps_lanes;
  o.tokens = {cfg.job_token, cfg.chief_token};
  o.limits.max_message_bytes = cfg.ps_max_message_bytes;
  o.limits.read_timeout_secs = cfg.wait_timeout_secs;
  return o;
}

// Creates the replica's termination message file (empty; a report left by an earlier run of the
// replica stays) when TAAS_TERMINATION_MESSAGE_PATH names one: the sign that a taas trainer ran,
// so `taas run` warns of a missing report only for a trainer, not for a plain command. A pod's
// /dev/termination-log exists anyway; a file that cannot be created is a warning.
void MarkTrainerStarted(const Context& ctx) {
  const std::string& path = ctx.config->termination_message_path;
  if (path.empty()) return;
  std::ofstream file(path, std::ios::app);
  if (!file) ctx.logger.Warning("cannot create the termination message file", {{"path", path}});
}

// The stall watch of a replica that waits on peers (TAAS_STALL_SECS; none when 0), reporting on
// the metrics page: taas_stall_seconds{peer="ps-0"} while a stall lasts, and the stalled seconds
// so far.
std::unique_ptr<StallWatch> WatchStalls(Context& ctx) {
  const config::RuntimeConfig& cfg = *ctx.config;
  if (cfg.stall_secs <= 0 || cfg.info.role == Role::kPs) return nullptr;
  metrics::Gauges* gauges = ctx.gauges;
  gauges->DescribeCounter(
      contract::kStalledSecondsTotalMetric,
      "Seconds this replica waited on peers in waits longer than TAAS_STALL_SECS");
  gauges->Set(contract::kStalledSecondsTotalMetric, 0);
  StallSchedule schedule;
  schedule.threshold = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.stall_secs * 1000));
  return std::make_unique<StallWatch>(
      ctx.logger, schedule,
      [gauges](const StallState& state) {
        std::vector<metrics::Gauges::Sample> current;
        if (state.current) {
          current.push_back({{{std::string(contract::kStallPeerLabel), state.current->peer}},
                             state.current->seconds});
        }
        gauges->SetLabeled(contract::kStallSecondsMetric,
                           "Seconds this replica has waited on the peer (a stall) so far", current);
        gauges->Set(contract::kStalledSecondsTotalMetric, state.stalled_seconds_total);
      },
      &ctx.global_step);
}

// How often a PS looks at its step and at a termination signal.
constexpr double kPsPollSecs = 0.25;

// A PS that got SIGTERM (or SIGINT) serves on, so that the chief can snapshot it, until the chief
// said it saved the job's state, or until the grace is over (DecidePsTermination).
int ServeUntilSaved(Context& ctx, ps::PsServer& server, const TerminationDeadline& deadline) {
  const auto step = [&server] { return server.store().GetStatus().step; };
  const std::string signal(TerminationSignalName(deadline.request().signal));
  ctx.logger.Info("terminating: serving until the chief saved the job's state",
                  {{"signal", signal},
                   {"global_step", step()},
                   {"deadline_secs", deadline.SecondsLeft(std::chrono::steady_clock::now())}});
  PsTermination decision = PsTermination::kServe;
  while (decision == PsTermination::kServe) {
    const ps::ParameterStore::Status status = server.store().GetStatus();
    const bool exit_requested = server.WaitForExitRequest(0);
    decision =
        DecidePsTermination({deadline, std::chrono::steady_clock::now(), status.step,
                             status.initialized, exit_requested, server.LastSavedCheckpoint()});
    if (decision == PsTermination::kServe) server.WaitForExitRequest(kPsPollSecs / 5);
  }
  const double waited = deadline.SecondsSinceSignal(std::chrono::steady_clock::now());
  ctx.logger.Info("terminating: done waiting", {{"waited_for", "the chief's save"},
                                                {"outcome", DescribePsTermination(decision)},
                                                {"waited_secs", waited},
                                                {"global_step", step()}});
  if (decision == PsTermination::kExitTrainingDone) {
    ctx.logger.Info("parameter server exiting: training is done");
    return kExitOk;
  }
  return ExitTerminated(ctx, deadline, step(), std::string(DescribePsTermination(decision)));
}

}  // namespace

std::optional<TerminationDeadline> TerminationRequested(const Context& ctx) {
  if (ctx.termination == nullptr) return std::nullopt;
  const std::optional<TerminationRequest> request = ctx.termination->Requested();
  if (!request) return std::nullopt;
  return TerminationDeadline(*request,
                             std::chrono::duration<double>(ctx.config->termination_grace_secs));
}

int ExitTerminated(const Context& ctx, const TerminationDeadline& deadline,
                   std::int64_t global_step, const std::string& what) {
  const std::string signal(TerminationSignalName(deadline.request().signal));
  const double since = deadline.SecondsSinceSignal(std::chrono::steady_clock::now());
  return Exit(ctx.logger, global_step, FailureSource::kTerminated, "terminated by " + signal,
              absl::CancelledError(DescribeTermination(what, signal, since)));
}

std::string BindHost(const config::RuntimeConfig& cfg) {
  if (cfg.local) return "127.0.0.1";
  std::string host = cfg.listen_address.substr(0, cfg.listen_address.rfind(':'));
  in_addr ignored;
  return ::inet_pton(AF_INET, host.c_str(), &ignored) == 1 ? host : "0.0.0.0";
}

int RunParameterServer(Context& ctx) {
  const std::uint64_t incarnation = NewIncarnation();
  auto server = ps::PsServer::Start(ServerOptions(*ctx.config, ctx.config->listen_address),
                                    incarnation, ctx.logger);
  if (!server.ok()) {
    return Exit(ctx.logger, 0, FailureSource::kServer, "parameter server cannot start",
                server.status());
  }
  ctx.logger.Info(
      "parameter server listening, waiting for the chief to initialise variables",
      {{"address", ctx.config->listen_address}, {"incarnation", std::to_string(incarnation)}});
  while (!(*server)->WaitForExitRequest(kPsPollSecs)) {
    ctx.global_step = (*server)->store().GetStatus().step;
    ctx.gauges->Set(contract::kGlobalStepMetric, static_cast<double>(ctx.global_step));
    if (auto deadline = TerminationRequested(ctx)) {
      return ServeUntilSaved(ctx, **server, *deadline);
    }
  }
  // Give workers a moment to fetch the final values before the port closes.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  (*server)->Stop();
  ctx.logger.Info("parameter server exiting: training is done");
  return kExitOk;
}

std::string ChooseAndPrepareDevices(config::RuntimeConfig& cfg, const Logger& logger,
                                    std::vector<metrics::Gauges::Labels>* reported) {
  // TAAS_DEVICE=cpu asks nothing of CUDA: a node whose driver is broken still runs CPU jobs.
  DeviceMemory* cuda = MemoryFor(DeviceType::kCuda);
  absl::StatusOr<int> cuda_devices =
      cuda == nullptr ? -1 : (cfg.device_setting == "cpu" ? 0 : cuda->DeviceCount());
  if (!cuda_devices.ok()) {
    Exit(logger, 0, FailureSource::kConfig, "cannot count the CUDA devices", cuda_devices.status());
    return "";
  }
  auto choice = config::ChooseDevices(cfg, *cuda_devices);
  if (!choice.ok()) {
    Exit(logger, 0, FailureSource::kConfig, "no device for the model replicas", choice.status());
    return "";
  }
  return PrepareDevices(cfg, *choice, logger, reported);
}

std::string PrepareDevices(config::RuntimeConfig& cfg, const config::DeviceChoice& choice,
                           const Logger& logger, std::vector<metrics::Gauges::Labels>* reported) {
  std::string line;
  for (const Device& device : choice.devices) {
    std::string described = DeviceName(device);
    if (!device.is_cpu()) {
      DeviceMemory* memory = MemoryFor(device.type);
      auto prepared = memory != nullptr
                          ? memory->Prepare(device)
                          : absl::StatusOr<std::string>(absl::FailedPreconditionError(
                                DeviceName(device) + ": no engine for it is part of this binary"));
      if (!prepared.ok()) {
        Exit(logger, 0, FailureSource::kConfig, "device cannot be used", prepared.status());
        return "";
      }
      described = *prepared;
    }
    // Prepare names the device first ("cuda:0 NVIDIA H100 ..."); the label keeps the rest.
    const std::string id = DeviceName(device);
    std::string name = device.is_cpu() ? std::string() : described;
    if (name.rfind(id + " ", 0) == 0) name.erase(0, id.size() + 1);
    if (reported != nullptr) {
      reported->push_back({{std::string(contract::kDeviceLabel), id},
                           {std::string(contract::kDeviceNameLabel), std::move(name)}});
    }
    // A CPU replica's line is its name alone: several say "cpu" once.
    if (line.find(described) == std::string::npos || !device.is_cpu()) {
      line += (line.empty() ? "" : "; ") + described;
    }
  }
  cfg.devices = choice.devices;
  cfg.info.device = cfg.devices.front();
  if (cfg.info.strategy == Strategy::kCollective && cfg.info.role != Role::kEvaluator &&
      cfg.info.role != Role::kPs) {
    cfg.info.replicas_per_worker = static_cast<int>(cfg.devices.size());
  }
  return line + " (" + choice.chosen_by + ")";
}

// Everything after the configuration: metrics, then the role's driver.
int RunRole(Context& ctx, config::RuntimeConfig& cfg) {
  const auto& info = cfg.info;
  // Before any thread starts: threads inherit their creator's priority.
  const int nice = info.role == Role::kEvaluator ? YieldCoresToTraining(cfg, ctx.logger)
                                                 : ::getpriority(PRIO_PROCESS, 0);
  metrics::Gauges gauges;
  gauges.Describe(contract::kGlobalStepMetric, "Global training step this replica last saw");
  gauges.Describe(contract::kLossMetric, "Loss of this replica's last training step");
  gauges.Describe(contract::kExamplesPerSecondMetric,
                  "Training examples per second on this replica");
  gauges.Describe(contract::kLearningRateMetric, "Learning rate at the current global step");
  gauges.Describe(contract::kEvalAccuracyMetric, "Accuracy of the evaluator's last evaluation");
  gauges.Describe(contract::kMaxStepsMetric, "The global step training ends at");
  gauges.Set(contract::kMaxStepsMetric, static_cast<double>(info.max_steps));
  ctx.gauges = &gauges;
  const std::unique_ptr<StallWatch> stalls = WatchStalls(ctx);
  ctx.stalls = stalls.get();
  std::unique_ptr<metrics::MetricsServer> metrics_server;
  if (cfg.metrics_port > 0) {
    auto server = metrics::MetricsServer::Start(BindHost(cfg), cfg.metrics_port, &gauges);
    if (!server.ok()) {
      return Exit(ctx.logger, 0, FailureSource::kServer, "metrics endpoint cannot start",
                  server.status());
    }
    metrics_server = std::move(*server);
  }
  // The devices, before the compute threads (shared among the replicas) and any model.
  std::vector<metrics::Gauges::Labels> reported;
  const std::string devices = ChooseAndPrepareDevices(cfg, ctx.logger, &reported);
  if (cfg.devices.empty()) return kExitBadConfig;  // the one line is logged
  // What the UI's job page shows per replica (web-ui/server/metrics.h, DeviceBook).
  gauges.SetInfo(contract::kReplicaDeviceInfoMetric, "Each model replica's device (value 1)",
                 reported);
  // Before the model is built: build_model may override the choice (nn::SetComputeThreads).
  const config::ComputeThreadsChoice threads =
      config::ChooseComputeThreads(cfg, ReadAvailableCpus());
  SetHostComputeThreads(threads.threads);
  const char* wait_policy = std::getenv(std::string(contract::kOmpWaitPolicyEnv).c_str());
  ctx.logger.Info("starting", {{"max_steps", info.max_steps},
                               {"strategy", config::StrategyName(info.strategy)},
                               {"model_dir", info.model_dir},
                               {"sync", info.sync},
                               {"replicas_to_aggregate", info.replicas_to_aggregate},
                               {"replicas_per_worker", info.replicas_per_worker},
                               {"devices", devices},
                               {"workers", info.num_workers},
                               {"ps", info.num_ps},
                               {"chief", info.is_chief},
                               {"metrics_port", cfg.metrics_port},
                               {"nice", nice},
                               {"compute_threads", threads.threads},
                               {"compute_threads_from", threads.chosen_by},
                               {"omp_wait_policy", wait_policy ? wait_policy : "unset"}});
  if (info.predicting) return RunPredict(ctx);
  switch (info.role) {
    case Role::kPs:
      return RunParameterServer(ctx);
    case Role::kEvaluator:
      return RunEvaluator(ctx);
    case Role::kWorker:
    case Role::kChief:
      break;
  }
  if (info.strategy == Strategy::kCollective) return RunCollectiveTrainer(ctx);
  if (!cfg.local) return RunTrainer(ctx, cfg.ps_addresses);
  // No TF_CONFIG: one process with its own in-process parameter server on loopback, with tokens
  // that only this process knows.
  auto tokens = ps::NewTokens();
  if (!tokens.ok()) {
    return Exit(ctx.logger, 0, FailureSource::kServer, "in-process parameter server cannot start",
                tokens.status());
  }
  cfg.job_token = tokens->job;
  cfg.chief_token = tokens->chief;
  auto server =
      ps::PsServer::Start(ServerOptions(cfg, "127.0.0.1:0"), NewIncarnation(), ctx.logger);
  if (!server.ok()) {
    return Exit(ctx.logger, 0, FailureSource::kServer, "in-process parameter server cannot start",
                server.status());
  }
  return RunTrainer(ctx, {"127.0.0.1:" + std::to_string((*server)->port())});
}

}  // namespace runtime

int RunMain(int argc, char** argv, std::function<std::unique_ptr<DistModel>()> factory) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") break;
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::printf("usage: %s [--setting=value...] [-- model arguments]\n%s", argv[0],
                  config::HelpText().c_str());
      return kExitOk;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  using runtime::FailureSource;
  runtime::Context ctx;
  // Nothing escapes: an exception the drivers did not turn into a Status (model code runs inside
  // CallModel) still exits permanently with one line, never with abort's 134.
  try {
    auto cfg = config::ConfigFromProcess(argc, argv);
    if (!cfg.ok()) {
      return runtime::Exit(ctx.logger, 0, FailureSource::kConfig, "invalid configuration",
                           cfg.status());
    }
    Logger base;
    if (!cfg->job_name.empty()) base = base.With({{"job", cfg->job_name}});
    ctx.config = &*cfg;
    ctx.logger =
        base.With({{"role", config::RoleName(cfg->info.role)}, {"index", cfg->info.task_index}});
    ctx.factory = std::move(factory);
    // Before any thread starts; a process that cannot handle them still trains, and dies of
    // SIGTERM as before.
    auto termination = TerminationSignals::Install();
    if (termination.ok()) {
      ctx.termination = termination->get();
    } else {
      ctx.logger.Warning("SIGTERM ends this replica without a checkpoint",
                         {{"error", std::string(termination.status().message())}});
    }
    runtime::MarkTrainerStarted(ctx);
    return runtime::RunRole(ctx, *cfg);
  } catch (...) {
    return runtime::Exit(ctx.logger, ctx.global_step, FailureSource::kModel, "uncaught exception",
                         runtime::StatusFromCurrentException("the trainer"));
  }
}

}  // namespace taas
