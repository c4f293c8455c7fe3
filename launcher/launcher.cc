#include "launcher.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "binary_locator.h"
#include "job_loop.h"
#include "job_secret_files.h"
#include "local_job_source.h"
#include "local_job_state.h"
#include "manifest.h"
#include "processes.h"
#include "replica_env.h"
#include "taas/base/cpus.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/contract/ports.h"
#include "taas/http/client.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_server/metrics.h"
#include "taas/ui_server/ui_server.h"

extern char** environ;

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

std::atomic<int> g_signal{0};  // Set by the SIGINT/SIGTERM handler; read by the main loop.

void OnSignal(int sig) { g_signal = sig; }

// Output of every replica goes through here, one whole line at a time.
class Console {
 public:
  void Line(const std::string& prefix, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    std::fprintf(stdout, "%s%s\n", prefix.c_str(), line.c_str());
    std::fflush(stdout);
  }
  void Say(const std::string& line) { Line("[taas] ", line); }

 private:
  std::mutex mu_;
};

// The samples of the replica's Prometheus endpoint on 127.0.0.1:port (none when it does not answer
// within a second).
std::map<std::string, double> ScrapeMetrics(int port) {
  auto text = http::Get(
      "127.0.0.1:" + std::to_string(port), "/metrics",
      {.timeout = std::chrono::seconds(1), .max_body_bytes = contract::kMaxMetricsPageBytes});
  if (!text.ok()) return {};
  return ui_server::ParsePrometheusText(*text);
}

std::string Now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::gmtime(&t));
  return buf;
}

// Where this run looks for the executables that commands under /opt/taas/bin name.
BinarySearchInputs BinarySearchInputsOf(const Options& options) {
  const auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "");
  };
  return {.bin_dir = options.bin_dir,
          .bin_path_env = env(kBinPathEnv),
          .build_dir = options.build_dir,
          .build_dir_given = options.build_dir_given,
          .manifest_path = options.job_file,
          .launcher_dir = options.launcher_dir,
          .path_env = env("PATH")};
}

// Runs one job: sets its replicas up, drives the job loop until the job finished or the user
// interrupts, reports on the console and to the web UI.
class JobRunner final : private LoopReporter {
 public:
  JobRunner(const Options& options, tfjob::TFJob job) : options_(options), job_(std::move(job)) {}
  ~JobRunner() override { StopUi(); }

  int Run();

 private:
  absl::Status Prepare();
  void Progress();
  // The web UI: started once the replicas are prepared, fed by Publish/Event/the output readers.
  void StartUi();
  void StopUi();
  void Publish();
  int Finish(int code);
  // LoopReporter: the console, and the UI's events and logs.
  void Say(const std::string& line) override;
  void Event(bool warning, std::string reason, std::string message,
             const Replica* replica) override;
  void ReplicaNote(const Replica& replica, std::string_view line) override;
  void ReplicaOutput(const std::string& replica, std::string_view line) override;

  const Options& options_;
  tfjob::TFJob job_;
  Console console_;
  std::deque<Replica> replicas_;  // the job loop's, read by Publish, Progress and StartUi
  std::string model_dir_;
  std::unique_ptr<JobSecretFiles> secrets_;  // Removed with the runner: at the end of the run.
  Clock::time_point last_progress_ = Clock::now();
  // Declared in this order so the server stops before what it reads is destroyed.
  LocalJobState state_;
  std::unique_ptr<LocalJobSource> source_;
  std::unique_ptr<ui_server::UiServer> ui_;
  std::string ui_url_;
  // Declared last: destroying the table stops any process left, whose output still reaches
  // state_ and console_ until then.
  LocalProcesses processes_;
  JobLoop loop_{job_, replicas_, processes_, *this};
};

void JobRunner::Publish() {
  std::vector<ReplicaProcess> replicas;
  for (const Replica& r : replicas_) {
    ReplicaProcess& p = replicas.emplace_back();
    p.type = r.type;
    p.index = r.index;
    p.name = r.name;
    p.phase = r.observed.phase;
    p.running = r.pid > 0;
    p.restart_pending = r.start_at.has_value();
    p.starts = r.starts;
    p.exit_code = r.last_exit_code;
    p.stopped = r.stopped;
    p.started_at = r.started_at;
    p.finished_at = r.finished_at;
    p.metrics_port = r.metrics_port;
  }
  state_.Publish(job_, std::move(replicas));
}

