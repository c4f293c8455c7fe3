#include "taas/controller/builders.h"

#include <doctest/doctest.h>

#include "taas/base/random_token.h"
#include "taas/contract/job_secret.h"
#include "taas/job_report/job_report.h"
#include "taas/tfjob/rfc3339.h"
#include "taas/tfjob/validation.h"

namespace tf = taas::tfjob;
using nlohmann::json;
using taas::controller::BuildOptions;

namespace {

json Template(json extra_env = json::array()) {
  json container = {{"name", "tensorflow"},
                    {"image", "taas/trainer:latest"},
                    {"command", {"/opt/taas/bin/fashion-mnist-cnn"}},
                    {"ports", {{{"name", "metrics"}, {"containerPort", 9090}}}}};
  if (!extra_env.empty()) container["env"] = extra_env;
  return {{"metadata", {{"labels", {{"team", "vision"}}}, {"annotations", {{"a", "b"}}}}},
          {"spec", {{"containers", {container, {{"name", "sidecar"}, {"image", "busybox"}}}}}}};
}

tf::TFJob Job(json specs, json run_policy = json::object()) {
  json object = {{"apiVersion", "kubeflow.org/v1"},
                 {"kind", "TFJob"},
                 {"metadata", {{"name", "mnist"}, {"namespace", "team-a"}, {"uid", "uid-123"}}},
                 {"spec", {{"tfReplicaSpecs", specs}}}};
  if (!run_policy.empty()) object["spec"]["runPolicy"] = run_policy;
  auto job = tf::LoadTFJob(object);
  REQUIRE_MESSAGE(job.ok(), job.status().ToString());
  return *job;
}

tf::TFJob PsWorkers() {
  return Job({{"PS", {{"replicas", 1}, {"template", Template()}}},
              {"Worker",
               {{"replicas", 2},
                {"restartPolicy", "ExitCode"},
                {"template", Template({{{"name", "TF_CONFIG"}, {"value", "stale"}},
                                       {{"name", "KEEP"}, {"value", "1"}}})}}}});
}

std::string EnvValue(const json& pod, const std::string& container, const std::string& name) {
  for (const auto& c : pod["spec"]["containers"]) {
    if (c["name"] != container || !c.contains("env")) continue;
    for (const auto& e : c["env"]) {
      if (e["name"] == name) return e["value"];
    }
  }
  return "<unset>";
}

}  // namespace

TEST_CASE("pods carry name, labels, owner reference, restart policy and exact TF_CONFIG") {
  tf::TFJob job = PsWorkers();
  json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 1, BuildOptions{});
  CHECK(pod["kind"] == "Pod");
  CHECK(pod["metadata"]["name"] == "mnist-worker-1");
  CHECK(pod["metadata"]["namespace"] == "team-a");
  const json& labels = pod["metadata"]["labels"];
  CHECK(labels["training.kubeflow.org/operator-name"] == "tfjob-controller");
  CHECK(labels["training.kubeflow.org/job-name"] == "mnist");
  CHECK(labels["training.kubeflow.org/replica-type"] == "worker");
  CHECK(labels["training.kubeflow.org/replica-index"] == "1");
  CHECK_FALSE(labels.contains("training.kubeflow.org/job-role"));
  CHECK(labels["team"] == "vision");
  CHECK(pod["metadata"]["annotations"]["a"] == "b");
  const json& owner = pod["metadata"]["ownerReferences"][0];
  CHECK(owner["apiVersion"] == "kubeflow.org/v1");
  CHECK(owner["kind"] == "TFJob");
  CHECK(owner["name"] == "mnist");
  CHECK(owner["uid"] == "uid-123");
  CHECK(owner["controller"] == true);
  CHECK(owner["blockOwnerDeletion"] == true);
  CHECK(pod["spec"]["restartPolicy"] == "Never");  // ExitCode: the operator restarts
  CHECK(
      EnvValue(pod, "tensorflow", "TF_CONFIG") ==
      R"({"cluster":{"ps":["mnist-ps-0.team-a.svc:2222"],"worker":["mnist-worker-0.team-a.svc:2222","mnist-worker-1.team-a.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"})");
  CHECK(EnvValue(pod, "tensorflow", "KEEP") == "1");
  CHECK(EnvValue(pod, "sidecar", "TF_CONFIG") == "<unset>");

  json worker0 = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 0, BuildOptions{});
  CHECK(worker0["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master");
  json ps = taas::controller::BuildPod(job, tf::ReplicaType::kPS, 0, BuildOptions{});
  CHECK(ps["metadata"]["name"] == "mnist-ps-0");
  CHECK(EnvValue(ps, "tensorflow", "TF_CONFIG").find(R"("task":{"type":"ps","index":0})") !=
        std::string::npos);
}

TEST_CASE("a single-replica job gets no TF_CONFIG; a custom cluster domain is honoured") {
  tf::TFJob single = Job({{"Worker", {{"replicas", 1}, {"template", Template()}}}});
  json pod = taas::controller::BuildPod(single, tf::ReplicaType::kWorker, 0, BuildOptions{});
  CHECK(EnvValue(pod, "tensorflow", "TF_CONFIG") == "<unset>");

  tf::TFJob job = Job({{"Chief", {{"replicas", 1}, {"template", Template()}}},
                       {"Evaluator", {{"replicas", 1}, {"template", Template()}}}});
  BuildOptions options;
  options.addressing.cluster_domain = "cluster.local";
  json chief = taas::controller::BuildPod(job, tf::ReplicaType::kChief, 0, options);
  CHECK(
      EnvValue(chief, "tensorflow", "TF_CONFIG") ==
      R"({"cluster":{"chief":["mnist-chief-0.team-a.svc.cluster.local:2222"],"evaluator":["mnist-evaluator-0.team-a.svc.cluster.local:2222"]},"task":{"type":"chief","index":0},"environment":"cloud"})");
  CHECK(chief["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master");
}

TEST_CASE("restart policies map to pod restart policies like Kubeflow") {
  for (auto [policy, expected] :
       {std::pair{"Always", "Always"}, std::pair{"OnFailure", "OnFailure"},
        std::pair{"Never", "Never"}, std::pair{"ExitCode", "Never"}}) {
    tf::TFJob job =
        Job({{"Worker", {{"replicas", 2}, {"restartPolicy", policy}, {"template", Template()}}}});
    json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 0, BuildOptions{});
    CHECK(pod["spec"]["restartPolicy"] == expected);
  }
}

