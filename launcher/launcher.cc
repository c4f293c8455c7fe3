#include "launcher.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "binary_locator.h"
#include "job_loop.h"
#include "job_result.h"
#include "job_secret_files.h"
#include "local_job_source.h"
#include "local_job_state.h"
#include "manifest.h"
#include "processes.h"
#include "progress_view.h"
#include "replica_env.h"
#include "replica_logs.h"
#include "taas/base/cpus.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/contract/model_dir.h"
#include "taas/contract/ports.h"
#include "taas/http/client.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/progress.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_server/metrics.h"
#include "taas/ui_server/ui_server.h"

extern char** environ;

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

// Set by the SIGINT/SIGTERM handler (the last signal, and how many came); read by the main loop.
std::atomic<int> g_signal{0};
std::atomic<int> g_signals{0};
// How often the progress bar is redrawn on a terminal.
constexpr double kBarRedrawSecs = 1;

void OnSignal(int sig) {
  g_signal = sig;
  ++g_signals;
}

// The console: the launcher's own lines, replica lines with --verbose, and on a terminal the
// progress bar as the last line, redrawn in place (every other line clears it and draws it again
// below itself). One whole line at a time, from any thread.
class Console {
 public:
  void Line(const std::string& prefix, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    std::fprintf(stdout, "%s%s%s\n", bar_.empty() ? "" : kClearLine, prefix.c_str(), line.c_str());
    if (!bar_.empty()) std::fputs(bar_.c_str(), stdout);
    std::fflush(stdout);
  }
  void Say(const std::string& line) { Line("[taas] ", line); }
  // Draws `bar` in place of the previous one; an empty bar takes it away.
  void Bar(const std::string& bar) {
    std::lock_guard<std::mutex> lock(mu_);
    std::fputs(kClearLine, stdout);
    std::fputs(bar.c_str(), stdout);
    std::fflush(stdout);
    bar_ = bar;
  }

 private:
  static constexpr const char* kClearLine = "\r\033[K";  // to the line's start, then erase it
  std::mutex mu_;
  std::string bar_;
};

// Whether the progress view draws a bar: stdout is a terminal that understands moving the cursor.
bool BarOnConsole() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) == 1 && term != nullptr && std::string_view(term) != "dumb";
}

int ConsoleColumns() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// The samples of the replica's Prometheus endpoint on 127.0.0.1:port (none when it does not answer
// in time). The progress view scrapes every training replica from the job loop's thread, once a
// second on a terminal: a replica that stopped answering may delay the loop by this much each.
constexpr std::chrono::milliseconds kScrapeTimeout{250};
struct ScrapedPage {
  std::map<std::string, double> metrics;  // by name, labels ignored
  std::optional<tfjob::ProgressStall> stall;
};
ScrapedPage ScrapeMetrics(int port) {
  auto text =
      http::Get("127.0.0.1:" + std::to_string(port), "/metrics",
                {.timeout = kScrapeTimeout, .max_body_bytes = contract::kMaxMetricsPageBytes});
  if (!text.ok()) return {};
  return {ui_server::ParsePrometheusText(*text),
          tfjob::ReplicaStall(ui_server::ParsePrometheusSamples(*text))};
}

std::string Now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::gmtime(&t));
  return buf;
}

// The global step at which the job's training ends, when the chief's (or worker 0's) environment
// says: the progress view's 100%.
std::optional<std::int64_t> MaxStepsOf(const tfjob::TFJobSpec& spec,
                                       const std::vector<ReplicaLaunch>& launches) {
  for (const ReplicaLaunch& launch : launches) {
    if (!tfjob::IsMasterRole(spec, launch.type, launch.index)) continue;
    auto it = launch.env.find(std::string(contract::kMaxStepsEnv));
    std::int64_t steps = 0;
    if (it != launch.env.end() && absl::SimpleAtoi(it->second, &steps) && steps > 0) return steps;
  }
  return std::nullopt;
}

// The TFJob status rules as this run applies them: the operator's, with --evaluator-grace-seconds.
tfjob::StatusOptions StatusOptionsOf(const Options& options) {
  tfjob::StatusOptions status;
  status.evaluator_grace = options.evaluator_grace;
  return status;
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
  // The progress view: a line every --progress-secs, or a bar redrawn every second on a terminal.
  bool ProgressDue() const;
  void Progress();
  // The view once every replica stopped: the final step the chief recorded, when it did.
  void FinalProgress();
  // Removes the reports an earlier run in the same model dir left, so that only this run's
  // chief can give the result.
  absl::Status RemoveOldReports();
  // The console's last line: the job's end and, when it succeeded, the final metrics of the
  // chief's report (a missing or bad one is a warning line before it).
  std::string ResultLine(bool succeeded);
  // A replica's last lines on the console when it failed (without --verbose they are only in its
  // log file and the UI).
  void ShowTail(const Replica& replica);
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
  std::unique_ptr<ReplicaLogFiles> logs_;
  std::atomic<bool> log_error_said_{false};
  const bool bar_ = options_.progress_secs > 0 && !options_.verbose && BarOnConsole();
  std::optional<ProgressView> view_;  // made once the replicas (and so max steps) are known
  Clock::time_point last_progress_ = Clock::now();
  bool interrupted_ = false;  // by SIGINT or SIGTERM while the job ran
  // Declared in this order so the server stops before what it reads is destroyed.
  LocalJobState state_;
  std::unique_ptr<LocalJobSource> source_;
  std::unique_ptr<ui_server::UiServer> ui_;
  std::string ui_url_;
  // Declared last: destroying the table stops any process left, whose output still reaches
  // state_ and console_ until then.
  LocalProcesses processes_;
  JobLoop loop_{job_, replicas_, processes_, *this, {}, StatusOptionsOf(options_)};
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
  if (warning && replica != nullptr && !options_.verbose) ShowTail(*replica);
}

