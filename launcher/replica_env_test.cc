#include "replica_env.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "taas/contract/env.h"
#include "taas/contract/job_secret.h"
#include "taas/tfjob/validation.h"

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json Container(json command) {
  return {{"name", "tensorflow"},
          {"image", "x"},
          {"command", std::move(command)},
          {"env",
           {{{"name", "TF_LOGDIR"}, {"value", "/elsewhere"}},
            {{"name", "TAAS_TERMINATION_MESSAGE_PATH"}, {"value", "/dev/termination-log"}},
            {{"name", "A"}, {"value", "1"}},
            {{"name", "S"}, {"valueFrom", {{"secretKeyRef", {{"name", "s"}}}}}}}}};
}

tfjob::TFJob Job(const json& container, int workers = 2) {
  json tmpl = {{"spec", {{"containers", {container}}}}};
  auto job = tfjob::LoadTFJob(
      {{"apiVersion", "kubeflow.org/v1"},
       {"kind", "TFJob"},
       {"metadata", {{"name", "linear"}}},
       {"spec",
        {{"tfReplicaSpecs",
          {{"PS", {{"replicas", 1}, {"template", tmpl}}},
           {"Worker",
            {{"replicas", workers}, {"restartPolicy", "OnFailure"}, {"template", tmpl}}}}}}}});
  REQUIRE(job.ok());
  return *job;
}

struct Dirs {
  Dirs() {
    std::string tmpl = (fs::temp_directory_path() / "taas-replica-env-XXXXXX").string();
    root = ::mkdtemp(tmpl.data());
    fs::create_directories(root / "bin");
    std::ofstream(root / "bin" / "model") << "#!/bin/sh\n";
    ::chmod((root / "bin" / "model").c_str(), 0755);
    auto created = JobSecretFiles::Create(root.string(), "linear");
    REQUIRE(created.ok());
    secrets = std::move(*created);
  }
  ~Dirs() {
    secrets.reset();
    fs::remove_all(root);
  }
  std::vector<BinaryPlace> Places() const { return {{root.string(), true, "--build-dir"}}; }
  fs::path root;
  std::unique_ptr<JobSecretFiles> secrets;
};

TEST_CASE("each replica: name, two ports, the local executable, the operator's environment") {
  Dirs dirs;
  const tfjob::TFJob job = Job(Container({"/opt/taas/bin/model", "--x"}));
  std::vector<std::string> said;
  auto replicas = PlanReplicas(job, {dirs.Places(), "/models/linear", {{"A", "2"}}, {}},
                               {1001, 1002, 1003, 1004, 1005, 1006}, *dirs.secrets,
                               [&](const std::string& line) { said.push_back(line); });
  REQUIRE(replicas.ok());
  REQUIRE(replicas->size() == 3);
  const ReplicaLaunch& ps = (*replicas)[0];
  const ReplicaLaunch& w1 = (*replicas)[2];
  CHECK(ps.name == "linear-ps-0");
  CHECK(ps.port == 1001);
  CHECK(ps.metrics_port == 1002);
  CHECK(w1.name == "linear-worker-1");
  CHECK(w1.index == 1);
  CHECK(w1.port == 1005);
  CHECK(w1.metrics_port == 1006);
  CHECK(w1.policy == tfjob::RestartPolicy::kOnFailure);
  CHECK(w1.argv == std::vector<std::string>{(dirs.root / "bin" / "model").string(), "--x"});
  CHECK(w1.env.at("A") == "2");  // --env after the manifest's
  CHECK(w1.env.at(std::string(contract::kModelDirEnv)) == "/models/linear");
  // Where a pod's /dev/termination-log would be: beside the replica's log in the model dir.
  CHECK(w1.env.at(std::string(contract::kTerminationMessagePathEnv)) ==
        "/models/linear/logs/linear-worker-1.termination-log");
  CHECK(w1.env.at(std::string(contract::kJobNameEnv)) == "linear");
  CHECK(w1.env.at(std::string(contract::kMetricsPortEnv)) == "1006");
  CHECK(w1.env.at(std::string(contract::kJobTokenFileEnv)) == dirs.secrets->job_token_file());
  CHECK_FALSE(w1.env.contains(std::string(contract::kChiefTokenFileEnv)));  // not the master role
  CHECK((*replicas)[1].env.contains(std::string(contract::kChiefTokenFileEnv)));
  CHECK_FALSE(w1.env.contains("S"));
  CHECK(json::parse(w1.env.at(std::string(contract::kTfConfigEnv))) ==
        json::parse(R"({"cluster":{"ps":["127.0.0.1:1001"],
                                   "worker":["127.0.0.1:1003","127.0.0.1:1005"]},
                        "task":{"type":"worker","index":1},"environment":"cloud"})"));
  const std::set<std::string> lines(said.begin(), said.end());
  CHECK(said.size() == 10);  // which executable, once; three lines for each of the 3 replicas
  CHECK(lines.contains("using " + (dirs.root / "bin" / "model").string() +
                       " for /opt/taas/bin/model"));
  CHECK(
      lines.contains("linear-worker-1: env S uses valueFrom, which has no local meaning; skipped"));
  CHECK(lines.contains("linear-worker-1: TF_LOGDIR /elsewhere replaced by the local model dir"));
  CHECK(
      lines.contains("linear-worker-1: TAAS_TERMINATION_MESSAGE_PATH /dev/termination-log "
                     "replaced by the launcher's file for the job's report"));
}