TEST_CASE("worker 0's service selects as Kubeflow's does: no job-role, which its pod keeps") {
  // PsWorkers has no chief: worker 0 is the master role.
  tf::TFJob job = PsWorkers();
  json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 0, BuildOptions{});
  json svc = taas::controller::BuildService(job, tf::ReplicaType::kWorker, 0, BuildOptions{});
  CHECK(pod["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master");
  const json expected = {{"training.kubeflow.org/operator-name", "tfjob-controller"},
                         {"training.kubeflow.org/job-name", "mnist"},
                         {"training.kubeflow.org/replica-type", "worker"},
                         {"training.kubeflow.org/replica-index", "0"}};
  CHECK(svc["spec"]["selector"] == expected);
  CHECK(svc["metadata"]["labels"] == expected);
}

TEST_CASE("services are headless, select their pod and expose the container's ports") {
  tf::TFJob job = PsWorkers();
  json svc = taas::controller::BuildService(job, tf::ReplicaType::kPS, 0, BuildOptions{});
  CHECK(svc["kind"] == "Service");
  CHECK(svc["metadata"]["name"] == "mnist-ps-0");
  CHECK(svc["spec"]["clusterIP"] == "None");
  CHECK(svc["spec"]["selector"]["training.kubeflow.org/replica-type"] == "ps");
  CHECK(svc["spec"]["selector"]["training.kubeflow.org/replica-index"] == "0");
  CHECK(svc["spec"]["selector"]["training.kubeflow.org/job-name"] == "mnist");
  CHECK(svc["metadata"]["ownerReferences"][0]["uid"] == "uid-123");
  std::map<std::string, int> ports;
  for (const auto& p : svc["spec"]["ports"]) ports[p["name"]] = p["port"];
  CHECK(ports["tfjob-port"] == 2222);
  CHECK(ports["metrics"] == 9090);
}

