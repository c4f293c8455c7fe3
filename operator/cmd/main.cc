// taas-operator: runs kubeflow.org/v1 TFJobs on Kubernetes.
//
//   taas-operator [--kubeconfig PATH] [--namespaces a,b] [--workers 4] [--health-port 8081]
//                 [--health-address 0.0.0.0] [--leader-elect=true] [--lease-namespace NS]
//                 [--lease-name taas-operator] [--identity ID] [--cluster-domain DOMAIN]
//                 [--stuck-after-seconds 300] [--resync-seconds 300] [--port-file PATH]
//                 [--api-parallelism 16] [--child-event-delay-ms 250] [--log-level info]
//                 [--max-replicas-per-job 2048]
//                 [--ui-listen HOST:PORT [--ui-namespaces a,b] [--ui-token-file FILE]
//                  [--ui-assets DIR] [--ui-allow-anonymous-read]]
//
// With --ui-listen the operator also serves the web UI and its API (taas::ui_server) on that
// address, on every replica (a standby serves it too: the UI reads and writes through the API
// server, not through the leader).
// This file is the one place the operator reads its configuration (flags, then KUBECONFIG, then
// the in-cluster service account).
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "health_server.h"
#include "taas/base/log.h"
#include "taas/controller/controller.h"
#include "taas/kube/client.h"
#include "taas/kube/leader_election.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_server/kube_client_api.h"
#include "taas/ui_server/ui_server.h"