void JobRunner::Say(const std::string& line) { console_.Say(line); }

void JobRunner::Event(bool warning, std::string reason, std::string message,
                      const Replica* replica) {
  state_.AddEvent({SystemNow(), warning, std::move(reason), std::move(message),
                   replica ? "Pod" : "TFJob", replica ? replica->name : job_.metadata.name});
}

void JobRunner::ReplicaNote(const Replica& replica, std::string_view line) {
  state_.AppendLog(replica.name, line);
}

void JobRunner::ReplicaOutput(const std::string& replica, std::string_view line) {
  state_.AppendLog(replica, line);
  console_.Line("[" + replica + "] ", std::string(line));
}

void JobRunner::StartUi() {
  if (!options_.ui) return;
  ui_server::UiServerOptions o;
  const std::string ns = job_.metadata.namespace_name;
  o.api.namespaces = {ns};
  o.api.local_run = true;
  // A local run has no token file and never serves anonymously: always a generated token.
  const ui_server::BearerToken token{ui_server::RandomToken(), true};
  o.api.token = token.value;
  o.http.host = "127.0.0.1";
  o.http.port = options_.ui_port;
  std::error_code ec;
  if (fs::is_regular_file(fs::path(options_.ui_assets) / "index.html", ec)) {
    o.http.assets_dir = options_.ui_assets;
  } else {
    console_.Say("no web UI assets in " + options_.ui_assets +
                 " (build the web-ui-dist target); serving its API only");
  }
  o.scraper.interval =
      std::chrono::milliseconds(static_cast<std::int64_t>(options_.ui_scrape_secs * 1000));
  for (const Replica& r : replicas_) {
    o.scraper.overrides[ns + "/" + r.name] = "127.0.0.1:" + std::to_string(r.metrics_port);
  }
  // Only the server's problems are worth a line next to the replicas' output.
  const Logger logger = Logger(stderr, LogLevel::kWarning)
                            .With({{"component", "taas-ui"}, {"job", job_.metadata.name}});
  source_ = std::make_unique<LocalJobSource>(&state_, LocalMachine::Detect(options_.local_gpus));
  ui_ = std::make_unique<ui_server::UiServer>(source_.get(), o, logger);
  absl::Status started = ui_->Start();
  if (!started.ok() && !options_.ui_port_given && o.http.port != 0) {
    o.http.port = 0;  // the default port is taken: any free one
    ui_ = std::make_unique<ui_server::UiServer>(source_.get(), o, logger);
    started = ui_->Start();
  }
  if (!started.ok()) {
    console_.Say("warning: the web UI is not served: " + std::string(started.message()));
    ui_.reset();
    return;
  }
  ui_url_ = ui_server::BrowserUrl(o.http.host, ui_->port(), token);
  console_.Say("UI: " + ui_url_);
}

void JobRunner::StopUi() {
  state_.Close();  // ends log followers first: the server waits for its connections
  if (ui_) ui_->Stop();
  ui_.reset();
}

