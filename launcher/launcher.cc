#include "launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "job_secret_files.h"
#include "local_job_state.h"
#include "local_kube_api.h"
#include "manifest.h"
#include "taas/contract/env.h"
#include "taas/contract/metric_names.h"
#include "taas/flags/flags.h"
#include "taas/tfjob/defaults.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/restart.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/tf_config.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_server/metrics.h"
#include "taas/ui_server/ui_server.h"

extern char** environ;

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using tfjob::ReplicaType;

constexpr const char* kBinPrefix = "/opt/taas/bin/";

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

struct Replica {
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;
  std::string name;
  int port = 0;
  int metrics_port = 0;
  tfjob::RestartPolicy policy = tfjob::RestartPolicy::kNever;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;

  pid_t pid = -1;
  std::thread reader;
  tfjob::ObservedReplica observed;
  std::optional<Clock::time_point> start_at;  // Scheduled (re)start.
  int starts = 0;
  // What the web UI shows beyond `observed` (see ReplicaProcess).
  std::optional<int> last_exit_code;
  std::optional<tfjob::Time> started_at, finished_at;
  bool stopped = false;
};

tfjob::Time SystemNow() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

absl::StatusOr<std::vector<int>> FreePorts(int count) {
  std::vector<int> fds, ports;
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      for (int f : fds) ::close(f);
      if (fd >= 0) ::close(fd);
      return absl::UnavailableError(std::string("cannot reserve a loopback port: ") +
                                    std::strerror(errno));
    }
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int f : fds) ::close(f);  // Held until all are chosen, so no port is handed out twice.
  return ports;
}

// The samples of the replica's Prometheus endpoint on 127.0.0.1:port (none when it does not answer
// within a second).
std::map<std::string, double> ScrapeMetrics(int port) {
  auto text =
      ui_server::HttpGet("127.0.0.1:" + std::to_string(port), "/metrics", std::chrono::seconds(1));
  if (!text.ok()) return {};
  return ui_server::ParsePrometheusText(*text);
}

std::string Now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", std::gmtime(&t));
  return buf;
}

class JobRunner {
 public:
  JobRunner(const Options& options, tfjob::TFJob job) : options_(options), job_(std::move(job)) {}
  ~JobRunner() { StopUi(); }

  int Run();

 private:
  absl::Status Prepare();
  absl::Status Start(Replica& r);
  void Reap();
  void StopAll(const std::string& why);
  void Progress();
  // The web UI: started once the replicas are prepared, fed by Publish/Event/the output readers.
  void StartUi();
  void StopUi();
  void Publish();
  void Event(bool warning, std::string reason, std::string message, const Replica* replica);
  int Finish(int code);