namespace {

struct Flags {
  std::string kubeconfig;
  std::vector<std::string> namespaces;
  int workers = 4;
  int health_port = 8081;
  std::string health_address = "0.0.0.0";
  bool leader_elect = true;
  std::string lease_namespace;
  std::string lease_name = "taas-operator";
  std::string identity;
  std::string cluster_domain;
  int stuck_after_seconds = 300;
  int resync_seconds = 300;
  int lease_duration_seconds = 15;
  int api_parallelism = 16;
  int child_event_delay_ms = 250;
  int max_replicas_per_job = taas::tfjob::kMaxReplicasPerJob;
  std::string port_file;
  std::string log_level = "info";
  std::string ui_listen;                   // empty: no UI
  taas::ui_server::ServerOptions ui_http;  // host and port of ui_listen
  std::vector<std::string> ui_namespaces;
  std::string ui_token_file;
  std::string ui_assets;
  bool ui_allow_anonymous_read = false;
};

constexpr char kUsage[] =
    "usage: taas-operator [--kubeconfig PATH] [--namespaces a,b] [--workers N]\n"
    "                     [--health-port PORT] [--health-address ADDR] "
    "[--leader-elect=true|false]\n"
    "                     [--lease-namespace NS] [--lease-name NAME] [--lease-duration-seconds S]\n"
    "                     [--identity ID] [--cluster-domain DOMAIN] [--stuck-after-seconds S]\n"
    "                     [--resync-seconds S] [--api-parallelism N] [--child-event-delay-ms MS]\n"
    "                     [--max-replicas-per-job N] [--port-file PATH]\n"
    "                     [--log-level debug|info|warning]\n"
    "                     [--ui-listen HOST:PORT] [--ui-namespaces a,b] [--ui-token-file FILE]\n"
    "                     [--ui-assets DIR] [--ui-allow-anonymous-read]\n";

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) return absl::InvalidArgumentError("unexpected argument " + arg);
    std::string name = arg.substr(2);
    std::string value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (name == "leader-elect" || name == "ui-allow-anonymous-read") {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError("--" + name + " needs a value");
    }
    values[name] = value;
  }
  auto integer = [&](const std::string& name, int& out, int min,
                     int max = std::numeric_limits<int>::max()) -> absl::Status {
    auto it = values.find(name);
    if (it == values.end()) return absl::OkStatus();
    try {
      std::size_t used = 0;
      out = std::stoi(it->second, &used);
      if (used != it->second.size() || out < min || out > max) throw std::invalid_argument("range");
    } catch (const std::exception&) {
      std::string range = max == std::numeric_limits<int>::max()
                              ? ">= " + std::to_string(min)
                              : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
      return absl::InvalidArgumentError("--" + name + " must be an integer " + range + ", got \"" +
                                        it->second + "\"");
    }
    values.erase(it);
    return absl::OkStatus();
  };
  auto text = [&](const std::string& name, std::string& out) {
    if (auto it = values.find(name); it != values.end()) {
      out = it->second;
      values.erase(it);
    }
  };
  TAAS_RETURN_IF_ERROR(integer("workers", flags.workers, 1));
  TAAS_RETURN_IF_ERROR(integer("health-port", flags.health_port, 0));
  TAAS_RETURN_IF_ERROR(integer("stuck-after-seconds", flags.stuck_after_seconds, 0));
  TAAS_RETURN_IF_ERROR(integer("resync-seconds", flags.resync_seconds, 0));
  // 3 s at least: the renew deadline (2/3) must stay above the retry period (1/7, 1 s at least).
  TAAS_RETURN_IF_ERROR(integer("lease-duration-seconds", flags.lease_duration_seconds, 3));
  TAAS_RETURN_IF_ERROR(integer("api-parallelism", flags.api_parallelism, 1));
  TAAS_RETURN_IF_ERROR(integer("child-event-delay-ms", flags.child_event_delay_ms, 0));
  // Lowers the installation's limit; the CRD's bound (kMaxReplicasPerJob) cannot be raised.
  TAAS_RETURN_IF_ERROR(integer("max-replicas-per-job", flags.max_replicas_per_job, 1,
                               taas::tfjob::kMaxReplicasPerJob));
  std::string namespaces, leader_elect, ui_namespaces, ui_anonymous;
  text("namespaces", namespaces);
  flags.namespaces = Split(namespaces);
  text("ui-namespaces", ui_namespaces);
  flags.ui_namespaces = Split(ui_namespaces);
  text("ui-listen", flags.ui_listen);
  text("ui-token-file", flags.ui_token_file);
  text("ui-assets", flags.ui_assets);
  text("ui-allow-anonymous-read", ui_anonymous);
  text("kubeconfig", flags.kubeconfig);
  text("health-address", flags.health_address);
  text("lease-namespace", flags.lease_namespace);
  text("lease-name", flags.lease_name);
  text("identity", flags.identity);
  text("cluster-domain", flags.cluster_domain);
  text("port-file", flags.port_file);
  text("log-level", flags.log_level);
  text("leader-elect", leader_elect);
  if (!leader_elect.empty()) {
    if (leader_elect != "true" && leader_elect != "false")
      return absl::InvalidArgumentError("--leader-elect must be true or false");
    flags.leader_elect = leader_elect == "true";
  }
  if (!ui_anonymous.empty()) {
    if (ui_anonymous != "true" && ui_anonymous != "false")
      return absl::InvalidArgumentError("--ui-allow-anonymous-read must be true or false");
    flags.ui_allow_anonymous_read = ui_anonymous == "true";
  }
  if (!flags.ui_listen.empty()) {
    TAAS_RETURN_IF_ERROR(
        taas::ui_server::ParseListenAddress("--ui-listen", flags.ui_listen, &flags.ui_http));
  }
  if (!values.empty()) return absl::InvalidArgumentError("unknown flag --" + values.begin()->first);
  return flags;
}

// The web UI served from this process, over the operator's own (thread-safe) client.
struct HostedUi {
  std::unique_ptr<taas::ui_server::KubeClientApi> kube;
  std::unique_ptr<taas::ui_server::UiServer> server;
};