int JobRunner::Finish(int code) {
  Publish();
  if (ui_ && options_.keep_ui && code != 130) {
    console_.Say("the UI keeps serving " + ui_url_ + " until Ctrl-C");
    while (g_signal == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  StopUi();
  return code;
}

absl::Status JobRunner::Prepare() {
  model_dir_ = options_.model_dir;
  if (model_dir_.empty()) {
    model_dir_ = (fs::temp_directory_path() / "taas" / (job_.metadata.name + "-" + Now())).string();
  }
  std::error_code ec;
  model_dir_ = fs::absolute(model_dir_, ec).string();
  if (ec) return absl::InternalError("cannot make model dir " + model_dir_ + " absolute");
  // The secret files live in a temporary folder removed with the launcher; the model dir is made
  // only once every replica's command was found, so a job that cannot start leaves nothing.
  TAAS_ASSIGN_OR_RETURN(
      secrets_, JobSecretFiles::Create(fs::temp_directory_path().string(), job_.metadata.name));
  TAAS_ASSIGN_OR_RETURN(const std::vector<int> ports,
                        FreePorts(2 * tfjob::TotalReplicas(job_.spec)));
  const AvailableCpus cpus = ReadAvailableCpus();
  const ReplicaSettings settings{BinaryPlaces(BinarySearchInputsOf(options_)), model_dir_,
                                 options_.env, LocalComputeDefaults(job_.spec, cpus.cpus, environ)};
  if (auto share = settings.defaults.find(std::string(contract::kComputeThreadsEnv));
      share != settings.defaults.end()) {
    Say("replicas compute with " + share->second + " thread(s) each: " + std::to_string(cpus.cpus) +
        " CPU(s) (" + cpus.limited_by + ") shared by the replicas that compute (" + share->first +
        "; --env overrides)");
  }
  TAAS_ASSIGN_OR_RETURN(std::vector<ReplicaLaunch> launches,
                        PlanReplicas(job_, settings, ports, *secrets_,
                                     [this](const std::string& line) { Say(line); }));
  fs::create_directories(model_dir_, ec);
  if (ec) return absl::InternalError("cannot create model dir " + model_dir_ + ": " + ec.message());
  job_.metadata.creation_timestamp = SystemNow();
  console_.Say("job " + job_.metadata.name + ": model dir " + model_dir_);
  const Clock::time_point now = Clock::now();
  for (ReplicaLaunch& launch : launches) {
    replicas_.push_back(PendingReplica(std::move(launch), now));
  }
  return absl::OkStatus();
}

void JobRunner::Progress() {
  std::string line = "job " + job_.metadata.name + ":";
  for (const auto& [type, rs] : job_.status.replica_statuses) {
    line += " " + std::string(tfjob::ReplicaTypeKey(type)) +
            " active=" + std::to_string(rs.active) + " succeeded=" + std::to_string(rs.succeeded) +
            " failed=" + std::to_string(rs.failed) + ";";
  }
  // The chief's (or worker 0's) view of the global step.
  for (const Replica& r : replicas_) {
    if (!tfjob::IsMasterRole(job_.spec, r.type, r.index) || r.pid <= 0) continue;
    const auto metrics = ScrapeMetrics(r.metrics_port);
    if (auto step = metrics.find(std::string(contract::kGlobalStepMetric)); step != metrics.end()) {
      line += " global_step=" + std::to_string(static_cast<std::int64_t>(step->second));
    }
    if (auto loss = metrics.find(std::string(contract::kLossMetric)); loss != metrics.end()) {
      line += " loss=" + std::to_string(loss->second);
    }
  }
  console_.Say(line);
}

int JobRunner::Run() {
  if (absl::Status s = Prepare(); !s.ok()) {
    console_.Say("error: " + std::string(s.message()));
    return 2;
  }
  Publish();
  StartUi();
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  while (true) {
    if (g_signal != 0) {
      console_.Say("interrupted: stopping every replica");
      loop_.StopAll("interrupted");
      return Finish(130);
    }
    if (absl::Status s = loop_.Turn(); !s.ok()) {
      console_.Say("error: " + std::string(s.message()));
      loop_.StopAll("another replica could not start");
      return Finish(2);
    }
    Publish();
    if (tfjob::IsFinished(job_.status)) break;
    if (options_.progress_secs > 0 &&
        std::chrono::duration<double>(Clock::now() - last_progress_).count() >=
            options_.progress_secs) {
      Progress();
      last_progress_ = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool succeeded = tfjob::IsSucceeded(job_.status);
  loop_.StopAll(succeeded ? "the job succeeded" : "the job failed");
  const auto* cond = tfjob::FindCondition(
      job_.status, succeeded ? tfjob::ConditionType::kSucceeded : tfjob::ConditionType::kFailed);
  console_.Say("job " + job_.metadata.name + (succeeded ? " succeeded" : " failed") +
               (cond ? ": " + cond->message : std::string()) + " (model dir " + model_dir_ + ")");
  return Finish(succeeded ? 0 : 1);
}

}  // namespace

int Run(const Options& options) {
  auto manifest = ReadManifest(options.job_file);
  if (!manifest.ok()) {
    std::fprintf(stderr, "[taas] error: %s\n", std::string(manifest.status().message()).c_str());
    return 2;
  }
  auto job = tfjob::LoadTFJob(*manifest);
  if (!job.ok()) {
    std::fprintf(stderr, "[taas] error: %s: %s\n", options.job_file.c_str(),
                 std::string(job.status().message()).c_str());
    return 2;
  }
  JobRunner runner(options, std::move(*job));
  return runner.Run();
}

}  // namespace taas::launcher