void JobRunner::ShowTail(const Replica& replica) {
  // Enough for the runtime's one error line and what led to it; a long line shows its end.
  constexpr int kTailLines = 10;
  constexpr std::size_t kTailBytes = 64 << 10;
  auto tail = state_.LogTail(replica.name, kTailLines, kTailBytes);
  if (!tail.ok() || tail->empty()) return;
  console_.Say("the last lines of " + replica.name +
               " (all of them: " + logs_->PathOf(replica.name) + "):");
  for (std::string_view rest = *tail; !rest.empty();) {
    const std::size_t end = rest.find('\n');
    console_.Line("[" + replica.name + "] ", std::string(rest.substr(0, end)));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  }
}

void JobRunner::ReplicaNote(const Replica& replica, std::string_view line) {
  ReplicaOutput(replica.name, line);
}

void JobRunner::ReplicaOutput(const std::string& replica, std::string_view line) {
  state_.AppendLog(replica, line);
  if (absl::Status kept = logs_->Append(replica, line);
      !kept.ok() && !log_error_said_.exchange(true)) {
    console_.Say("warning: " + std::string(kept.message()) +
                 " (the web UI still shows the replicas' latest output)");
  }
  if (options_.verbose) console_.Line("[" + replica + "] ", std::string(line));
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
  source_ = std::make_unique<LocalJobSource>(&state_, LocalMachine::Detect(options_.local_gpus),
                                             logs_->dir());
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
  if (bar_) console_.Bar("");
  Publish();
  if (ui_ && options_.keep_ui && !interrupted_) {
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
  const ReplicaSettings settings{BinaryPlaces(SearchInputsOfProcess(
                                     options_.bin_dir, options_.build_dir, options_.build_dir_given,
                                     options_.job_file, options_.launcher_dir)),
                                 model_dir_, options_.env,
                                 LocalComputeDefaults(job_.spec, cpus.cpus, environ)};
  if (auto share = settings.defaults.find(std::string(contract::kComputeThreadsEnv));
      share != settings.defaults.end()) {
    Say("replicas compute with " + share->second + " thread(s) each: " + std::to_string(cpus.cpus) +
        " CPU(s) (" + cpus.limited_by + ") shared by the replicas that compute (" + share->first +
        "; --env overrides)");
  }
  // Before the replicas are planned: a job that then cannot start still says it.
  if (auto warning = SettingsWarning(job_, settings)) console_.Say(*warning);
  TAAS_ASSIGN_OR_RETURN(std::vector<ReplicaLaunch> launches,
                        PlanReplicas(job_, settings, ports, *secrets_,
                                     [this](const std::string& line) { Say(line); }));
  fs::create_directories(model_dir_, ec);
  if (ec) return absl::InternalError("cannot create model dir " + model_dir_ + ": " + ec.message());
  TAAS_ASSIGN_OR_RETURN(logs_, ReplicaLogFiles::Create(ReplicaFilesDir(model_dir_)));
  job_.metadata.creation_timestamp = SystemNow();
  console_.Say("job " + job_.metadata.name + ": model dir " + model_dir_);
  console_.Say("each replica's output: " + logs_->dir() + "/<replica>.log" +
               (options_.verbose ? "" : " (--verbose shows it here too)"));
  view_.emplace(MaxStepsOf(job_.spec, launches));
  const Clock::time_point now = Clock::now();
  for (ReplicaLaunch& launch : launches) {
    replicas_.push_back(PendingReplica(std::move(launch), now));
  }
  return RemoveOldReports();
}

absl::Status JobRunner::RemoveOldReports() {
  for (const Replica& r : replicas_) {
    const std::string path = TerminationMessagePath(logs_->dir(), r.name);
    std::error_code ec;
    fs::remove(path, ec);
    if (ec)
      return absl::InternalError("cannot remove an earlier run's " + path + ": " + ec.message());
  }
  return absl::OkStatus();
}

std::string JobRunner::ResultLine(bool succeeded) {
  const std::string job = "job " + job_.metadata.name;
  const std::string where = " (model dir " + model_dir_ + ")";
  const auto* cond = tfjob::FindCondition(
      job_.status, succeeded ? tfjob::ConditionType::kSucceeded : tfjob::ConditionType::kFailed);
  const std::string plain = job + (succeeded ? " succeeded" : " failed") +
                            (cond ? ": " + cond->message : std::string()) + where;
  std::string chief, evaluator;
  for (const Replica& r : replicas_) {
    if (tfjob::IsMasterRole(job_.spec, r.type, r.index)) chief = r.name;
    if (tfjob::IsResultEvaluator(r.type, r.index)) evaluator = r.name;
  }
  if (chief.empty()) return plain;
  if (!succeeded) {
    // A chief whose evaluation failed said why in its report: that is the job's failure.
    const absl::StatusOr<job_report::JobReport> failed =
        ReadJobReport(TerminationMessagePath(logs_->dir(), chief));
    if (failed.ok() && !failed->error.empty())
      return job + " failed " + DescribeReport(*failed) + where;
    return plain;
  }
  const absl::StatusOr<job_report::JobReport> report =
      ReadJobResult(logs_->dir(), chief, evaluator);
  if (report.ok()) return job + " succeeded " + DescribeReport(*report) + where;
  // A job of plain commands leaves no report to miss (ReadJobResult).
  if (absl::IsNotFound(report.status())) return plain;
  console_.Say("warning: the job's final metrics are unknown: " +
               std::string(report.status().message()));
  return plain;
}

bool JobRunner::ProgressDue() const {
  if (options_.progress_secs <= 0) return false;
  const double interval = bar_ ? kBarRedrawSecs : options_.progress_secs;
  return std::chrono::duration<double>(Clock::now() - last_progress_).count() >= interval;
}

void JobRunner::Progress() {
  ProgressSample sample;
  sample.at = Clock::now();
  tfjob::JobExamplesRate rate;
  tfjob::JobStall stall;
  for (const Replica& r : replicas_) {
    ++sample.replicas_total;
    if (r.pid <= 0) continue;
    ++sample.replicas_running;
    if (r.type == tfjob::ReplicaType::kPS) continue;
    const ScrapedPage page = ScrapeMetrics(r.metrics_port);
    const auto& metrics = page.metrics;
    const auto metric = [&metrics](std::string_view name) -> std::optional<double> {
      auto it = metrics.find(std::string(name));
      return it == metrics.end() ? std::nullopt : std::optional<double>(it->second);
    };
    if (r.type == tfjob::ReplicaType::kEvaluator) {
      sample.eval_accuracy = metric(contract::kEvalAccuracyMetric);
      continue;
    }
    // Every training replica's rate adds to the job's; the chief's (or worker 0's) view of the
    // global step and loss is the job's.
    if (tfjob::TrainsExamples(r.type)) {
      rate.Add(metric(contract::kExamplesPerSecondMetric));
      stall.Add(page.stall);
    }
    if (!tfjob::IsMasterRole(job_.spec, r.type, r.index)) continue;
    if (auto step = metric(contract::kGlobalStepMetric)) {
      sample.global_step = static_cast<std::int64_t>(*step);
    }
    sample.loss = metric(contract::kLossMetric);
  }
  sample.examples_per_sec = rate.PerSecond();
  sample.stall = stall.Longest();
  view_->Add(sample);
  if (bar_) {
    console_.Bar(view_->Bar(ConsoleColumns()));
  } else {
    console_.Say(view_->Line());
  }
}

void JobRunner::FinalProgress() {
  ProgressSample sample;
  sample.at = Clock::now();
  sample.replicas_total = static_cast<int>(replicas_.size());
  std::ifstream done(fs::path(model_dir_) / contract::kTrainingDoneFile);
  if (std::int64_t step = 0; done >> step) sample.global_step = step;
  view_->Add(sample);
  console_.Say(view_->Line());
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
    if (const int sig = g_signal; sig != 0) {
      console_.Say(std::string("interrupted by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                   ": stopping every replica (SIGTERM); the chief saves the job's state within "
                   "the grace period (Ctrl-C again: kill now)");
      // As the kubelet ends a pod: each replica has its terminationGracePeriodSeconds.
      loop_.StopAll("interrupted", JobLoop::Grace::kReplicas, [] { return g_signals > 1; });
      console_.Say("job " + job_.metadata.name + " interrupted; to resume it from its last " +
                   "checkpoint: taas run " + options_.job_file + " --model-dir " + model_dir_);
      interrupted_ = true;
      // As a shell reports a process a signal ended: 130 for SIGINT (Ctrl-C), 143 for SIGTERM.
      return Finish(128 + sig);
    }
    if (absl::Status s = loop_.Turn(); !s.ok()) {
      console_.Say("error: " + std::string(s.message()));
      loop_.StopAll("another replica could not start");
      return Finish(2);
    }
    Publish();
    if (tfjob::IsFinished(job_.status)) break;
    if (ProgressDue()) {
      Progress();
      last_progress_ = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool succeeded = tfjob::IsSucceeded(job_.status);
  loop_.StopAll(succeeded ? "the job succeeded" : "the job failed");
  if (bar_) console_.Bar("");
  if (options_.progress_secs > 0) FinalProgress();
  console_.Say(ResultLine(succeeded));
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