absl::StatusOr<HostedUi> StartUi(const Flags& flags, taas::kube::Client* client,
                                 const taas::Logger& logger) {
  taas::ui_server::UiServerOptions options;
  // The UI lists and creates jobs where the operator runs them; an operator watching every
  // namespace offers "default" unless told otherwise (the chart does the same).
  options.api.namespaces = !flags.ui_namespaces.empty() ? flags.ui_namespaces
                           : !flags.namespaces.empty()  ? flags.namespaces
                                                        : std::vector<std::string>{"default"};
  options.api.allow_anonymous_read = flags.ui_allow_anonymous_read;
  TAAS_ASSIGN_OR_RETURN(
      const taas::ui_server::BearerToken token,
      taas::ui_server::ChooseToken(flags.ui_token_file, flags.ui_allow_anonymous_read));
  options.api.token = token.value;
  options.http = flags.ui_http;
  options.http.assets_dir = flags.ui_assets;

  HostedUi ui;
  ui.kube = std::make_unique<taas::ui_server::KubeClientApi>(client);
  ui.server = std::make_unique<taas::ui_server::UiServer>(ui.kube.get(), options,
                                                          logger.With({{"component", "taas-ui"}}));
  TAAS_RETURN_IF_ERROR(ui.server->Start());
  // Only a token this process made up is in the URL: a mounted one is already known to its owner.
  const std::string url = taas::ui_server::BrowserUrl(options.http.host, ui.server->port(), token);
  logger.Info("serving the web UI", {{"url", url}});
  return ui;
}

}  // namespace

