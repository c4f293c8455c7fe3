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
// This file and options.h are the one place the operator reads its configuration (flags, then
// KUBECONFIG, then the in-cluster service account).
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "health_server.h"
#include "options.h"
#include "taas/base/log.h"
#include "taas/controller/controller.h"
#include "taas/flags/flags.h"
#include "taas/kube/client.h"
#include "taas/kube/leader_election.h"
#include "taas/ui_kube/kube_client_api.h"
#include "taas/ui_kube/kube_job_source.h"
#include "taas/ui_server/ui_server.h"

namespace {

using taas::operator_cmd::OperatorOptions;

// The API server's client and the namespace of the configuration it was made from.
struct Cluster {
  std::unique_ptr<taas::kube::Client> client;
  std::string config_namespace;
};

// Connects with --kubeconfig, else $KUBECONFIG, else the in-cluster service account; nullopt
// (logged) when none works.
std::optional<Cluster> Connect(std::string kubeconfig, const taas::Logger& logger) {
  if (kubeconfig.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env != nullptr) kubeconfig = env;
  }
  auto config =
      kubeconfig.empty() ? taas::kube::InClusterConfig() : taas::kube::LoadKubeconfig(kubeconfig);
  if (!config.ok()) {
    logger.Error("cannot load the Kubernetes configuration",
                 {{"error", std::string(config.status().message())}});
    return std::nullopt;
  }
  auto client = taas::kube::Client::Create(*config);
  if (!client.ok()) {
    logger.Error("cannot create the Kubernetes client",
                 {{"error", std::string(client.status().message())}});
    return std::nullopt;
  }
  return Cluster{std::move(*client), config->namespace_name};
}

// `<host>_<pid>`: unique per process, the lease holder's identity without --identity.
std::string ProcessIdentity() {
  char hostname[256] = {};
  ::gethostname(hostname, sizeof(hostname) - 1);
  return std::string(hostname) + "_" + std::to_string(::getpid());
}

// The health server on --health-address:--health-port; the port it got goes to --port-file.
absl::StatusOr<std::unique_ptr<taas::http::Server>> StartHealth(
    const OperatorOptions& options, taas::operator_cmd::HealthHandlers handlers,
    const taas::Logger& logger) {
  TAAS_ASSIGN_OR_RETURN(
      auto health, taas::operator_cmd::StartHealthServer(options.health_address,
                                                         options.health_port, std::move(handlers)));
  logger.Info("serving /healthz /readyz /metrics", {{"port", health->port()}});
  if (!options.port_file.empty()) {
    std::ofstream(options.port_file + ".tmp") << health->port() << "\n";
    std::rename((options.port_file + ".tmp").c_str(), options.port_file.c_str());
  }
  return health;
}

// Probes and metrics of this replica, leading or not.
taas::operator_cmd::HealthHandlers HealthOf(const taas::controller::Controller& controller,
                                            const std::atomic<bool>& leading) {
  taas::operator_cmd::HealthHandlers handlers;
  // A standby is ready: it serves probes and waits for the lease. Reporting it unready would keep
  // a 2-replica Deployment at 1/2 forever (controller-runtime does the same).
  handlers.ready = [controller = &controller, leading = &leading] {
    return !leading->load() || controller->Synced();
  };
  handlers.metrics = [controller = &controller, leading = &leading] {
    return controller->RenderMetrics() +
           "# HELP taas_operator_leader 1 while this replica leads.\n"
           "# TYPE taas_operator_leader gauge\ntaas_operator_leader " +
           std::string(leading->load() ? "1" : "0") + "\n";
  };
  return handlers;
}

// The web UI served from this process, over the operator's own (thread-safe) client.
struct HostedUi {
  std::unique_ptr<taas::ui_kube::KubeClientApi> kube;
  std::unique_ptr<taas::ui_kube::KubeJobSource> source;
  std::unique_ptr<taas::ui_server::UiServer> server;
};