TEST_CASE("a queued service is built from the job as it is when its turn comes, or not at all") {
  const json job = {
      {"apiVersion", "kubeflow.org/v1"},
      {"kind", "TFJob"},
      {"metadata", {{"name", "mnist"}, {"namespace", "team-a"}, {"uid", "uid-123"}}},
      {"spec", {{"tfReplicaSpecs", {{"PS", {{"replicas", 1}, {"template", Template()}}}}}}}};
  const tf::ReplicaRef ps0{tf::ReplicaType::kPS, 0};
  const auto service = [&](const json* object) {
    return taas::controller::ServiceForCurrentJob(object, "uid-123", ps0, tf::Limits{},
                                                  BuildOptions{});
  };
  auto built = service(&job);
  REQUIRE(built.has_value());
  CHECK(*built == taas::controller::BuildService(*tf::LoadTFJob(job), tf::ReplicaType::kPS, 0,
                                                 BuildOptions{}));

  // The template changed while the service waited: the service exposes the ports of now.
  json changed = job;
  changed["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["ports"][0]
         ["containerPort"] = 9191;
  built = service(&changed);
  REQUIRE(built.has_value());
  std::map<std::string, int> ports;
  for (const auto& p : (*built)["spec"]["ports"]) ports[p["name"]] = p["port"];
  CHECK(ports["metrics"] == 9191);

  CHECK_FALSE(service(nullptr).has_value());  // deleted
  json replaced = job;
  replaced["metadata"]["uid"] = "uid-456";  // deleted and created again under the same name
  CHECK_FALSE(service(&replaced).has_value());
  json deleting = job;
  deleting["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z";
  CHECK_FALSE(service(&deleting).has_value());
  deleting["metadata"]["deletionTimestamp"] = nullptr;  // as the controller reads it: not deleted
  CHECK(service(&deleting).has_value());
  json invalid = job;
  invalid["spec"]["tfReplicaSpecs"]["PS"]["replicas"] = "one";
  CHECK_FALSE(service(&invalid).has_value());
  json garbage = json::array({1, 2});
  CHECK_FALSE(service(&garbage).has_value());
  json no_uid = job;
  no_uid["metadata"]["uid"] = 123;
  CHECK_FALSE(service(&no_uid).has_value());
}

namespace {

// A template whose `tensorflow` container has these resources.
json TemplateWith(json resources) {
  json t = Template();
  t["spec"]["containers"][0]["resources"] = std::move(resources);
  return t;
}

BuildOptions GangNamed(std::string name) {
  BuildOptions options;
  options.gang_scheduler_name = std::move(name);
  return options;
}

}  // namespace

TEST_CASE("schedulingPolicy shapes the PodGroup, the pod-group label and the gang scheduler") {
  tf::TFJob job = Job({{"PS", {{"replicas", 1}, {"template", Template()}}},
                       {"Worker", {{"replicas", 4}, {"template", Template()}}}},
                      {{"schedulingPolicy", {{"minAvailable", 3}}}});
  const BuildOptions options = GangNamed("scheduler-plugins-scheduler");
  const taas::controller::Gang gang = taas::controller::GangOf(options);
  REQUIRE(gang.scheduler == taas::controller::GangScheduler::kSchedulerPlugins);
  CHECK(gang.scheduler_name == "scheduler-plugins-scheduler");
  json pg = taas::controller::BuildPodGroup(job, gang);
  CHECK(pg["apiVersion"] == "scheduling.x-k8s.io/v1alpha1");
  CHECK(pg["spec"]["minMember"] == 3);
  CHECK_FALSE(pg["spec"].contains("minResources"));  // the templates request nothing
  CHECK(pg["metadata"]["ownerReferences"][0]["kind"] == "TFJob");
  json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 0, options);
  CHECK(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "mnist");
  CHECK(pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler");

  tf::TFJob all = Job({{"Worker", {{"replicas", 4}, {"template", Template()}}}},
                      {{"schedulingPolicy", json::object()}});
  CHECK(taas::controller::BuildPodGroup(all, gang)["spec"]["minMember"] == 4);
}

TEST_CASE("without --gang-scheduler-name, as Kubeflow's default, a schedulingPolicy is ignored") {
  // A manifest written for Volcano: under Kubeflow without the flag its pods get no PodGroup and
  // the default scheduler; naming a gang scheduler this cluster may lack would leave them Pending.
  tf::TFJob asks = Job({{"PS", {{"replicas", 1}, {"template", Template()}}},
                        {"Worker", {{"replicas", 2}, {"template", Template()}}}},
                       {{"schedulingPolicy", {{"minAvailable", 3}, {"queue", "default"}}}});
  // Unset and the explicit "none" are the same.
  for (const BuildOptions& options : {BuildOptions{}, GangNamed("none")}) {
    CAPTURE(options.gang_scheduler_name);
    const taas::controller::Gang gang = taas::controller::GangOf(options);
    CHECK(gang.scheduler == taas::controller::GangScheduler::kNone);
    CHECK(gang.scheduler_name.empty());
    for (const tf::ReplicaType type : {tf::ReplicaType::kPS, tf::ReplicaType::kWorker}) {
      json pod = taas::controller::BuildPod(asks, type, 0, options);
      CHECK_FALSE(pod["spec"].contains("schedulerName"));
      CHECK_FALSE(pod["metadata"]["labels"].contains("scheduling.x-k8s.io/pod-group"));
      CHECK_FALSE(pod["metadata"]
                      .value("annotations", json::object())
                      .contains("scheduling.k8s.io/group-name"));
    }
    tf::TFJob plain = PsWorkers();
    CHECK(taas::controller::GangOf(options).scheduler == taas::controller::GangScheduler::kNone);
  }
}

TEST_CASE("--gang-scheduler-name gang schedules every job, as Kubeflow's flag does") {
  // A job without a schedulingPolicy: Kubeflow makes a PodGroup for every job once the flag is set.
  tf::TFJob job = Job(
      {{"PS", {{"replicas", 1}, {"template", TemplateWith({{"requests", {{"cpu", "500m"}}}})}}},
       {"Worker",
        {{"replicas", 2},
         {"template", TemplateWith({{"limits", {{"nvidia.com/gpu", 2}, {"memory", "1.5Gi"}}}})}}}});
  const BuildOptions options = GangNamed("scheduler-plugins-scheduler");
  const taas::controller::Gang gang = taas::controller::GangOf(options);
  REQUIRE(gang.scheduler == taas::controller::GangScheduler::kSchedulerPlugins);
  json pg = taas::controller::BuildPodGroup(job, gang);
  CHECK(pg["apiVersion"] == "scheduling.x-k8s.io/v1alpha1");
  CHECK(pg["metadata"]["name"] == "mnist");
  CHECK(pg["metadata"]["namespace"] == "team-a");
  CHECK(pg["spec"]["minMember"] == 3);
  // Every replica's requests, limits where a container has no requests.
  CHECK(pg["spec"]["minResources"] ==
        json{{"cpu", "500m"}, {"memory", "3221225472"}, {"nvidia.com/gpu", "4"}});
  CHECK_FALSE(pg["spec"].contains("scheduleTimeoutSeconds"));
  json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 1, options);
  CHECK(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "mnist");
  CHECK(pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler");

  // Any other name is a scheduler-plugins scheduler under that name.
  json custom = taas::controller::BuildPod(job, tf::ReplicaType::kPS, 0, GangNamed("my-gang"));
  CHECK(custom["spec"]["schedulerName"] == "my-gang");
  CHECK(custom["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "mnist");
}

TEST_CASE("minResources: the first minMember pods in Kubeflow's order, quantities added exactly") {
  json worker = TemplateWith({{"requests", {{"cpu", "0.25"}, {"memory", "512Mi"}}},
                              {"limits", {{"nvidia.com/gpu", "1"}}}});
  // A second container adds to its pod; an init container does not count.
  worker["spec"]["containers"][1]["resources"] = {{"requests", {{"cpu", "750m"}}}};
  worker["spec"]["initContainers"] = {
      {{"name", "init"}, {"image", "busybox"}, {"resources", {{"requests", {{"cpu", "8"}}}}}}};
  tf::TFJob job =
      Job({{"Chief", {{"replicas", 1}, {"template", TemplateWith({{"requests", {{"cpu", "2"}}}})}}},
           {"Worker", {{"replicas", 4}, {"template", worker}}}},
          {{"schedulingPolicy", {{"minAvailable", 3}, {"scheduleTimeoutSeconds", 30}}}});
  // The chief, then two workers; the workers' GPU limits do not count beside their requests.
  CHECK(taas::controller::PodGroupMinResources(job, 3) ==
        json{{"cpu", "4"}, {"memory", "1073741824"}});
  CHECK(taas::controller::PodGroupMinResources(job, 1) == json{{"cpu", "2"}});
  CHECK(taas::controller::PodGroupMinResources(job, 0) == json::object());
  json pg = taas::controller::BuildPodGroup(
      job, taas::controller::GangOf(GangNamed("scheduler-plugins-scheduler")));
  CHECK(pg["spec"]["minMember"] == 3);
  CHECK(pg["spec"]["minResources"] == json{{"cpu", "4"}, {"memory", "1073741824"}});
  CHECK(pg["spec"]["scheduleTimeoutSeconds"] == 30);

  // The policy's minResources wins, verbatim.
  tf::TFJob given = Job({{"Worker", {{"replicas", 2}, {"template", worker}}}},
                        {{"schedulingPolicy", {{"minResources", {{"nvidia.com/gpu", "8"}}}}}});
  CHECK(taas::controller::BuildPodGroup(
            given, taas::controller::GangOf(
                       GangNamed("scheduler-plugins-scheduler")))["spec"]["minResources"] ==
        json{{"nvidia.com/gpu", "8"}});

  // Sums in every suffix, to the nanounit; what does not parse is left out.
  json odd = TemplateWith({{"requests",
                            {{"cpu", "100m"},
                             {"memory", "1e3"},
                             {"example.com/a", "250u"},
                             {"example.com/b", "1n"},
                             {"example.com/c", "lots"},
                             {"example.com/d", "1.5k"},
                             {"example.com/e", "-1"},
                             {"example.com/f", "999999999999999999999999Ei"},
                             {"example.com/g", "1.5.3"}}}});
  tf::TFJob sums = Job({{"Worker", {{"replicas", 3}, {"template", odd}}}});
  CHECK(taas::controller::PodGroupMinResources(sums, 3) == json{{"cpu", "300m"},
                                                                {"memory", "3000"},
                                                                {"example.com/a", "750u"},
                                                                {"example.com/b", "3n"},
                                                                {"example.com/d", "4500"}});
}

TEST_CASE("--gang-scheduler-name=volcano: Volcano's PodGroup and pod annotations, as Kubeflow") {
  json named = TemplateWith({{"requests", {{"nvidia.com/gpu", "1"}}}});
  named["spec"]["schedulerName"] = "my-scheduler";
  tf::TFJob job = Job({{"PS", {{"replicas", 1}, {"template", named}}},
                       {"Worker", {{"replicas", 2}, {"template", TemplateWith({})}}}},
                      {{"schedulingPolicy",
                        {{"minAvailable", 2},
                         {"queue", "research"},
                         {"priorityClass", "high"},
                         {"scheduleTimeoutSeconds", 30}}}});
  const BuildOptions options = GangNamed("Volcano");  // Kubeflow compares ignoring case
  const taas::controller::Gang gang = taas::controller::GangOf(options);
  REQUIRE(gang.scheduler == taas::controller::GangScheduler::kVolcano);
  CHECK(gang.scheduler_name == "volcano");
  json pg = taas::controller::BuildPodGroup(job, gang);
  CHECK(pg["apiVersion"] == "scheduling.volcano.sh/v1beta1");
  CHECK(pg["kind"] == "PodGroup");
  CHECK(pg["spec"] == json{{"minMember", 2},
                           {"queue", "research"},
                           {"priorityClassName", "high"},
                           {"minResources", {{"nvidia.com/gpu", "1"}}}});
  CHECK(taas::controller::PodGroupsPath(gang.scheduler, "team-a") ==
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups");

  json worker = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 1, options);
  CHECK(worker["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "mnist");
  CHECK(worker["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker");
  CHECK(worker["metadata"]["annotations"]["a"] == "b");  // the template's are kept
  CHECK_FALSE(worker["metadata"]["labels"].contains("scheduling.x-k8s.io/pod-group"));
  CHECK(worker["spec"]["schedulerName"] == "volcano");
  // A scheduler named by the template is kept (Kubeflow warns with an Event).
  json ps = taas::controller::BuildPod(job, tf::ReplicaType::kPS, 0, options);
  CHECK(ps["spec"]["schedulerName"] == "my-scheduler");
  CHECK(ps["metadata"]["annotations"]["volcano.sh/task-spec"] == "ps");

  // Without a policy: every replica, queue "default", no priority class.
  tf::TFJob bare = Job({{"Worker", {{"replicas", 3}, {"template", Template()}}}});
  json bare_pg = taas::controller::BuildPodGroup(bare, gang);
  CHECK(bare_pg["spec"] ==
        json{{"minMember", 3}, {"queue", "default"}, {"minResources", json::object()}});
}

TEST_CASE("ValidateGangSchedulerName accepts scheduler names, volcano and none") {
  for (const char* good :
       {"", "none", "volcano", "VOLCANO", "scheduler-plugins-scheduler", "a.b-c", "x1"}) {
    CHECK_MESSAGE(taas::controller::ValidateGangSchedulerName(good).ok(), good);
  }
  for (const char* bad : {"Bad", "-x", "x-", "a..b", ".a", "a.", "under_score", "a b"}) {
    const absl::Status status = taas::controller::ValidateGangSchedulerName(bad);
    CHECK_MESSAGE(status.code() == absl::StatusCode::kInvalidArgument, bad);
    CHECK(std::string(status.message()).find("--gang-scheduler-name") == 0);
  }
  CHECK_FALSE(taas::controller::ValidateGangSchedulerName(std::string(254, 'a')).ok());
}

TEST_CASE("ObserveReplica reads type, index, phase, exit code and waiting reasons") {
  json pod = {{"metadata",
               {{"name", "mnist-worker-1"},
                {"creationTimestamp", "2026-01-01T00:00:00Z"},
                {"labels",
                 {{"training.kubeflow.org/replica-type", "worker"},
                  {"training.kubeflow.org/replica-index", "1"}}},
                {"ownerReferences",
                 {{{"kind", "TFJob"}, {"name", "mnist"}, {"uid", "u"}, {"controller", true}}}}}},
              {"status",
               {{"phase", "Failed"},
                {"containerStatuses",
                 {{{"name", "sidecar"}, {"state", {{"terminated", {{"exitCode", 3}}}}}},
                  {{"name", "tensorflow"},
                   {"restartCount", 2},
                   {"state", {{"terminated", {{"exitCode", 137}}}}}}}}}}};
  auto r = taas::controller::ObserveReplica(pod);
  REQUIRE(r);
  CHECK(r->type == tf::ReplicaType::kWorker);
  CHECK(r->index == 1);
  CHECK(r->phase == tf::ReplicaPhase::kFailed);
  CHECK(r->exit_code == 137);
  CHECK(r->restarts == 2);
  CHECK_FALSE(r->terminating);
  CHECK(taas::controller::ControllerUid(pod) == "u");
  CHECK(taas::controller::ControllerName(pod) == "mnist");

  json pending = {
      {"metadata",
       {{"creationTimestamp", "2026-01-01T00:00:00Z"},
        {"deletionTimestamp", "2026-01-01T00:01:00Z"},
        {"labels",
         {{"training.kubeflow.org/replica-type", "ps"},
          {"training.kubeflow.org/replica-index", "0"}}}}},
      {"status",
       {{"phase", "Pending"},
        {"containerStatuses",
         {{{"name", "tensorflow"},
           {"state", {{"waiting", {{"reason", "ImagePullBackOff"}, {"message", "m"}}}}}}}}}}};
  auto p = taas::controller::ObserveReplica(pending);
  REQUIRE(p);
  CHECK(p->type == tf::ReplicaType::kPS);
  CHECK(p->phase == tf::ReplicaPhase::kPending);
  CHECK(p->terminating);
  CHECK(p->reason == "ImagePullBackOff");
  CHECK(p->waiting_since.has_value());

  CHECK_FALSE(taas::controller::ObserveReplica({{"metadata", {{"name", "x"}}}}).has_value());
  json bad = pending;
  bad["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "1x";
  CHECK_FALSE(taas::controller::ObserveReplica(bad).has_value());
}

namespace {

void CheckSameReplica(const json& pod);  // ObserveReplica(Trim(pod)) == ObserveReplica(pod)

// A pod of the job's chief whose training container ended with `terminated`.
json EndedPod(const json& terminated) {
  return {{"metadata",
           {{"name", "mnist-worker-0"},
            {"labels",
             {{"training.kubeflow.org/replica-type", "worker"},
              {"training.kubeflow.org/replica-index", "0"}}}}},
          {"status",
           {{"phase", "Succeeded"},
            {"containerStatuses",
             {{{"name", "sidecar"},
               {"state", {{"terminated", {{"exitCode", 0}, {"message", "sidecar's"}}}}}},
              {{"name", "tensorflow"}, {"state", {{"terminated", terminated}}}}}}}}};
}

}  // namespace

TEST_CASE("ObserveReplica reads when the training container ended: state.terminated.finishedAt") {
  auto ended = taas::controller::ObserveReplica(
      EndedPod({{"exitCode", 0}, {"finishedAt", "2026-01-01T00:10:00Z"}}));
  REQUIRE(ended);
  CHECK(ended->finished_at == tf::ParseRfc3339("2026-01-01T00:10:00Z").value());
  CHECK(taas::controller::ObserveReplica(
            EndedPod({{"exitCode", 1}, {"finishedAt", "2026-01-01T00:10:00+02:00"}}))
            ->finished_at == tf::ParseRfc3339("2025-12-31T22:10:00Z").value());

  // A container that ended before and runs again has not ended: lastState is not read.
  json restarted = EndedPod(json::object());
  json& tensorflow = restarted["status"]["containerStatuses"][1];
  tensorflow["state"] = {{"running", {{"startedAt", "2026-01-01T00:11:00Z"}}}};
  tensorflow["lastState"] = {
      {"terminated", {{"exitCode", 1}, {"finishedAt", "2026-01-01T00:10:00Z"}}}};
  CHECK_FALSE(taas::controller::ObserveReplica(restarted)->finished_at.has_value());

  // Whatever else the field holds, the time is unknown (the job then does not wait on it).
  for (const json& hostile :
       {json(nullptr), json(17), json(-1.5), json(true), json::array({"x"}),
        json::object({{"seconds", 1}}), json(""), json("yesterday"), json("2026-13-01T00:00:00Z"),
        json("2026-01-01 00:10:00"), json(std::string(1 << 16, '9'))}) {
    auto r = taas::controller::ObserveReplica(EndedPod({{"exitCode", 0}, {"finishedAt", hostile}}));
    REQUIRE_MESSAGE(r, hostile.dump().substr(0, 80));
    CHECK_MESSAGE(!r->finished_at, hostile.dump().substr(0, 80));
    CheckSameReplica(EndedPod({{"exitCode", 0}, {"finishedAt", hostile}}));
  }
  CHECK_FALSE(taas::controller::ObserveReplica(EndedPod({{"exitCode", 0}}))->finished_at);
}

TEST_CASE(
    "ObserveReplica takes a pod of any shape, every field of any JSON type, without a throw") {
  const json pod = EndedPod({{"exitCode", 3}, {"finishedAt", "2026-01-01T00:10:00Z"}});
  const std::vector<std::string> paths = {"/metadata",
                                          "/metadata/labels",
                                          "/metadata/deletionTimestamp",
                                          "/status",
                                          "/status/phase",
                                          "/status/reason",
                                          "/status/conditions",
                                          "/status/containerStatuses",
                                          "/status/containerStatuses/1",
                                          "/status/containerStatuses/1/name",
                                          "/status/containerStatuses/1/restartCount",
                                          "/status/containerStatuses/1/state",
                                          "/status/containerStatuses/1/state/terminated",
                                          "/status/containerStatuses/1/state/terminated/exitCode",
                                          "/status/containerStatuses/1/lastState"};
  for (const std::string& path : paths) {
    for (const json& value :
         {json(nullptr), json(17), json(-1.5), json(true), json("x"), json::array({1, "y"}),
          json::object({{"z", 1}}), json(std::int64_t{1} << 40)}) {
      json hostile = pod;
      hostile[json::json_pointer(path)] = value;
      CAPTURE(path);
      CAPTURE(value.dump());
      std::optional<tf::ObservedReplica> r;
      CHECK_NOTHROW(r = taas::controller::ObserveReplica(hostile));
      if (r && path == "/status/containerStatuses/1/state/terminated/exitCode") {
        CHECK(r->exit_code ==
              (value.is_number_integer() && value.get<std::int64_t>() == 17 ? 17 : 0));
      }
    }
  }
  // The pod as given: its exit code is read.
  CHECK(taas::controller::ObserveReplica(pod)->exit_code == 3);
}

TEST_CASE("TerminationMessage reads the training container's message once it exited") {
  const std::string report = R"({"globalStep":6000,"finalMetrics":{"accuracy":0.9087}})";
  CHECK(taas::controller::TerminationMessage(EndedPod({{"exitCode", 0}, {"message", report}})) ==
        report);
  // A failed chief's too: the report of its failed evaluation names the job's failure.
  const std::string failed = R"({"globalStep":300,"finalMetrics":{},"error":"evaluate() failed"})";
  CHECK(taas::controller::TerminationMessage(EndedPod({{"exitCode", 3}, {"message", failed}})) ==
        failed);
  // Not the sidecar's, not one still running or ended before.
  CHECK_FALSE(taas::controller::TerminationMessage(EndedPod({{"exitCode", 0}})));
  json restarted = EndedPod(json::object());
  restarted["status"]["containerStatuses"][1]["state"] = {{"running", json::object()}};
  restarted["status"]["containerStatuses"][1]["lastState"] = {
      {"terminated", {{"exitCode", 0}, {"message", report}}}};
  CHECK_FALSE(taas::controller::TerminationMessage(restarted));

  // Any other JSON on the way is no message, never an exception.
  for (const json& hostile : {json(nullptr), json(17), json(true), json::array({report}),
                              json::object({{"text", report}}), json("")}) {
    CHECK_FALSE(
        taas::controller::TerminationMessage(EndedPod({{"exitCode", 0}, {"message", hostile}})));
    if (hostile.is_number_integer()) continue;  // 17 is an exit code like any other
    CHECK_FALSE(taas::controller::TerminationMessage(
        EndedPod({{"exitCode", hostile}, {"message", report}})));
  }
  CHECK_FALSE(
      taas::controller::TerminationMessage(EndedPod({{"exitCode", 0.0}, {"message", report}})));
  for (const json& status :
       {json(nullptr), json("x"), json::object({{"containerStatuses", "x"}}),
        json::object({{"containerStatuses", json::array({17, "x", nullptr})}}),
        json::object({{"containerStatuses",
                       json::array({{{"name", "tensorflow"}, {"state", "terminated"}}})}}),
        json::object({{"containerStatuses", json::array({{{"name", "tensorflow"},
                                                          {"state", {{"terminated", 0}}}}})}})}) {
    json pod = EndedPod(json::object());
    pod["status"] = status;
    CHECK_FALSE(taas::controller::TerminationMessage(pod));
  }

  // A hostile API server's long message is cut just past what a report may hold: it still reads
  // as too long, and the cache never holds more.
  const std::string huge(1 << 20, 'x');
  auto cut = taas::controller::TerminationMessage(EndedPod({{"exitCode", 0}, {"message", huge}}));
  REQUIRE(cut);
  CHECK(cut->size() == taas::controller::kMaxKeptTerminationMessage);
  CHECK_FALSE(taas::job_report::Parse(*cut).ok());
  json trimmed = EndedPod({{"exitCode", 0}, {"message", huge}, {"reason", "Completed"}});
  taas::controller::TrimCachedPod(trimmed);
  CHECK(trimmed.dump().size() < 3000);
  CHECK(taas::controller::TerminationMessage(trimmed) == cut);
}

namespace {

void CheckSameReplica(const json& pod) {
  json trimmed = pod;
  taas::controller::TrimCachedPod(trimmed);
  auto a = taas::controller::ObserveReplica(pod);
  auto b = taas::controller::ObserveReplica(trimmed);
  REQUIRE(a.has_value() == b.has_value());
  if (!a) return;
  CHECK(a->type == b->type);
  CHECK(a->index == b->index);
  CHECK(a->phase == b->phase);
  CHECK(a->exit_code == b->exit_code);
  CHECK(a->restarts == b->restarts);
  CHECK(a->terminating == b->terminating);
  CHECK(a->reason == b->reason);
  CHECK(a->message == b->message);
  CHECK(a->waiting_since == b->waiting_since);
  CHECK(a->finished_at == b->finished_at);
  CHECK(taas::controller::TerminationMessage(trimmed) == taas::controller::TerminationMessage(pod));
  CHECK(taas::controller::ControllerUid(trimmed) == taas::controller::ControllerUid(pod));
  CHECK(taas::controller::ControllerName(trimmed) == taas::controller::ControllerName(pod));
  CHECK(taas::controller::PodNodeName(trimmed) == taas::controller::PodNodeName(pod));
}

}  // namespace

TEST_CASE("the cache keeps of a pod exactly what the controller reads") {
  json labels = {{"training.kubeflow.org/job-name", "mnist"},
                 {"training.kubeflow.org/replica-type", "worker"},
                 {"training.kubeflow.org/replica-index", "1"},
                 {"team", "vision"}};
  json owner = {{"apiVersion", "kubeflow.org/v1"},
                {"kind", "TFJob"},
                {"name", "mnist"},
                {"uid", "u"},
                {"controller", true},
                {"blockOwnerDeletion", true}};
  json running = {
      {"metadata",
       {{"name", "mnist-worker-1"},
        {"namespace", "ns"},
        {"uid", "pod-uid"},
        {"resourceVersion", "42"},
        {"creationTimestamp", "2026-01-01T00:00:00Z"},
        {"annotations", {{"big", std::string(4096, 'x')}}},
        {"labels", labels},
        {"ownerReferences", {owner}}}},
      {"spec", {{"containers", {{{"name", "tensorflow"}}}}}},
      {"status",
       {{"phase", "Running"},
        {"podIP", "10.0.0.1"},
        {"conditions",
         {{{"type", "Ready"}, {"status", "True"}}, {{"type", "PodScheduled"}, {"status", "True"}}}},
        {"containerStatuses",
         {{{"name", "sidecar"}, {"restartCount", 9}},
          {{"name", "tensorflow"},
           {"image", "taas/trainer"},
           {"imageID", "sha256:abc"},
           {"restartCount", 2},
           {"state", {{"running", {{"startedAt", "2026-01-01T00:00:05Z"}}}}},
           {"lastState",
            {{"terminated",
              {{"exitCode", 143},
               {"reason", "Error"},
               {"finishedAt", "2026-01-01T00:00:04Z"}}}}}}}}}}};
  CheckSameReplica(running);

  json trimmed = running;
  taas::controller::TrimCachedPod(trimmed);
  CHECK_FALSE(trimmed.contains("spec"));
  CHECK_FALSE(trimmed["metadata"].contains("annotations"));
  CHECK_FALSE(trimmed["metadata"]["labels"].contains("team"));
  CHECK(trimmed["metadata"]["labels"]["training.kubeflow.org/job-name"] == "mnist");
  CHECK(trimmed["metadata"]["resourceVersion"] == "42");
  CHECK(trimmed["metadata"]["uid"] == "pod-uid");
  CHECK_FALSE(trimmed["status"].contains("podIP"));
  CHECK_FALSE(trimmed["status"].contains("conditions"));
  CHECK(trimmed["status"]["containerStatuses"].size() == 1);
  CHECK(trimmed.dump().size() < running.dump().size() / 4);

  // The node it is bound to, which node-failure handling reads, and nothing else of its spec.
  json bound = running;
  bound["spec"]["nodeName"] = "node-1";
  CheckSameReplica(bound);
  taas::controller::TrimCachedPod(bound);
  CHECK(bound["spec"] == json({{"nodeName", "node-1"}}));
  CHECK(taas::controller::PodNodeName(bound) == "node-1");
  for (const json& hostile : {json(7), json::array(), json(nullptr), json::object()}) {
    json odd = running;
    odd["spec"]["nodeName"] = hostile;
    CHECK(taas::controller::PodNodeName(odd).empty());
    odd["spec"] = hostile;
    CHECK(taas::controller::PodNodeName(odd).empty());
  }

  json waiting = running;
  waiting["status"]["phase"] = "Pending";
  waiting["status"]["containerStatuses"][1]["state"] = {
      {"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off"}}}};
  CheckSameReplica(waiting);

  json unscheduled = running;
  unscheduled["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z";
  unscheduled["status"] = {{"phase", "Pending"},
                           {"conditions",
                            {{{"type", "PodScheduled"},
                              {"status", "False"},
                              {"reason", "Unschedulable"},
                              {"message", "0/4 nodes are available"}}}}};
  CheckSameReplica(unscheduled);

  json service = {{"metadata", running["metadata"]}, {"spec", {{"clusterIP", "None"}}}};
  taas::controller::TrimCachedService(service);
  CHECK_FALSE(service.contains("spec"));
  CHECK(taas::controller::ControllerUid(service) == "u");
}

namespace {

// The `items` keys of the job-secret volume of a pod.
std::vector<std::string> SecretKeys(const json& pod) {
  std::vector<std::string> keys;
  for (const auto& volume : pod["spec"]["volumes"]) {
    if (!volume.contains("secret") || volume["secret"]["secretName"] != "mnist-taas-job") continue;
    for (const auto& item : volume["secret"]["items"]) keys.push_back(item["key"]);
  }
  return keys;
}

const json* Env(const json& pod, const std::string& name) {
  for (const auto& c : pod["spec"]["containers"]) {
    if (c["name"] != "tensorflow") continue;
    for (const auto& e : c["env"]) {
      if (e["name"] == name) return &e;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("every pod mounts the job token; the chief and the PS also the chief token") {
  using Keys = std::vector<std::string>;
  tf::TFJob job = PsWorkers();  // no Chief: worker 0 has the master role
  json ps = taas::controller::BuildPod(job, tf::ReplicaType::kPS, 0, BuildOptions{});
  json chief = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 0, BuildOptions{});
  json worker = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 1, BuildOptions{});
  CHECK(SecretKeys(ps) == Keys{"job-token", "chief-token"});
  CHECK(SecretKeys(chief) == Keys{"job-token", "chief-token"});
  CHECK(SecretKeys(worker) == Keys{"job-token"});

  for (const json* pod : {&ps, &chief, &worker}) {
    const json& container = (*pod)["spec"]["containers"][0];
    REQUIRE(container["name"] == "tensorflow");
    REQUIRE(container["volumeMounts"].size() == 1);
    CHECK(container["volumeMounts"][0]["mountPath"] == "/var/run/secrets/taas/job");
    CHECK(container["volumeMounts"][0]["readOnly"] == true);
    CHECK(EnvValue(*pod, "tensorflow", "TAAS_JOB_TOKEN_FILE") ==
          "/var/run/secrets/taas/job/job-token");
    const json* pod_ip = Env(*pod, "TAAS_POD_IP");
    REQUIRE(pod_ip != nullptr);
    CHECK((*pod_ip)["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP");
    CHECK_FALSE((*pod)["spec"]["containers"][1].contains("volumeMounts"));  // the sidecar
  }
  CHECK(EnvValue(ps, "tensorflow", "TAAS_CHIEF_TOKEN_FILE") ==
        "/var/run/secrets/taas/job/chief-token");
  CHECK(EnvValue(chief, "tensorflow", "TAAS_CHIEF_TOKEN_FILE") ==
        "/var/run/secrets/taas/job/chief-token");
  CHECK(Env(worker, "TAAS_CHIEF_TOKEN_FILE") == nullptr);

  // With a Chief, worker 0 is an ordinary worker.
  tf::TFJob with_chief = Job({{"Chief", {{"replicas", 1}, {"template", Template()}}},
                              {"Worker", {{"replicas", 1}, {"template", Template()}}}});
  CHECK(SecretKeys(taas::controller::BuildPod(with_chief, tf::ReplicaType::kChief, 0, {})) ==
        Keys{"job-token", "chief-token"});
  CHECK(SecretKeys(taas::controller::BuildPod(with_chief, tf::ReplicaType::kWorker, 0, {})) ==
        Keys{"job-token"});
}

// Issue 37: a pod replaced while its node was only cut off is fenced by its replacement.
TEST_CASE("a pod is numbered as an incarnation of its replica, once, and the number survives") {
  tf::TFJob job = PsWorkers();
  json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 1, BuildOptions{});
  CHECK(taas::controller::PodIncarnation(pod) == 0);
  CHECK(Env(pod, "TAAS_REPLICA_INCARNATION") == nullptr);
  taas::controller::SetIncarnation(pod, 1764650000123);
  taas::controller::SetIncarnation(pod, 1764650000124);  // numbered again: replaced, not doubled
  CHECK(pod["metadata"]["annotations"]["taas.dev/replica-incarnation"] == "1764650000124");
  CHECK(pod["metadata"]["annotations"]["a"] == "b");  // the template's stay
  CHECK(taas::controller::PodIncarnation(pod) == 1764650000124);
  // The runtime reads the annotation: one value in the pod, no copy to drift from it.
  int named = 0;
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    named += e["name"] == "TAAS_REPLICA_INCARNATION";
  CHECK(named == 1);
  const json* env = Env(pod, "TAAS_REPLICA_INCARNATION");
  REQUIRE(env != nullptr);
  CHECK((*env)["valueFrom"]["fieldRef"]["fieldPath"] ==
        "metadata.annotations['taas.dev/replica-incarnation']");
  CHECK_FALSE(pod["spec"]["containers"][1].contains("env"));  // the sidecar
  // The cache keeps it, and nothing else of the annotations.
  json trimmed = pod;
  taas::controller::TrimCachedPod(trimmed);
  CHECK(taas::controller::PodIncarnation(trimmed) == 1764650000124);
  CHECK(trimmed["metadata"]["annotations"].size() == 1);
  for (const json& hostile : {json("12x"), json(""), json(7), json("-1"), json(nullptr),
                              json("99999999999999999999999")}) {
    json odd = pod;
    odd["metadata"]["annotations"]["taas.dev/replica-incarnation"] = hostile;
    CHECK(taas::controller::PodIncarnation(odd) == 0);
  }
}

TEST_CASE("the next incarnation is above every one seen and at least the clock's milliseconds") {
  using std::chrono::milliseconds;
  const std::chrono::system_clock::time_point now(milliseconds(1764650000000));
  CHECK(taas::controller::NextIncarnation(0, now) == 1764650000000);
  // A pod still observed from a clock that ran ahead (another operator's, before a failover).
  CHECK(taas::controller::NextIncarnation(1764650009000, now) == 1764650009001);
  // Later pods of the replica get higher numbers, whatever was seen of the earlier ones.
  CHECK(taas::controller::NextIncarnation(0, now + milliseconds(1)) >
        taas::controller::NextIncarnation(0, now));
  CHECK(taas::controller::NextIncarnation(UINT64_MAX, now) == UINT64_MAX);
  CHECK(taas::controller::NextIncarnation(5, std::chrono::system_clock::time_point()) == 6);
}

TEST_CASE("a template's own variables and volume of the same names are replaced, not doubled") {
  json tmpl = Template({{{"name", "TAAS_JOB_TOKEN_FILE"}, {"value", "/tmp/forged"}}});
  tmpl["spec"]["volumes"] = {{{"name", "taas-job-secret"}, {"emptyDir", json::object()}},
                             {{"name", "data"}, {"emptyDir", json::object()}}};
  tf::TFJob job = Job({{"Worker", {{"replicas", 2}, {"template", tmpl}}}});
  json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 1, BuildOptions{});
  CHECK(pod["spec"]["volumes"].size() == 2);
  CHECK(SecretKeys(pod) == std::vector<std::string>{"job-token"});
  CHECK(EnvValue(pod, "tensorflow", "TAAS_JOB_TOKEN_FILE") ==
        "/var/run/secrets/taas/job/job-token");
  int token_vars = 0;
  for (const auto& e : pod["spec"]["containers"][0]["env"])
    token_vars += e["name"] == "TAAS_JOB_TOKEN_FILE";
  CHECK(token_vars == 1);
}

TEST_CASE("the job's Secret: name, owner, both tokens; a foreign or incomplete one is refused") {
  tf::TFJob job = PsWorkers();
  auto job_token = taas::RandomHexToken(taas::contract::kTokenBytes);
  auto chief_token = taas::RandomHexToken(taas::contract::kTokenBytes);
  REQUIRE(job_token.ok());
  REQUIRE(chief_token.ok());
  CHECK(job_token->size() == 64);
  CHECK(job_token->find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(*job_token != *chief_token);

  json secret = taas::controller::BuildJobSecret(job, {*job_token, *chief_token});
  CHECK(secret["kind"] == "Secret");
  CHECK(secret["metadata"]["name"] == "mnist-taas-job");
  CHECK(secret["metadata"]["namespace"] == "team-a");
  CHECK(secret["metadata"]["ownerReferences"][0]["uid"] == "uid-123");
  CHECK(secret["metadata"]["ownerReferences"][0]["controller"] == true);
  CHECK(secret["stringData"]["job-token"] == *job_token);
  CHECK(secret["stringData"]["chief-token"] == *chief_token);
}

TEST_CASE("the job's NetworkPolicy admits only the job's pods, and the scrapers to metrics") {
  tf::TFJob job = PsWorkers();
  BuildOptions options;
  json policy = taas::controller::BuildNetworkPolicy(job, options);
  const json job_pods = {{"matchLabels",
                          {{"training.kubeflow.org/job-name", "mnist"},
                           {"training.kubeflow.org/operator-name", "tfjob-controller"}}}};
  CHECK(policy["apiVersion"] == "networking.k8s.io/v1");
  CHECK(policy["kind"] == "NetworkPolicy");
  CHECK(policy["metadata"]["name"] == "mnist");
  CHECK(policy["metadata"]["namespace"] == "team-a");
  CHECK(policy["metadata"]["ownerReferences"][0]["uid"] == "uid-123");
  CHECK(policy["spec"]["podSelector"] == job_pods);
  CHECK(policy["spec"]["policyTypes"] == json::array({"Ingress"}));
  REQUIRE(policy["spec"]["ingress"].size() == 1);
  CHECK(policy["spec"]["ingress"][0] == json{{"from", {{{"podSelector", job_pods}}}}});

  // The selector matches the labels every pod of the job carries.
  json pod = taas::controller::BuildPod(job, tf::ReplicaType::kWorker, 1, BuildOptions{});
  for (const auto& [key, value] : job_pods["matchLabels"].items())
    CHECK(pod["metadata"]["labels"][key] == value);

  options.metrics_scraper_namespace = "taas-system";
  policy = taas::controller::BuildNetworkPolicy(job, options);
  REQUIRE(policy["spec"]["ingress"].size() == 2);
  const json& scrape = policy["spec"]["ingress"][1];
  CHECK(scrape["from"] ==
        json::array({{{"namespaceSelector",
                       {{"matchLabels", {{"kubernetes.io/metadata.name", "taas-system"}}}}}}}));
  CHECK(scrape["ports"] == json::array({{{"protocol", "TCP"}, {"port", "metrics"}},
                                        {{"protocol", "TCP"}, {"port", 9090}}}));
}