int main(int argc, char** argv) {
  // Reconciles run on many short-lived threads; glibc would give each its own malloc arena and
  // keep their free memory, multiplying the resident size. Two arenas are plenty here.
  mallopt(M_ARENA_MAX, 2);
  auto flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::cerr << "taas-operator: " << flags.status().message() << "\n" << kUsage;
    return 2;
  }
  taas::LogLevel level = taas::LogLevel::kInfo;
  if (flags->log_level == "debug") level = taas::LogLevel::kDebug;
  if (flags->log_level == "warning") level = taas::LogLevel::kWarning;
  if (flags->log_level == "error") level = taas::LogLevel::kError;
  taas::Logger logger = taas::Logger(stdout, level).With({{"component", "taas-operator"}});

  // Configuration: --kubeconfig, else $KUBECONFIG, else the in-cluster service account.
  std::string kubeconfig = flags->kubeconfig;
  if (kubeconfig.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr) kubeconfig = env;
  }
  auto config =
      kubeconfig.empty() ? taas::kube::InClusterConfig() : taas::kube::LoadKubeconfig(kubeconfig);
  if (!config.ok()) {
    logger.Error("cannot load the Kubernetes configuration",
                 {{"error", std::string(config.status().message())}});
    return 1;
  }
  std::string ns_of_config = config->namespace_name;
  auto client = taas::kube::Client::Create(*config);
  if (!client.ok()) {
    logger.Error("cannot create the Kubernetes client",
                 {{"error", std::string(client.status().message())}});
    return 1;
  }

  char hostname[256] = {};
  ::gethostname(hostname, sizeof(hostname) - 1);
  std::string identity = flags->identity.empty()
                             ? std::string(hostname) + "_" + std::to_string(::getpid())
                             : flags->identity;

  // Signals are handled by sigwait on the main thread; every thread started later inherits the
  // mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  taas::controller::ControllerOptions options;
  options.namespaces = flags->namespaces;
  options.workers = flags->workers;
  options.build.addressing.cluster_domain = flags->cluster_domain;
  // The UI server runs beside the operator (the chart installs both in one namespace): the jobs'
  // NetworkPolicies admit that namespace to the metrics port.
  options.build.metrics_scraper_namespace = ns_of_config;
  options.status.stuck_after = std::chrono::seconds(flags->stuck_after_seconds);
  options.resync_period = std::chrono::seconds(flags->resync_seconds);
  options.create_parallelism = flags->api_parallelism;
  options.child_event_delay = std::chrono::milliseconds(flags->child_event_delay_ms);
  options.limits.max_replicas_per_job = flags->max_replicas_per_job;
  options.host = identity;
  taas::controller::Controller controller(client->get(), options, logger);

  taas::kube::LeaderElectionOptions lease;
  lease.namespace_name = flags->lease_namespace.empty() ? ns_of_config : flags->lease_namespace;
  lease.name = flags->lease_name;
  lease.identity = identity;
  lease.lease_duration = std::chrono::seconds(flags->lease_duration_seconds);
  lease.renew_deadline = std::chrono::seconds(std::max(1, flags->lease_duration_seconds * 2 / 3));
  lease.retry_period = std::chrono::seconds(std::max(1, flags->lease_duration_seconds / 7));
  if (auto valid = taas::kube::ValidateLeaderElectionOptions(lease); !valid.ok()) {
    logger.Error("invalid leader election settings", {{"error", std::string(valid.message())}});
    return 2;
  }
  taas::kube::LeaderElector elector(client->get(), lease, logger);

  std::atomic<bool> leading{false};
  taas::operator_cmd::HealthHandlers handlers;
  // A standby is ready: it serves probes and waits for the lease. Reporting it unready would keep
  // a 2-replica Deployment at 1/2 forever (controller-runtime does the same).
  handlers.ready = [&] { return !leading.load() || controller.Synced(); };
  handlers.metrics = [&] {
    return controller.RenderMetrics() +
           "# HELP taas_operator_leader 1 while this replica leads.\n"
           "# TYPE taas_operator_leader gauge\ntaas_operator_leader " +
           std::string(leading.load() ? "1" : "0") + "\n";
  };
  std::unique_ptr<taas::operator_cmd::HealthServer> health;
  if (flags->health_port >= 0) {
    auto server = taas::operator_cmd::HealthServer::Start(flags->health_address, flags->health_port,
                                                          handlers);
    if (!server.ok()) {
      logger.Error("cannot start the health server",
                   {{"error", std::string(server.status().message())}});
      return 1;
    }
    health = std::move(*server);
    logger.Info("serving /healthz /readyz /metrics", {{"port", health->port()}});
    if (!flags->port_file.empty()) {
      std::ofstream(flags->port_file + ".tmp") << health->port() << "\n";
      std::rename((flags->port_file + ".tmp").c_str(), flags->port_file.c_str());
    }
  }

  HostedUi ui;
  if (!flags->ui_listen.empty()) {
    auto started = StartUi(*flags, client->get(), logger);
    if (!started.ok()) {
      logger.Error("cannot serve the web UI", {{"error", std::string(started.status().message())}});
      return 1;
    }
    ui = std::move(*started);
  }

  std::atomic<int> exit_code{0};
  std::atomic<bool> stopping{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  std::thread runner([&] {
    if (flags->leader_elect) {
      if (!elector.Acquire()) return;
    }
    leading = true;
    if (!controller.Start(std::chrono::minutes(5))) {
      exit_code = 1;
      ::kill(::getpid(), SIGTERM);
      return;
    }
    if (flags->leader_elect) {
      if (!elector.HoldUntilStopped()) {
        // Lost the lease (by the renew deadline, before it can expire for a standby): no
        // reconcile in flight may write once another replica may lead, and a worker can be in
        // the middle of API calls, so the process ends here, as client-go's default does; the
        // Deployment restarts it as a standby.
        leading = false;
        logger.Error("stopped leading; exiting");
        std::fflush(stdout);
        std::_Exit(1);
      }
    } else {
      std::unique_lock<std::mutex> lock(stop_mu);
      stop_cv.wait(lock, [&] { return stopping.load(); });
    }
    controller.Stop();
    leading = false;
    if (flags->leader_elect) elector.Release();
  });

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  logger.Info("shutting down", {{"signal", signal_number}});
  {
    std::lock_guard<std::mutex> lock(stop_mu);
    stopping = true;
  }
  stop_cv.notify_all();
  elector.Stop();
  runner.join();
  controller.Stop();
  if (ui.server) ui.server->Stop();
  health.reset();
  return exit_code.load();
}
