#include "options.h"

#include <algorithm>
#include <chrono>

#include "taas/flags/flags.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/validation.h"

namespace taas::operator_cmd {
namespace {

constexpr std::string_view kUsage =
    "usage: taas-operator [--kubeconfig PATH] [--namespaces a,b] [--workers N]\n"
    "                     [--health-port PORT] [--health-address ADDR] "
    "[--leader-elect=true|false]\n"
    "                     [--lease-namespace NS] [--lease-name NAME] [--lease-duration-seconds S]\n"
    "                     [--identity ID] [--cluster-domain DOMAIN] [--stuck-after-seconds S]\n"
    "                     [--evaluator-grace-seconds S] [--node-failure-seconds S]\n"
    "                     [--resync-seconds S] [--api-parallelism N] [--child-event-delay-ms MS]\n"
    "                     [--max-replicas-per-job N] [--port-file PATH]\n"
    "                     [--progress-seconds S] [--scrape-parallelism N]\n"
    "                     [--metrics-target NS/REPLICA=HOST:PORT]...\n"
    "                     [--gang-scheduler-name none|volcano|NAME]  (default none: no gang\n"
    "                      scheduling, even for a runPolicy.schedulingPolicy, as Kubeflow)\n"
    "                     [--log-level debug|info|warning|error]\n"
    "                     [--ui-listen HOST:PORT] [--ui-namespaces a,b] [--ui-token-file FILE]\n"
    "                     [--ui-assets DIR] [--ui-allow-anonymous-read]\n";

constexpr int kYearSeconds = 86400 * 365;

// Every flag, bound to the field it sets; the field's value is the flag's default.
void BindFlags(flags::FlagSet& set, OperatorOptions& o) {
  controller::ControllerOptions& c = o.controller;
  set.String("kubeconfig", &o.kubeconfig);
  set.List("namespaces", &c.namespaces);
  set.Int("workers", 1, 1024, &c.workers);
  set.Int("health-port", 0, 65535, &o.health_port);
  set.String("health-address", &o.health_address);
  set.Switch("leader-elect", &o.leader_elect);
  set.String("lease-namespace", &o.lease.namespace_name);
  set.String("lease-name", &o.lease.name);
  set.String("identity", &o.lease.identity);
  set.String("cluster-domain", &c.build.addressing.cluster_domain);
  set.String("gang-scheduler-name", &c.build.gang_scheduler_name);
  set.Int("stuck-after-seconds", 0, kYearSeconds, &c.status.stuck_after);
  set.Int("evaluator-grace-seconds", 0, tfjob::kMaxEvaluatorGrace.count(),
          &c.status.evaluator_grace);
  // 0: off. Left alone, a lost node's pods are evicted after 300 s, gracefully, and stay
  // terminating (the node never confirms): a threshold past 300 s still helps, up to an hour.
  set.Int("node-failure-seconds", 0, 3600, &c.node_failure_after);
  set.Int("resync-seconds", 0, kYearSeconds, &c.resync_period);
  // 3 s at least: the renew deadline (2/3) must stay above the retry period (1/7, 1 s at least).
  set.Int("lease-duration-seconds", 3, 3600, &o.lease.lease_duration);
  set.Int("api-parallelism", 1, 1024, &c.create_parallelism);
  set.Int("child-event-delay-ms", 0, 60000, &c.child_event_delay);
  // Lowers the installation's limit; the CRD's bound (kMaxReplicasPerJob) cannot be raised.
  set.Int("max-replicas-per-job", 1, tfjob::kMaxReplicasPerJob, &c.limits.max_replicas_per_job);
  set.String("port-file", &o.port_file);
  set.Int("progress-seconds", 0, 3600, &c.progress.interval);
  set.Int("scrape-parallelism", 1, 64, &c.progress.parallelism);
  set.KeyValues("metrics-target", &c.progress.targets);
  set.Choice<LogLevel>("log-level",
                       {{"debug", LogLevel::kDebug},
                        {"info", LogLevel::kInfo},
                        {"warning", LogLevel::kWarning},
                        {"error", LogLevel::kError}},
                       &o.log_level);
  set.String("ui-listen", &o.ui_listen);
  set.List("ui-namespaces", &o.ui.api.namespaces);
  set.String("ui-token-file", &o.ui_token_file);
  set.String("ui-assets", &o.ui.http.assets_dir);
  set.Switch("ui-allow-anonymous-read", &o.ui.api.allow_anonymous_read);
}

// What follows from the flags given: the lease's timing, the UI's namespaces and address.
absl::Status Complete(OperatorOptions& o) {
  TAAS_RETURN_IF_ERROR(
      controller::ValidateGangSchedulerName(o.controller.build.gang_scheduler_name));
  o.lease.renew_deadline = std::max(std::chrono::seconds(1), o.lease.lease_duration * 2 / 3);
  o.lease.retry_period = std::max(std::chrono::seconds(1), o.lease.lease_duration / 7);
  TAAS_RETURN_IF_ERROR(kube::ValidateLeaderElectionOptions(o.lease));
  for (const auto& [replica, address] : o.controller.progress.targets) {
    if (replica.find('/') == std::string::npos || address.find(':') == std::string::npos) {
      return absl::InvalidArgumentError("--metrics-target: expected NS/REPLICA=HOST:PORT, got " +
                                        replica + "=" + address);
    }
  }
  // The UI lists and creates jobs where the operator runs them; an operator watching every
  // namespace offers "default" unless told otherwise (the chart does the same).
  if (o.ui.api.namespaces.empty()) {
    o.ui.api.namespaces = !o.controller.namespaces.empty() ? o.controller.namespaces
                                                           : std::vector<std::string>{"default"};
  }
  if (!o.ui_listen.empty()) {
    TAAS_RETURN_IF_ERROR(ui_server::ParseListenAddress("--ui-listen", o.ui_listen, &o.ui.http));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view Usage() { return kUsage; }

absl::StatusOr<OperatorOptions> ParseFlags(const std::vector<std::string>& args) {
  OperatorOptions options;
  // Without --lease-namespace the lease lives in the config's namespace (ResolveWithCluster).
  options.lease.namespace_name.clear();
  flags::FlagSet set;
  BindFlags(set, options);
  TAAS_ASSIGN_OR_RETURN(const flags::FlagSet::Parsed parsed, set.Parse(args));
  if (parsed.help) {
    options.help = true;
    return options;
  }
  if (!parsed.positional.empty()) {
    return absl::InvalidArgumentError(parsed.positional.front() + ": unexpected argument");
  }
  TAAS_RETURN_IF_ERROR(Complete(options));
  return options;
}

void ResolveWithCluster(std::string_view config_namespace, std::string_view default_identity,
                        OperatorOptions* options) {
  if (options->lease.namespace_name.empty()) options->lease.namespace_name = config_namespace;
  if (options->lease.identity.empty()) options->lease.identity = default_identity;
  options->controller.host = options->lease.identity;
  // The operator reads running jobs' progress from their chiefs, and the UI server runs beside it
  // (the chart installs both in one namespace): the jobs' NetworkPolicies admit that namespace to
  // the metrics port.
  options->controller.build.metrics_scraper_namespace = config_namespace;
}

}  // namespace taas::operator_cmd
