// taas-operator: runs kubeflow.org/v1 TFJobs on Kubernetes.
//
//   taas-operator [--kubeconfig PATH] [--namespaces a,b] [--workers 4] [--health-port 8081]
//                 [--health-address 0.0.0.0] [--leader-elect=true] [--lease-namespace NS]
//                 [--lease-name taas-operator] [--identity ID] [--cluster-domain DOMAIN]
//                 [--stuck-after-seconds 300] [--resync-seconds 300] [--port-file PATH]
//                 [--api-parallelism 16] [--child-event-delay-ms 250] [--log-level info]
//                 [--max-replicas-per-job 2048] [--gang-scheduler-name none|volcano|NAME]
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
#include <mutex>
#include <thread>

#include "health_server.h"
#include "taas/base/log.h"
#include "taas/controller/controller.h"
#include "taas/flags/flags.h"
#include "taas/kube/client.h"
#include "taas/kube/leader_election.h"
#include "taas/tfjob/validation.h"
#include "taas/ui_kube/kube_client_api.h"
#include "taas/ui_kube/kube_job_source.h"
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
  std::string gang_scheduler_name;  // controller::BuildOptions::gang_scheduler_name
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
    "                     [--gang-scheduler-name none|volcano|NAME]  (default none: no gang\n"
    "                      scheduling, even for a runPolicy.schedulingPolicy, as Kubeflow)\n"
    "                     [--log-level debug|info|warning|error]\n"
    "                     [--ui-listen HOST:PORT] [--ui-namespaces a,b] [--ui-token-file FILE]\n"
    "                     [--ui-assets DIR] [--ui-allow-anonymous-read]\n";

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  taas::flags::FlagSet set;
  set.String("kubeconfig", &flags.kubeconfig);
  set.List("namespaces", &flags.namespaces);
  set.Int("workers", 1, 1024, &flags.workers);
  set.Int("health-port", 0, 65535, &flags.health_port);
  set.String("health-address", &flags.health_address);
  set.Switch("leader-elect", &flags.leader_elect);
  set.String("lease-namespace", &flags.lease_namespace);
  set.String("lease-name", &flags.lease_name);
  set.String("identity", &flags.identity);
  set.String("cluster-domain", &flags.cluster_domain);
  set.String("gang-scheduler-name", &flags.gang_scheduler_name);
  set.Int("stuck-after-seconds", 0, 86400 * 365, &flags.stuck_after_seconds);
  set.Int("resync-seconds", 0, 86400 * 365, &flags.resync_seconds);
  // 3 s at least: the renew deadline (2/3) must stay above the retry period (1/7, 1 s at least).
  set.Int("lease-duration-seconds", 3, 3600, &flags.lease_duration_seconds);
  set.Int("api-parallelism", 1, 1024, &flags.api_parallelism);
  set.Int("child-event-delay-ms", 0, 60000, &flags.child_event_delay_ms);
  // Lowers the installation's limit; the CRD's bound (kMaxReplicasPerJob) cannot be raised.
  set.Int("max-replicas-per-job", 1, taas::tfjob::kMaxReplicasPerJob, &flags.max_replicas_per_job);
  set.String("port-file", &flags.port_file);
  set.Choice("log-level", {"debug", "info", "warning", "error"}, &flags.log_level);
  set.String("ui-listen", &flags.ui_listen);
  set.List("ui-namespaces", &flags.ui_namespaces);
  set.String("ui-token-file", &flags.ui_token_file);
  set.String("ui-assets", &flags.ui_assets);
  set.Switch("ui-allow-anonymous-read", &flags.ui_allow_anonymous_read);
  TAAS_ASSIGN_OR_RETURN(auto parsed, set.Parse(taas::flags::Args(argc, argv)));
  if (parsed.help) {
    std::cout << kUsage;
    std::exit(0);
  }
  if (!parsed.positional.empty()) {
    return absl::InvalidArgumentError(parsed.positional.front() + ": unexpected argument");
  }
  TAAS_RETURN_IF_ERROR(taas::controller::ValidateGangSchedulerName(flags.gang_scheduler_name));
  if (!flags.ui_listen.empty()) {
    TAAS_RETURN_IF_ERROR(
        taas::ui_server::ParseListenAddress("--ui-listen", flags.ui_listen, &flags.ui_http));
  }
  return flags;
}

// The web UI served from this process, over the operator's own (thread-safe) client.
struct HostedUi {
  std::unique_ptr<taas::ui_kube::KubeClientApi> kube;
  std::unique_ptr<taas::ui_kube::KubeJobSource> source;
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
  ui.kube = std::make_unique<taas::ui_kube::KubeClientApi>(client);
  ui.source = std::make_unique<taas::ui_kube::KubeJobSource>(ui.kube.get());
  ui.server = std::make_unique<taas::ui_server::UiServer>(ui.source.get(), options,
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
  options.build.gang_scheduler_name = flags->gang_scheduler_name;
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
  std::unique_ptr<taas::http::Server> health;
  if (flags->health_port >= 0) {
    auto server =
        taas::operator_cmd::StartHealthServer(flags->health_address, flags->health_port, handlers);
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
