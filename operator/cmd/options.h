// What taas-operator runs with: its flags bound straight into the options of the parts it starts
// (the controller, the lease, the hosted UI server), checked in one place. Pure: no I/O, so every
// flag's spelling, default, range and error is unit tested (options_test.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/controller/controller.h"
#include "taas/kube/leader_election.h"
#include "taas/ui_server/ui_server.h"

namespace taas::operator_cmd {

struct OperatorOptions {
  std::string kubeconfig;  // --kubeconfig; empty: $KUBECONFIG, else the in-cluster account
  // --namespaces, --workers, --api-parallelism, --child-event-delay-ms, --cluster-domain,
  // --gang-scheduler-name, --stuck-after-seconds, --evaluator-grace-seconds,
  // --max-replicas-per-job, --resync-seconds,
  // --progress-seconds, --scrape-parallelism, --metrics-target;
  // build.metrics_scraper_namespace and host by ResolveWithCluster.
  controller::ControllerOptions controller;
  bool leader_elect = true;  // --leader-elect
  // --lease-namespace, --lease-name, --identity, --lease-duration-seconds (which sets the renew
  // deadline and the retry period too); an empty namespace or identity is filled in by
  // ResolveWithCluster.
  kube::LeaderElectionOptions lease;
  std::string health_address = "0.0.0.0";  // --health-address
  int health_port = 8081;                  // --health-port; 0: any free port
  std::string port_file;                   // --port-file: the health port is written there
  LogLevel log_level = LogLevel::kInfo;    // --log-level

  // The web UI served from this process: off while --ui-listen is empty. `ui` holds
  // --ui-namespaces (else --namespaces, else "default"), --ui-allow-anonymous-read, --ui-assets
  // and the host and port of --ui-listen; its token comes from --ui-token-file when it starts.
  std::string ui_listen;
  ui_server::UiServerOptions ui;
  std::string ui_token_file;

  bool help = false;  // --help or -h: print Usage() and do nothing else
};

// What `taas-operator --help` prints, and a flag mistake under its error.
std::string_view Usage();

// Parses the command line (without the program name). InvalidArgument naming the flag and what it
// expects (`--workers: expected a number from 1 to 1024, got 0`), for an argument that is not a
// flag, or for a --gang-scheduler-name or --ui-listen that cannot be used.
absl::StatusOr<OperatorOptions> ParseFlags(const std::vector<std::string>& args);

// Fills in what the flags left to the cluster: the lease's namespace (without --lease-namespace)
// and the namespace whose pods may scrape the jobs' metrics are the config's; the lease holder and
// the Events' source host are --identity, else `default_identity`.
void ResolveWithCluster(std::string_view config_namespace, std::string_view default_identity,
                        OperatorOptions* options);

}  // namespace taas::operator_cmd
