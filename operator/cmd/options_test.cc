#include "options.h"

#include <doctest/doctest.h>

#include <map>
#include <regex>
#include <set>

#include "taas/tfjob/status.h"
#include "taas/tfjob/validation.h"

namespace taas::operator_cmd {
namespace {

std::string ErrorOf(const std::vector<std::string>& args) {
  auto parsed = ParseFlags(args);
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST_CASE("without flags the operator runs with the documented defaults") {
  auto parsed = ParseFlags({});
  REQUIRE(parsed.ok());
  const OperatorOptions& o = *parsed;
  CHECK(o.kubeconfig.empty());
  CHECK(o.controller.namespaces.empty());
  CHECK(o.controller.workers == 4);
  CHECK(o.health_port == 8081);
  CHECK(o.health_address == "0.0.0.0");
  CHECK(o.leader_elect);
  CHECK(o.lease.namespace_name.empty());  // the config's, by ResolveWithCluster
  CHECK(o.lease.name == "taas-operator");
  CHECK(o.lease.identity.empty());  // <host>_<pid>, by ResolveWithCluster
  CHECK(o.lease.lease_duration == std::chrono::seconds(15));
  CHECK(o.lease.renew_deadline == std::chrono::seconds(10));
  CHECK(o.lease.retry_period == std::chrono::seconds(2));
  CHECK(o.controller.build.addressing.cluster_domain.empty());
  CHECK(o.controller.build.gang_scheduler_name.empty());
  CHECK(o.controller.status.stuck_after == std::chrono::seconds(300));
  CHECK(o.controller.status.evaluator_grace == tfjob::StatusOptions{}.evaluator_grace);
  CHECK(o.controller.node_failure_after == std::chrono::seconds(60));
  CHECK(o.controller.resync_period == std::chrono::seconds(300));
  CHECK(o.controller.create_parallelism == 16);
  CHECK(o.controller.child_event_delay == std::chrono::milliseconds(250));
  CHECK(o.controller.limits.max_replicas_per_job == tfjob::kMaxReplicasPerJob);
  CHECK(o.controller.progress.interval == std::chrono::seconds(30));
  CHECK(o.controller.progress.parallelism == 4);
  CHECK(o.controller.progress.targets.empty());
  CHECK(o.port_file.empty());
  CHECK(o.log_level == LogLevel::kInfo);
  CHECK(o.ui_listen.empty());
  CHECK(o.ui.api.namespaces == std::vector<std::string>{"default"});
  CHECK(o.ui_token_file.empty());
  CHECK(o.ui.http.assets_dir.empty());
  CHECK_FALSE(o.ui.api.allow_anonymous_read);
  CHECK_FALSE(o.help);
}

TEST_CASE("every flag lands in the option of the part it configures") {
  auto parsed = ParseFlags({"--kubeconfig",
                            "/k",
                            "--namespaces=a,b",
                            "--workers",
                            "8",
                            "--health-port",
                            "0",
                            "--health-address",
                            "127.0.0.1",
                            "--leader-elect=false",
                            "--lease-namespace",
                            "ops",
                            "--lease-name",
                            "lead",
                            "--identity",
                            "me",
                            "--cluster-domain",
                            "corp.local",
                            "--gang-scheduler-name",
                            "volcano",
                            "--stuck-after-seconds",
                            "60",
                            "--evaluator-grace-seconds",
                            "5",
                            "--node-failure-seconds",
                            "0",
                            "--resync-seconds",
                            "30",
                            "--lease-duration-seconds",
                            "3",
                            "--api-parallelism",
                            "2",
                            "--child-event-delay-ms",
                            "0",
                            "--max-replicas-per-job",
                            "64",
                            "--port-file",
                            "/p",
                            "--progress-seconds",
                            "0",
                            "--scrape-parallelism",
                            "8",
                            "--metrics-target",
                            "ns/j-worker-0=127.0.0.1:9100",
                            "--metrics-target=ns/j-evaluator-0=127.0.0.1:9101",
                            "--log-level",
                            "debug",
                            "--ui-listen",
                            "0.0.0.0:8080",
                            "--ui-namespaces",
                            "c",
                            "--ui-token-file",
                            "/t",
                            "--ui-assets",
                            "/dist",
                            "--ui-allow-anonymous-read"});
  REQUIRE(parsed.ok());
  const OperatorOptions& o = *parsed;
  CHECK(o.kubeconfig == "/k");
  CHECK(o.controller.namespaces == std::vector<std::string>{"a", "b"});
  CHECK(o.controller.workers == 8);
  CHECK(o.health_port == 0);
  CHECK(o.health_address == "127.0.0.1");
  CHECK_FALSE(o.leader_elect);
  CHECK(o.lease.namespace_name == "ops");
  CHECK(o.lease.name == "lead");
  CHECK(o.lease.identity == "me");
  CHECK(o.controller.build.addressing.cluster_domain == "corp.local");
  CHECK(o.controller.build.gang_scheduler_name == "volcano");
  CHECK(o.controller.status.stuck_after == std::chrono::seconds(60));
  CHECK(o.controller.status.evaluator_grace == std::chrono::seconds(5));
  CHECK(o.controller.node_failure_after == std::chrono::seconds(0));
  CHECK(o.controller.resync_period == std::chrono::seconds(30));
  // The shortest lease: renewed within 2 s, retried every second.
  CHECK(o.lease.lease_duration == std::chrono::seconds(3));
  CHECK(o.lease.renew_deadline == std::chrono::seconds(2));
  CHECK(o.lease.retry_period == std::chrono::seconds(1));
  CHECK(o.controller.create_parallelism == 2);
  CHECK(o.controller.child_event_delay == std::chrono::milliseconds(0));
  CHECK(o.controller.limits.max_replicas_per_job == 64);
  CHECK(o.port_file == "/p");
  CHECK(o.controller.progress.interval == std::chrono::seconds(0));
  CHECK(o.controller.progress.parallelism == 8);
  CHECK(o.controller.progress.targets ==
        std::map<std::string, std::string>{{"ns/j-worker-0", "127.0.0.1:9100"},
                                           {"ns/j-evaluator-0", "127.0.0.1:9101"}});
  CHECK(o.log_level == LogLevel::kDebug);
  CHECK(o.ui_listen == "0.0.0.0:8080");
  CHECK(o.ui.http.host == "0.0.0.0");
  CHECK(o.ui.http.port == 8080);
  CHECK(o.ui.api.namespaces == std::vector<std::string>{"c"});
  CHECK(o.ui_token_file == "/t");
  CHECK(o.ui.http.assets_dir == "/dist");
  CHECK(o.ui.api.allow_anonymous_read);
}

TEST_CASE("the UI offers the operator's namespaces unless given its own") {
  auto parsed = ParseFlags({"--namespaces", "team-a,team-b"});
  REQUIRE(parsed.ok());
  CHECK(parsed->ui.api.namespaces == std::vector<std::string>{"team-a", "team-b"});
  parsed = ParseFlags({"--namespaces", "team-a", "--ui-namespaces", "team-b"});
  REQUIRE(parsed.ok());
  CHECK(parsed->ui.api.namespaces == std::vector<std::string>{"team-b"});
}

TEST_CASE("the lease's deadlines follow its duration") {
  auto parsed = ParseFlags({"--lease-duration-seconds", "60"});
  REQUIRE(parsed.ok());
  CHECK(parsed->lease.renew_deadline == std::chrono::seconds(40));
  CHECK(parsed->lease.retry_period == std::chrono::seconds(8));
  CHECK(kube::ValidateLeaderElectionOptions(parsed->lease).ok());
}

TEST_CASE("every mistake names the flag and the range or form it expects") {
  const std::string max_replicas = std::to_string(tfjob::kMaxReplicasPerJob);
  const std::string past_max_replicas = std::to_string(tfjob::kMaxReplicasPerJob + 1);
  const std::vector<std::pair<std::vector<std::string>, std::string>> mistakes = {
      {{"--workers", "0"}, "--workers: expected a number from 1 to 1024, got 0"},
      {{"--health-port", "65536"}, "--health-port: expected a number from 0 to 65535, got 65536"},
      {{"--lease-duration-seconds", "2"},
       "--lease-duration-seconds: expected a number from 3 to 3600, got 2"},
      {{"--stuck-after-seconds", "31536001"},
       "--stuck-after-seconds: expected a number from 0 to 31536000, got 31536001"},
      {{"--node-failure-seconds", "3601"},
       "--node-failure-seconds: expected a number from 0 to 3600, got 3601"},
      {{"--evaluator-grace-seconds", "3601"},
       "--evaluator-grace-seconds: expected a number from 0 to 3600, got 3601"},
      {{"--evaluator-grace-seconds", "-1"},
       "--evaluator-grace-seconds: expected a number from 0 to 3600, got -1"},
      {{"--resync-seconds", "-1"},
       "--resync-seconds: expected a number from 0 to 31536000, got -1"},
      {{"--api-parallelism", "1025"},
       "--api-parallelism: expected a number from 1 to 1024, got 1025"},
      {{"--child-event-delay-ms", "0.5"},
       "--child-event-delay-ms: expected a number from 0 to 60000, got 0.5"},
      {{"--max-replicas-per-job", past_max_replicas},
       "--max-replicas-per-job: expected a number from 1 to " + max_replicas + ", got " +
           past_max_replicas},
      {{"--progress-seconds", "3601"},
       "--progress-seconds: expected a number from 0 to 3600, got 3601"},
      {{"--scrape-parallelism", "0"},
       "--scrape-parallelism: expected a number from 1 to 64, got 0"},
      {{"--metrics-target", "j-worker-0=127.0.0.1:9100"},
       "--metrics-target: expected NS/REPLICA=HOST:PORT, got j-worker-0=127.0.0.1:9100"},
      {{"--metrics-target", "ns/j-worker-0=9100"},
       "--metrics-target: expected NS/REPLICA=HOST:PORT, got ns/j-worker-0=9100"},
      {{"--log-level", "verbose"}, "--log-level: expected debug|info|warning|error, got verbose"},
      {{"--leader-elect=no"}, "--leader-elect: expected true or false, got no"},
      {{"--kubeconfig"}, "--kubeconfig: needs a value"},
      {{"--worker", "2"}, "--worker: unknown option"},
      {{"job.yaml"}, "job.yaml: unexpected argument"},
      {{"--ui-listen", "8080"},
       "--ui-listen wants HOST:PORT with a port from 0 to 65535, got \"8080\""},
  };
  for (const auto& [args, error] : mistakes) CHECK(ErrorOf(args) == error);
  CHECK(ErrorOf({"--gang-scheduler-name", "Bad_Name"})
            .rfind("--gang-scheduler-name: expected a scheduler name", 0) == 0);
}

TEST_CASE("--help asks for the usage, which names every flag there is") {
  auto parsed = ParseFlags({"--workers", "2", "-h", "stray"});
  REQUIRE(parsed.ok());
  CHECK(parsed->help);
  const std::string usage(Usage());
  std::set<std::string> named;
  const std::regex flag("--([a-z-]+)");
  for (auto it = std::sregex_iterator(usage.begin(), usage.end(), flag);
       it != std::sregex_iterator(); ++it) {
    named.insert((*it)[1]);
  }
  CHECK(named.size() == 29);
  for (const std::string& name : named) {
    CAPTURE(name);
    // Declared: alone, a flag is either a switch or wants its value, never unknown.
    const std::string error = ErrorOf({"--" + name});
    CHECK((error.empty() || error == "--" + name + ": needs a value"));
  }
}

TEST_CASE("what the flags leave to the cluster comes from its config and the process") {
  struct Case {
    std::vector<std::string> args;
    std::string lease_namespace, identity;
  };
  for (const Case& c :
       {Case{{}, "taas-system", "host_42"},
        Case{{"--lease-namespace", "ops", "--identity", "replica-a"}, "ops", "replica-a"}}) {
    CAPTURE(c.identity);
    auto parsed = ParseFlags(c.args);
    REQUIRE(parsed.ok());
    ResolveWithCluster("taas-system", "host_42", &*parsed);
    CHECK(parsed->lease.namespace_name == c.lease_namespace);
    CHECK(parsed->lease.identity == c.identity);
    CHECK(parsed->controller.host == c.identity);
    // The UI server's pods, beside the operator's, may scrape the jobs' metrics.
    CHECK(parsed->controller.build.metrics_scraper_namespace == "taas-system");
  }
}

}  // namespace
}  // namespace taas::operator_cmd