TEST_CASE("a single replica gets no TF_CONFIG; a command not under /opt/taas/bin runs as written") {
  Dirs dirs;
  auto job = Job(Container({"python3", "train.py"}), 1);
  job.spec.replica_specs.erase(tfjob::ReplicaType::kPS);
  auto replicas = PlanReplicas(job, {dirs.Places(), "/m", {}, {}}, {1, 2}, *dirs.secrets,
                               [](const std::string&) {});
  REQUIRE(replicas.ok());
  REQUIRE(replicas->size() == 1);
  CHECK((*replicas)[0].argv == std::vector<std::string>{"python3", "train.py"});
  CHECK_FALSE((*replicas)[0].env.contains(std::string(contract::kTfConfigEnv)));
}

TEST_CASE("a container the launcher cannot run is an error naming its field") {
  Dirs dirs;
  const std::string field = "spec.tfReplicaSpecs.PS.template.spec.containers[tensorflow]";
  auto plan = [&](const json& container) {
    return PlanReplicas(Job(container), {dirs.Places(), "/m", {}, {}}, {1, 2, 3, 4, 5, 6},
                        *dirs.secrets, [](const std::string&) {});
  };
  CHECK(plan(Container(json::array())).status().message() ==
        field +
            ".command: needed to run the replica locally (the image's entrypoint is unknown "
            "here)");
  const auto missing = plan(Container({"/opt/taas/bin/missing"})).status();
  CHECK(missing.code() == absl::StatusCode::kNotFound);
  CHECK(missing.message() == field + ".command[0]: /opt/taas/bin/missing: no executable named " +
                                 "missing in --build-dir " + dirs.root.string() +
                                 " (and below). Build it, or say where it is with --bin-dir DIR " +
                                 "or TAAS_BIN_PATH=DIR[:DIR...]");
  CHECK(plan(Container({"/opt/taas/bin/../bin/model"})).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(plan(Container({1})).status().message() ==
        field + ".command[0]: must be a string, got integer");
  CHECK(plan(Container("run")).status().code() == absl::StatusCode::kInvalidArgument);
  json bad_env = Container({"python3"});
  bad_env["env"] = {3};
  CHECK(plan(bad_env).status().message() == field + ".env[0]: must be an object, got integer");
  bad_env["env"] = {{{"name", 5}, {"value", "x"}}};
  CHECK(plan(bad_env).status().code() == absl::StatusCode::kInvalidArgument);
  bad_env["env"] = {{{"value", "x"}}};
  CHECK(plan(bad_env).status().message() == field + ".env[0].name: needed");
}

TEST_CASE("replicas share the machine's CPUs unless the manifest, --env or the shell says") {
  const auto job = Job(Container({"/opt/taas/bin/model"}), 3);  // 1 PS, 3 workers
  using Env = std::map<std::string, std::string>;
  const std::string threads(contract::kComputeThreadsEnv), wait(contract::kOmpWaitPolicyEnv);
  CHECK(LocalComputeDefaults(job.spec, 8, nullptr) == Env{{threads, "2"}, {wait, "PASSIVE"}});
  CHECK(LocalComputeDefaults(job.spec, 2, nullptr).at(threads) == "1");
  const char* shell[] = {"OMP_WAIT_POLICY=ACTIVE", "TAAS_COMPUTE_THREADS_X=1", nullptr};
  CHECK(LocalComputeDefaults(job.spec, 8, const_cast<char* const*>(shell)) == Env{{threads, "2"}});

  Dirs dirs;
  json container = Container({"/opt/taas/bin/model"});
  container["env"].push_back({{"name", wait}, {"value", "ACTIVE"}});
  auto replicas = PlanReplicas(
      Job(container),
      {dirs.Places(), "/m", {{threads, "4"}}, {{threads, "1"}, {wait, "PASSIVE"}, {"C", "3"}}},
      {1, 2, 3, 4, 5, 6}, *dirs.secrets, [](const std::string&) {});
  REQUIRE(replicas.ok());
  const auto& env = (*replicas)[1].env;
  CHECK(env.at(threads) == "4");    // --env
  CHECK(env.at(wait) == "ACTIVE");  // the manifest
  CHECK(env.at("C") == "3");        // a default nobody set
}

TEST_CASE(
    "a replica's process environment: the launcher's without TF_CONFIG, the replica's over it") {
  const char* inherited[] = {"PATH=/bin", "TF_CONFIG={\"cluster\":{}}", "A=0", "junk", nullptr};
  CHECK(ProcessEnvironment({{"A", "1"}, {"B", "x=y"}}, const_cast<char* const*>(inherited)) ==
        std::vector<std::string>{"A=1", "B=x=y", "PATH=/bin"});
  CHECK(ProcessEnvironment({{"TF_CONFIG", "{}"}}, nullptr) ==
        std::vector<std::string>{"TF_CONFIG={}"});
}

TEST_CASE("specs that disagree on a shared setting get one warning; --env settles it") {
  tfjob::TFJob job = Job(Container("/opt/taas/bin/model"));
  // A Chief spec as the Worker's, which alone sets TF_MAX_STEPS.
  tfjob::ReplicaSpec& worker = job.spec.replica_specs.at(tfjob::ReplicaType::kWorker);
  tfjob::ReplicaSpec chief = worker;
  chief.replicas = 1;
  job.spec.replica_specs[tfjob::ReplicaType::kChief] = chief;
  worker.pod_template["spec"]["containers"][0]["env"].push_back(
      {{"name", "TF_MAX_STEPS"}, {"value", "1000"}});
  ReplicaSettings settings;
  settings.model_dir = "/models/linear";
  const auto warning = SettingsWarning(job, settings);
  REQUIRE(warning.has_value());
  CHECK(warning->rfind("warning: replica specs disagree", 0) == 0);
  CHECK(warning->find("TF_MAX_STEPS (Chief unset, Worker \"1000\")") != std::string::npos);
  // Both specs set TF_LOGDIR to /elsewhere, but the launcher's model dir replaces it anyway.
  CHECK(warning->find("TF_LOGDIR") == std::string::npos);
  settings.env = {{"TF_MAX_STEPS", "1000"}};
  CHECK_FALSE(SettingsWarning(job, settings).has_value());
}

TEST_CASE("the termination grace: the pod template's, else Kubernetes' 30 s; errors name it") {
  const std::string path = "spec.tfReplicaSpecs.Worker.template";
  CHECK(*TerminationGraceOf(json::object(), path) == std::chrono::seconds(30));
  CHECK(*TerminationGraceOf({{"spec", {{"containers", json::array()}}}}, path) ==
        std::chrono::seconds(30));
  CHECK(*TerminationGraceOf({{"spec", {{"terminationGracePeriodSeconds", 120}}}}, path) ==
        std::chrono::seconds(120));
  CHECK(*TerminationGraceOf({{"spec", {{"terminationGracePeriodSeconds", 0}}}}, path) ==
        std::chrono::seconds(0));
  const auto negative =
      TerminationGraceOf({{"spec", {{"terminationGracePeriodSeconds", -1}}}}, path);
  CHECK(negative.status().message() ==
        "spec.tfReplicaSpecs.Worker.template.spec.terminationGracePeriodSeconds must be >= 0, got "
        "-1");
  const auto text = TerminationGraceOf({{"spec", {{"terminationGracePeriodSeconds", "60"}}}}, path);
  REQUIRE_FALSE(text.ok());
  CHECK(std::string(text.status().message()).find("terminationGracePeriodSeconds") !=
        std::string::npos);
}

TEST_CASE("free ports: below the kernel's ephemeral range, distinct, bindable") {
  CHECK(EphemeralPortsStart("32768\t60999\n") == 32768);
  CHECK(EphemeralPortsStart("40000 60999") == 40000);
  for (const char* bad : {"", "\t", "abc", "-1 5", "10500 60000", "99999 100000", "123456789"}) {
    CHECK(EphemeralPortsStart(bad) == kDefaultEphemeralPortsStart);
  }
  auto ports = FreePorts(8);
  REQUIRE(ports.ok());
  REQUIRE(ports->size() == 8);
  std::set<int> distinct(ports->begin(), ports->end());
  CHECK(distinct.size() == 8);
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  std::string range_text;
  std::getline(range_file, range_text);
  for (int port : *ports) {
    CHECK(port >= kLowestChosenPort);
    CHECK(port < EphemeralPortsStart(range_text));
  }
}

}  // namespace
}  // namespace taas::launcher