absl::StatusOr<HostedUi> StartUi(const OperatorOptions& options, taas::kube::Client* client,
                                 const taas::Logger& logger) {
  taas::ui_server::UiServerOptions ui_options = options.ui;
  TAAS_ASSIGN_OR_RETURN(
      const taas::ui_server::BearerToken token,
      taas::ui_server::ChooseToken(options.ui_token_file, ui_options.api.allow_anonymous_read));
  ui_options.api.token = token.value;

  HostedUi ui;
  ui.kube = std::make_unique<taas::ui_kube::KubeClientApi>(client);
  ui.source = std::make_unique<taas::ui_kube::KubeJobSource>(ui.kube.get());
  ui.server = std::make_unique<taas::ui_server::UiServer>(ui.source.get(), ui_options,
                                                          logger.With({{"component", "taas-ui"}}));
  TAAS_RETURN_IF_ERROR(ui.server->Start());
  // Only a token this process made up is in the URL: a mounted one is already known to its owner.
  const std::string url =
      taas::ui_server::BrowserUrl(ui_options.http.host, ui.server->port(), token);
  logger.Info("serving the web UI", {{"url", url}});
  return ui;
}

// Set once the process is told to stop; without leader election the leader's thread waits for it.
class StopRequest {
 public:
  void Set() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopped_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
};

// The leader's thread: takes the lease (unless --leader-elect=false), runs the controller while
// it holds it and until the process stops, then gives the lease back. Returns the exit code.
int Lead(bool leader_elect, taas::controller::Controller& controller,
         taas::kube::LeaderElector& elector, StopRequest& stop, std::atomic<bool>& leading,
         const taas::Logger& logger) {
  if (leader_elect && !elector.Acquire()) return 0;
  leading = true;
  if (!controller.Start(std::chrono::minutes(5))) {
    ::kill(::getpid(), SIGTERM);
    return 1;
  }
  if (!leader_elect) {
    stop.Wait();
  } else if (!elector.HoldUntilStopped()) {
    // Lost the lease (by the renew deadline, before it can expire for a standby): no reconcile in
    // flight may write once another replica may lead, and a worker can be in the middle of API
    // calls, so the process ends here, as client-go's default does; the Deployment restarts it as
    // a standby.
    leading = false;
    logger.Error("stopped leading; exiting");
    std::fflush(stdout);
    std::_Exit(1);
  }
  controller.Stop();
  leading = false;
  if (leader_elect) elector.Release();
  return 0;
}

// Serves health (and the UI with --ui-listen) on every replica, leads when it holds the lease,
// and stops on the first of `signals`. Returns the exit code.
int Run(const OperatorOptions& options, taas::kube::Client* client, const sigset_t& signals,
        const taas::Logger& logger) {
  taas::controller::Controller controller(client, options.controller, logger);
  taas::kube::LeaderElector elector(client, options.lease, logger);
  std::atomic<bool> leading{false};
  auto health = StartHealth(options, HealthOf(controller, leading), logger);
  if (!health.ok()) {
    logger.Error("cannot start the health server",
                 {{"error", std::string(health.status().message())}});
    return 1;
  }
  HostedUi ui;
  if (!options.ui_listen.empty()) {
    auto started = StartUi(options, client, logger);
    if (!started.ok()) {
      logger.Error("cannot serve the web UI", {{"error", std::string(started.status().message())}});
      return 1;
    }
    ui = std::move(*started);
  }

  std::atomic<int> exit_code{0};
  StopRequest stop;
  std::thread leader(
      [&] { exit_code = Lead(options.leader_elect, controller, elector, stop, leading, logger); });
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  logger.Info("shutting down", {{"signal", signal_number}});
  stop.Set();
  elector.Stop();
  leader.join();
  controller.Stop();
  if (ui.server) ui.server->Stop();
  health->reset();
  return exit_code.load();
}

}  // namespace

int main(int argc, char** argv) {
  // Reconciles run on many short-lived threads; glibc would give each its own malloc arena and
  // keep their free memory, multiplying the resident size. Two arenas are plenty here.
  mallopt(M_ARENA_MAX, 2);
  auto options = taas::operator_cmd::ParseFlags(taas::flags::Args(argc, argv));
  if (!options.ok()) {
    std::cerr << "taas-operator: " << options.status().message() << "\n"
              << taas::operator_cmd::Usage();
    return 2;
  }
  if (options->help) {
    std::cout << taas::operator_cmd::Usage();
    return 0;
  }
  taas::Logger logger =
      taas::Logger(stdout, options->log_level).With({{"component", "taas-operator"}});
  std::optional<Cluster> cluster = Connect(options->kubeconfig, logger);
  if (!cluster) return 1;
  taas::operator_cmd::ResolveWithCluster(cluster->config_namespace, ProcessIdentity(), &*options);

  // Signals are handled by sigwait on the main thread; every thread started later inherits the
  // mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return Run(*options, cluster->client.get(), signals, logger);
}