  const Options& options_;
  tfjob::TFJob job_;
  Console console_;
  std::deque<Replica> replicas_;  // deque: Replica holds a thread and must not move
  std::string model_dir_;
  std::unique_ptr<JobSecretFiles> secrets_;  // Removed with the runner: at the end of the run.
  Clock::time_point last_progress_ = Clock::now();
  // Declared in this order so the server stops before what it reads is destroyed.
  LocalJobState state_;
  std::unique_ptr<LocalKubeApi> kube_;
  std::unique_ptr<ui_server::UiServer> ui_;
  std::string ui_url_;
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

void JobRunner::Event(bool warning, std::string reason, std::string message,
                      const Replica* replica) {
  state_.AddEvent({SystemNow(), warning, std::move(reason), std::move(message),
                   replica ? "Pod" : "TFJob", replica ? replica->name : job_.metadata.name});
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
  kube_ = std::make_unique<LocalKubeApi>(&state_, LocalMachine::Detect(options_.local_gpus));
  ui_ = std::make_unique<ui_server::UiServer>(kube_.get(), o, logger);
  absl::Status started = ui_->Start();
  if (!started.ok() && !options_.ui_port_given && o.http.port != 0) {
    o.http.port = 0;  // the default port is taken: any free one
    ui_ = std::make_unique<ui_server::UiServer>(kube_.get(), o, logger);
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
  fs::create_directories(model_dir_, ec);
  if (ec) return absl::InternalError("cannot create model dir " + model_dir_ + ": " + ec.message());
  model_dir_ = fs::absolute(model_dir_).string();
  job_.metadata.creation_timestamp = SystemNow();
  console_.Say("job " + job_.metadata.name + ": model dir " + model_dir_);
  TAAS_ASSIGN_OR_RETURN(
      secrets_, JobSecretFiles::Create(fs::temp_directory_path().string(), job_.metadata.name));

  int count = tfjob::TotalReplicas(job_.spec);
  TAAS_ASSIGN_OR_RETURN(auto ports, FreePorts(2 * count));
  std::size_t next = 0;
  std::map<std::pair<ReplicaType, int>, int> port_of;
  for (ReplicaType type : tfjob::kStatusOrder) {
    auto it = job_.spec.replica_specs.find(type);
    if (it == job_.spec.replica_specs.end()) continue;
    for (int i = 0; i < it->second.replicas; ++i) {
      Replica& r = replicas_.emplace_back();
      r.type = type;
      r.index = i;
      r.name = tfjob::ReplicaName(job_.metadata.name, type, i);
      r.port = ports[next++];
      r.metrics_port = ports[next++];
      r.policy = it->second.restart_policy;
      port_of[{type, i}] = r.port;
    }
  }
  const tfjob::ClusterSpec cluster =
      tfjob::BuildClusterSpec(job_.spec, [&](ReplicaType type, int index) {
        return "127.0.0.1:" + std::to_string(port_of[{type, index}]);
      });
  const bool distributed = tfjob::NeedsTfConfig(job_.spec);
  std::map<std::string, std::string> resolved;  // command -> local binary, said once each
  for (Replica& r : replicas_) {
    const nlohmann::json& tmpl = job_.spec.replica_specs.at(r.type).pod_template;
    const nlohmann::json* container = tfjob::FindDefaultContainer(tmpl);
    if (!container) {
      return absl::InvalidArgumentError("spec.tfReplicaSpecs." +
                                        std::string(tfjob::ReplicaTypeName(r.type)) +
                                        ".template.spec.containers: no container named tensorflow");
    }
    for (const char* key : {"command", "args"}) {
      if (!container->contains(key)) continue;
      for (const auto& a : (*container)[key]) r.argv.push_back(a.get<std::string>());
    }
    if (r.argv.empty()) {
      return absl::InvalidArgumentError(
          "spec.tfReplicaSpecs." + std::string(tfjob::ReplicaTypeName(r.type)) +
          ".template.spec.containers[tensorflow].command: needed to run the replica locally "
          "(the image's entrypoint is unknown here)");
    }
    if (r.argv[0].rfind(kBinPrefix, 0) == 0) {
      const std::string name = r.argv[0].substr(std::strlen(kBinPrefix));
      auto found = resolved.find(r.argv[0]);
      if (found == resolved.end()) {
        std::string local = FindBinary(options_.build_dir, name);
        if (local.empty()) {
          return absl::NotFoundError(r.argv[0] + ": no executable named " + name + " under " +
                                     options_.build_dir + " (build it, or pass --build-dir)");
        }
        console_.Say("using " + local + " for " + r.argv[0]);
        found = resolved.emplace(r.argv[0], local).first;
      }
      r.argv[0] = found->second;
    }
    if (container->contains("env")) {
      for (const auto& e : (*container)["env"]) {
        const std::string name = e.value("name", "");
        if (e.contains("value") && e["value"].is_string()) {
          r.env[name] = e["value"].get<std::string>();
        } else if (e.contains("valueFrom")) {
          console_.Say(r.name + ": env " + name +
                       " uses valueFrom, which has no local meaning; "
                       "skipped");
        }
      }
    }
    for (const auto& [k, v] : options_.env) r.env[k] = v;
    for (const auto& [k, v] : secrets_->EnvFor(job_.spec, r.type, r.index)) r.env[k] = v;
    const std::string model_dir_env(contract::kModelDirEnv);
    if (r.env.count(model_dir_env) && r.env[model_dir_env] != model_dir_) {
      console_.Say(r.name + ": " + model_dir_env + " " + r.env[model_dir_env] +
                   " replaced by the local model dir");
    }
    r.env[model_dir_env] = model_dir_;
    r.env[std::string(contract::kJobNameEnv)] = job_.metadata.name;
    r.env[std::string(contract::kMetricsPortEnv)] = std::to_string(r.metrics_port);
    if (distributed) {
      r.env[std::string(contract::kTfConfigEnv)] = tfjob::TfConfigJson(cluster, {r.type, r.index});
    }
    r.observed.type = r.type;
    r.observed.index = r.index;
    r.observed.phase = tfjob::ReplicaPhase::kPending;
    r.start_at = Clock::now();
  }
  return absl::OkStatus();
}

absl::Status JobRunner::Start(Replica& r) {
  if (r.reader.joinable()) r.reader.join();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  env.erase(std::string(contract::kTfConfigEnv));
  for (const auto& [k, v] : r.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = r.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::setpgid(0, 0);  // Its own group: the launcher stops it (and its children) explicitly.
    ::close_range(3, ~0U, 0);  // No launcher descriptors (the UI's sockets) in the replica.
    ::execve(argv[0], argv.data(), envp.data());
    if (std::strchr(argv[0], '/') == nullptr) ::execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed: command not found or not executable\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  r.pid = pid;
  ++r.starts;
  r.observed.phase = tfjob::ReplicaPhase::kRunning;
  r.observed.exit_code.reset();
  r.start_at.reset();
  r.started_at = SystemNow();
  r.stopped = false;
  const std::string what = "pid=" + std::to_string(pid) + " port=" + std::to_string(r.port) +
                           " metrics_port=" + std::to_string(r.metrics_port);
  if (r.starts > 1) {
    state_.AppendLog(r.name, "[taas] restart " + std::to_string(r.starts - 1) + ": " + what);
    Event(false, "Restarted",
          "started again (restart " + std::to_string(r.starts - 1) + "), " + what, &r);
  } else {
    Event(false, "Started", "started " + what, &r);
  }
  console_.Say("started " + r.name + " pid=" + std::to_string(pid) + " port=" +
               std::to_string(r.port) + " metrics_port=" + std::to_string(r.metrics_port) +
               (r.starts > 1 ? " (restart " + std::to_string(r.starts - 1) + ")" : ""));
  const int fd = pipe_fds[0];
  const std::string prefix = "[" + r.name + "] ";
  r.reader = std::thread([this, fd, prefix, name = r.name] {
    std::string pending;
    char buf[8192];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
      if (n < 0) continue;
      pending.append(buf, static_cast<std::size_t>(n));
      std::size_t start = 0, nl;
      while ((nl = pending.find('\n', start)) != std::string::npos) {
        const std::string_view line(pending.data() + start, nl - start);
        state_.AppendLog(name, line);
        console_.Line(prefix, std::string(line));
        start = nl + 1;
      }
      pending.erase(0, start);
    }
    if (!pending.empty()) {
      state_.AppendLog(name, pending);
      console_.Line(prefix, pending);
    }
    ::close(fd);
  });
  return absl::OkStatus();
}

void JobRunner::Reap() {
  for (Replica& r : replicas_) {
    if (r.pid <= 0) continue;
    int status = 0;
    pid_t got = ::waitpid(r.pid, &status, WNOHANG);
    if (got != r.pid) continue;
    r.pid = -1;
    if (r.reader.joinable()) r.reader.join();
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const tfjob::ExitAction action = tfjob::DecideOnExit(r.policy, code);
    const std::string decision = "(restartPolicy " + std::string(tfjob::ToString(r.policy)) + ": " +
                                 std::string(tfjob::ToString(action)) + ")";
    console_.Say(r.name + " exited with code " + std::to_string(code) + " " + decision);
    r.last_exit_code = code;
    r.finished_at = SystemNow();
    Event(code != 0, "Exited", "exited with code " + std::to_string(code) + " " + decision, &r);
    const bool in_place =
        r.policy == tfjob::RestartPolicy::kAlways || r.policy == tfjob::RestartPolicy::kOnFailure;
    if (action == tfjob::ExitAction::kRestart && in_place) {
      // The kubelet restarts the container in place; the pod stays Running.
      ++r.observed.restarts;
      r.observed.exit_code = code;
      r.start_at = Clock::now() + std::chrono::seconds(1);
    } else {
      r.observed.phase = code == 0 ? tfjob::ReplicaPhase::kSucceeded : tfjob::ReplicaPhase::kFailed;
      r.observed.exit_code = code;
    }
  }
}

void JobRunner::StopAll(const std::string& why) {
  for (Replica& r : replicas_) {
    r.start_at.reset();
    if (r.pid <= 0) continue;
    ::kill(-r.pid, SIGTERM);
    r.stopped = true;
    Event(false, "Killing", "stopping the process: " + why, &r);
  }
  // A process stopped here ends with the code it exits with (or was killed by).
  auto stopped = [this](Replica& r, int status) {
    r.pid = -1;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.last_exit_code = code;
    r.finished_at = SystemNow();
    r.observed.phase = code == 0 ? tfjob::ReplicaPhase::kSucceeded : tfjob::ReplicaPhase::kFailed;
  };
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    bool alive = false;
    for (Replica& r : replicas_) {
      if (r.pid <= 0) continue;
      int status;
      if (::waitpid(r.pid, &status, WNOHANG) == r.pid) {
        stopped(r, status);
      } else {
        alive = true;
      }
    }
    if (!alive) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (Replica& r : replicas_) {
    if (r.pid > 0) {
      ::kill(-r.pid, SIGKILL);
      int status = 0;
      ::waitpid(r.pid, &status, 0);
      stopped(r, status);
    }
    if (r.reader.joinable()) r.reader.join();
  }
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
      StopAll("interrupted");
      return Finish(130);
    }
    for (Replica& r : replicas_) {
      if (r.start_at && Clock::now() >= *r.start_at) {
        if (absl::Status s = Start(r); !s.ok()) {
          console_.Say("error: cannot start " + r.name + ": " + std::string(s.message()));
          StopAll("another replica could not start");
          return Finish(2);
        }
      }
    }
    Reap();
    std::vector<tfjob::ObservedReplica> observed;
    for (const Replica& r : replicas_) observed.push_back(r.observed);
    const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    tfjob::StatusUpdate update = tfjob::ComputeJobStatus(job_, observed, now);
    job_.status = update.status;
    for (const auto& e : update.events) {
      console_.Say(std::string(e.warning ? "warning: " : "") + e.reason + ": " + e.message);
      Event(e.warning, e.reason, e.message, nullptr);
    }
    for (const auto& ref : update.restart) {
      for (Replica& r : replicas_) {
        if (r.type == ref.type && r.index == ref.index) {
          r.observed.phase = tfjob::ReplicaPhase::kPending;
          r.observed.exit_code.reset();
          r.start_at = Clock::now() + std::chrono::seconds(1);
        }
      }
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
  StopAll(succeeded ? "the job succeeded" : "the job failed");
  const auto* cond = tfjob::FindCondition(
      job_.status, succeeded ? tfjob::ConditionType::kSucceeded : tfjob::ConditionType::kFailed);
  console_.Say("job " + job_.metadata.name + (succeeded ? " succeeded" : " failed") +
               (cond ? ": " + cond->message : std::string()) + " (model dir " + model_dir_ + ")");
  return Finish(succeeded ? 0 : 1);
}

}  // namespace

std::string FindBinary(const std::string& dir, const std::string& name) {
  std::error_code ec;
  std::string best;
  std::size_t best_depth = 0;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().filename() != name || !it->is_regular_file(ec)) continue;
    if (::access(it->path().c_str(), X_OK) != 0) continue;
    const auto depth = static_cast<std::size_t>(it.depth());
    if (best.empty() || depth < best_depth) {
      best = it->path().string();
      best_depth = depth;
    }
  }
  return best;
}

std::string Usage() {
  return "usage: taas run JOB.yaml [--build-dir DIR] [--model-dir DIR] [--env KEY=VALUE]... "
         "[--progress-secs S]\n"
         "                [--ui-port N] [--no-ui] [--keep-ui] [--ui-assets DIR] [--local-gpus N]";
}

absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args,
                                  const std::string& self_path) {
  const std::string usage = Usage();
  if (args.empty() || args[0] != "run") return absl::InvalidArgumentError(usage);
  Options o;
  bool no_ui = false;
  flags::FlagSet set;
  set.String("build-dir", &o.build_dir);
  set.String("model-dir", &o.model_dir);
  set.KeyValues("env", &o.env);
  set.Double("progress-secs", 0, 86400, &o.progress_secs);
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
  if (o.build_dir.empty()) {
    // build/launcher/taas -> build
    std::error_code ec;
    fs::path self = fs::canonical(self_path, ec);
    o.build_dir = ec ? "." : self.parent_path().parent_path().string();
  }
  if (o.ui_assets.empty()) o.ui_assets = (fs::path(o.build_dir) / "web-ui" / "dist").string();
  return o;
}

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
