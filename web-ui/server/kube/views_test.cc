#include "taas/ui_kube/views.h"

#include <doctest/doctest.h>

#include "taas/tfjob/serialization.h"

namespace taas::ui_kube {
namespace {

using ui_server::ClusterLimits;
using ui_server::ParseQuantity;
using ui_server::ParseTimestamp;

using nlohmann::json;
using ui_server::schema::ToJson;

json Pod(const std::string& name, const std::string& type, int index, const std::string& phase) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"labels",
             {{"training.kubeflow.org/job-name", "mnist"},
              {"training.kubeflow.org/replica-type", type},
              {"training.kubeflow.org/replica-index", std::to_string(index)}}}}},
          {"spec",
           {{"nodeName", phase == "Pending" ? "" : "taas-node-0"},
            {"containers",
             {{{"name", "tensorflow"},
               {"resources",
                {{"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}},
                 {"limits", {{"nvidia.com/gpu", type == "worker" ? 2 : 0}}}}}}}}}},
          {"status", {{"phase", phase}, {"startTime", "2026-11-22T00:00:00Z"}}}};
}

json Job() {
  return {{"metadata",
           {{"name", "mnist"},
            {"namespace", "default"},
            {"creationTimestamp", "2026-11-22T00:00:00Z"}}},
          {"spec",
           {{"tfReplicaSpecs",
             {{"Worker",
               {{"replicas", 4},
                {"template",
                 {{"spec",
                   {{"containers",
                     {{{"name", "tensorflow"},
                       {"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}}}}}}}}}},
              {"PS", {{"replicas", 1}}}}}}},
          {"status",
           {{"conditions",
             {{{"type", "Created"}, {"status", "True"}, {"reason", "TFJobCreated"}},
              {{"type", "Running"},
               {"status", "True"},
               {"reason", "TFJobRunning"},
               {"message", "TFJob default/mnist is running."}}}}}}};
}

TEST_CASE("quantities parse like Kubernetes resource quantities") {
  CHECK(*ParseQuantity("500m") == doctest::Approx(0.5));
  CHECK(*ParseQuantity("2") == 2);
  CHECK(*ParseQuantity("1.5") == doctest::Approx(1.5));
  CHECK(*ParseQuantity("4Gi") == 4.0 * 1024 * 1024 * 1024);
  CHECK(*ParseQuantity("256Mi") == 256.0 * 1024 * 1024);
  CHECK(*ParseQuantity("1e3") == doctest::Approx(1000));
  CHECK(*ParseQuantity("2k") == 2000);
  CHECK_FALSE(ParseQuantity("").has_value());
  CHECK_FALSE(ParseQuantity("lots").has_value());
  CHECK_FALSE(ParseQuantity("1Gx").has_value());
  CHECK_FALSE(ParseQuantity("-1").has_value());
  CHECK_FALSE(ParseQuantity("1 Gi").has_value());
}

TEST_CASE("timestamps parse as RFC 3339") {
  CHECK(*ParseTimestamp("1970-01-01T00:00:10Z") == 10);
  CHECK(*ParseTimestamp("2000-03-01T00:00:00Z") == 951868800);
  CHECK(*ParseTimestamp("2000-03-01T00:00:00.123456Z") == 951868800);
  CHECK(*ParseTimestamp("2000-03-01T01:00:00+01:00") == 951868800);
  CHECK_FALSE(ParseTimestamp("yesterday").has_value());
}

TEST_CASE("a pod view names the container-level reason") {
  json pod = Pod("mnist-worker-1", "worker", 1, "Running");
  pod["status"]["containerStatuses"] = {
      {{"name", "tensorflow"},
       {"ready", false},
       {"restartCount", 3},
       {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 40s"}}}}},
       {"lastState", {{"terminated", {{"reason", "OOMKilled"}, {"exitCode", 137}}}}}}};
  const json view = ToJson(PodView(pod));
  CHECK(view["replicaType"] == "worker");
  CHECK(view["index"] == 1);
  CHECK(view["node"] == "taas-node-0");
  CHECK(view["reason"] == "CrashLoopBackOff (last: OOMKilled)");
  CHECK(view["restarts"] == 3);
  CHECK(view["exitCode"] == 137);
  CHECK(view["gpus"] == 2);
  CHECK(view["ready"] == false);

  json pending = Pod("mnist-worker-3", "worker", 3, "Pending");
  pending["status"]["conditions"] = {
      {{"type", "PodScheduled"},
       {"status", "False"},
       {"reason", "Unschedulable"},
       {"message", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}}};
  CHECK(PodView(pending).reason == "Unschedulable");
}

TEST_CASE("a job row counts replicas per type and surfaces pod failures behind Running") {
  std::vector<json> pods = {
      Pod("mnist-ps-0", "ps", 0, "Running"), Pod("mnist-worker-0", "worker", 0, "Running"),
      Pod("mnist-worker-1", "worker", 1, "Running"), Pod("mnist-worker-2", "worker", 2, "Running"),
      Pod("mnist-worker-3", "worker", 3, "Pending")};
  pods[2]["status"]["containerStatuses"] = {
      {{"name", "tensorflow"},
       {"restartCount", 2},
       {"state", {{"running", json::object()}}},
       {"lastState", {{"terminated", {{"reason", "OOMKilled"}, {"exitCode", 137}}}}}}};
  const json view = ToJson(JobView(Job(), pods, *ParseTimestamp("2026-11-22T00:01:30Z")));
  CHECK(view["replicasText"] == "PS 1/1 \u00b7 Worker 3/4");
  CHECK(view["restarts"] == 2);  // worker-1's container restarts
  CHECK(view["gpus"] == 8);
  CHECK(view["ageSeconds"] == 90);
  CHECK(view["state"] == "Running");
  CHECK(view["severity"] == "warning");
  const std::string reason = view["reason"];
  CHECK(reason.find("TFJob default/mnist is running.") == 0);
  CHECK(reason.find("worker-1: Restarted (last: OOMKilled) (exit 137, 2 restarts)") !=
        std::string::npos);
  CHECK(view["pods"].size() == 5);
  CHECK(view["pods"][0]["replicaType"] == "ps");

  json restarted = Job();
  restarted["status"]["replicaStatuses"] = {{"Worker", {{"active", 4}, {"restarts", 3}}},
                                            {"PS", {{"active", 1}}}};
  CHECK(JobView(restarted, {}, 0).restarts == 3);  // recreated pods count from 0 again

  json failed = Job();
  failed["status"]["conditions"].push_back(
      {{"type", "Failed"}, {"status", "True"}, {"message", "worker 0 exited with code 1"}});
  const json failed_view = ToJson(JobView(failed, {}, 0));
  CHECK(failed_view["state"] == "Failed");
  CHECK(failed_view["severity"] == "error");
  CHECK(failed_view["reason"] == "worker 0 exited with code 1");

  json fresh = Job();
  fresh.erase("status");
  CHECK(ToJson(JobView(fresh, {}, 0))["state"] == "Pending");
}

TEST_CASE("pods are matched to jobs by label or owner reference") {
  CHECK(PodBelongsToJob(Pod("mnist-ps-0", "ps", 0, "Running"), "mnist"));
  CHECK_FALSE(PodBelongsToJob(Pod("mnist-ps-0", "ps", 0, "Running"), "other"));
  json owned = {
      {"metadata",
       {{"name", "x-worker-0"}, {"ownerReferences", {{{"kind", "TFJob"}, {"name", "x"}}}}}}};
  CHECK(PodBelongsToJob(owned, "x"));
  CHECK(JobNameOfPod(owned) == "x");
}

TEST_CASE("events of the job and its pods, oldest first") {
  json events = {{"items",
                  {{{"involvedObject", {{"kind", "Pod"}, {"name", "mnist-worker-0"}}},
                    {"reason", "Started"},
                    {"lastTimestamp", "2026-11-22T00:00:05Z"}},
                   {{"involvedObject", {{"kind", "TFJob"}, {"name", "mnist"}}},
                    {"reason", "SuccessfulCreatePod"},
                    {"lastTimestamp", "2026-11-22T00:00:01Z"}},
                   {{"involvedObject", {{"kind", "Pod"}, {"name", "other-worker-0"}}},
                    {"reason", "Started"}}}}};
  const json view = ToJson(EventsView(events, "mnist", {"mnist-worker-0"}));
  REQUIRE(view.size() == 2);
  CHECK(view[0]["reason"] == "SuccessfulCreatePod");
  CHECK(view[1]["object"] == "Pod/mnist-worker-0");
}

TEST_CASE("the cluster view sums requests per node and lists pending pods with the reason") {
  auto node = [](const std::string& name, int gpus) {
    const json resources = {
        {"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}};
    return json{{"metadata", {{"name", name}}},
                {"status",
                 {{"capacity", resources},
                  {"allocatable", resources},
                  {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  };
  const json nodes = {{"items", {node("taas-node-1", 8), node("taas-node-0", 8)}}};
  json running = Pod("mnist-worker-0", "worker", 0, "Running");
  json pending = Pod("mnist-worker-3", "worker", 3, "Pending");
  const json active = {{"items", {running, Pod("mnist-ps-0", "ps", 0, "Running"), pending}}};
  const json events = {{"items",
                        {{{"involvedObject",
                           {{"kind", "Pod"}, {"namespace", "default"}, {"name", "mnist-worker-3"}}},
                          {"reason", "FailedScheduling"},
                          {"message", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."},
                          {"lastTimestamp", "2026-11-22T00:00:05Z"}}}}};
  const json view = ToJson(ClusterView(nodes, active, {running, pending}, events));
  REQUIRE(view["nodes"].size() == 2);
  CHECK(view["nodes"][0]["name"] == "taas-node-0");
  CHECK(view["nodes"][0]["inUse"]["gpu"] == 2);
  CHECK(view["nodes"][0]["inUse"]["cpu"] == doctest::Approx(1.0));
  CHECK(view["nodes"][0]["pods"] == 2);
  CHECK(view["nodes"][1]["inUse"]["gpu"] == 0);
  CHECK(view["totals"]["capacity"]["gpu"] == 16);
  CHECK(view["totals"]["inUse"]["gpu"] == 2);
  REQUIRE(view["pending"].size() == 1);
  CHECK(view["pending"][0]["job"] == "mnist");
  CHECK(view["pending"][0]["reason"] == "FailedScheduling");
  CHECK(view["pending"][0]["message"] == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");

  const ClusterLimits limits = ComputeClusterLimits(nodes);
  CHECK(limits.nodes == 2);
  CHECK(limits.max_node_gpus == 8);
  CHECK(limits.total_gpus == 16);
  CHECK(limits.max_node_cpu == 32);
}

TEST_CASE("a node's taints: NoSchedule and NoExecute kept, the rest skipped") {
  const json nodes = {{"items",
                       {{{"metadata", {{"name", "n"}}},
                         {"spec",
                          {{"unschedulable", false},
                           {"taints",
                            {{{"key", "nvidia.com/gpu"}, {"effect", "NoSchedule"}},
                             {{"key", "team"}, {"value", "vision"}, {"effect", "NoExecute"}},
                             {{"key", "soft"}, {"effect", "PreferNoSchedule"}},
                             {{"effect", "NoSchedule"}},
                             "not a taint",
                             {{"key", 7}, {"effect", "NoSchedule"}}}}}}}}}};
  const std::vector<ui_server::NodeUsage> usage = NodesOf(nodes);
  REQUIRE(usage.size() == 1);
  REQUIRE(usage[0].taints.size() == 2);
  CHECK(ui_server::TaintText(usage[0].taints[0]) == "nvidia.com/gpu:NoSchedule");
  CHECK(ui_server::TaintText(usage[0].taints[1]) == "team=vision:NoExecute");
  CHECK_FALSE(usage[0].unschedulable);
  CHECK(ui_server::ClassifyGpuSlots(usage[0]).access == ui_server::GpuAccess::kTainted);

  json cordoned = nodes;
  cordoned["items"][0]["spec"]["unschedulable"] = true;
  CHECK(NodesOf(cordoned)[0].unschedulable);
  cordoned["items"][0]["spec"]["unschedulable"] = "true";  // not a boolean: not cordoned
  CHECK_FALSE(NodesOf(cordoned)[0].unschedulable);
  cordoned["items"][0]["spec"]["taints"] = "NoSchedule";
  CHECK(NodesOf(cordoned)[0].taints.empty());
}

ui_server::ReplicaRow Pending(const std::string& name, const std::string& message) {
  json pod = Pod(name, "worker", name.back() - '0', "Pending");
  pod["status"]["conditions"] = {{{"type", "PodScheduled"},
                                  {"status", "False"},
                                  {"reason", "Unschedulable"},
                                  {"message", message}}};
  return PodView(pod);
}

// WaitingOf of the TFJob object `job` read by the TFJob rules, as the API answers it.
json WaitingOf(const json& job, const std::vector<ui_server::ReplicaRow>& replicas,
               const json& workloads, const json& pod_group) {
  return ToJson(ui_kube::WaitingOf(*tfjob::TFJobFromJson(job), replicas, workloads, pod_group));
}

TEST_CASE("why a job waits: queued in Kueue, suspended, gang incomplete, insufficient GPUs") {
  constexpr char kNoGpu[] = "0/100 nodes are available: 100 Insufficient nvidia.com/gpu.";
  json job = Job();
  job["status"]["conditions"] = {{{"type", "Created"}, {"status", "True"}}};

  // Running replicas: no reason.
  CHECK(WaitingOf(job, {PodView(Pod("mnist-worker-0", "worker", 0, "Running"))}, nullptr, nullptr)
            .is_null());
  // The operator has made no pod yet: nothing says why.
  CHECK(WaitingOf(job, {}, nullptr, nullptr).is_null());

  // The scheduler cannot place a replica.
  json waiting = WaitingOf(job, {Pending("mnist-worker-0", kNoGpu)}, nullptr, nullptr);
  CHECK(waiting["reason"] == "insufficientGpus");
  CHECK(waiting["message"] == "insufficient GPUs");
  CHECK(waiting["detail"] == kNoGpu);
  waiting =
      WaitingOf(job, {Pending("mnist-worker-0", "0/2 nodes: untolerated taint")}, nullptr, nullptr);
  CHECK(waiting["reason"] == "unschedulable");
  CHECK(waiting["message"] == "0/2 nodes: untolerated taint");

  // A gang: 1 of minMember 4 placed, the PodGroup not scheduled.
  const ui_server::ReplicaRow placed = PodView(Pod("mnist-worker-0", "worker", 0, "Running"));
  json scheduler_plugins = {{"spec", {{"minMember", 4}}}, {"status", {{"phase", "Pending"}}}};
  waiting = WaitingOf(job, {placed, Pending("mnist-worker-1", kNoGpu)}, nullptr, scheduler_plugins);
  CHECK(waiting["reason"] == "gangIncomplete");
  CHECK(waiting["message"] == "gang incomplete: 1 of minMember 4 pods placed (insufficient GPUs)");
  json volcano = {{"spec", {{"minMember", 2}}},
                  {"status",
                   {{"phase", "Inqueue"},
                    {"conditions",
                     {{{"type", "Unschedulable"},
                       {"status", "True"},
                       {"message", "1/2 tasks in gang unschedulable"}}}}}}};
  waiting = WaitingOf(job, {placed, Pending("mnist-worker-1", "")}, nullptr, volcano);
  CHECK(waiting["message"] == "gang incomplete: 1 of minMember 2 pods placed");
  CHECK(waiting["detail"] == "1/2 tasks in gang unschedulable");
  // A scheduled gang whose last pod waits for the kubelet is not incomplete.
  scheduler_plugins["status"]["phase"] = "Scheduled";
  CHECK(WaitingOf(job, {placed, Pending("mnist-worker-1", kNoGpu)}, nullptr,
                  scheduler_plugins)["reason"] == "insufficientGpus");

  // Suspended, then queued by Kueue.
  job["spec"]["runPolicy"] = {{"suspend", true}};
  waiting = WaitingOf(job, {}, nullptr, nullptr);
  CHECK(waiting["reason"] == "suspended");
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  waiting = WaitingOf(job, {}, nullptr, nullptr);
  CHECK(waiting["reason"] == "queued");
  CHECK(waiting["message"] == "queued in LocalQueue team-a (Kueue)");
  CHECK(waiting["detail"] == "");
  const json workloads = {
      {"items",
       {{{"metadata", {{"ownerReferences", {{{"kind", "TFJob"}, {"name", "other"}}}}}},
         {"status",
          {{"conditions", {{{"type", "QuotaReserved"}, {"status", "False"}, {"message", "no"}}}}}}},
        {{"metadata", {{"ownerReferences", {{{"kind", "TFJob"}, {"name", "mnist"}}}}}},
         {"status",
          {{"conditions",
            {{{"type", "QuotaReserved"},
              {"status", "False"},
              {"message",
               "couldn't assign flavors to pod set worker: insufficient unused quota for "
               "nvidia.com/gpu in flavor default, 8 more needed"}}}}}}}}}};
  waiting = WaitingOf(job, {}, workloads, nullptr);
  CHECK(waiting["detail"] ==
        "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu "
        "in flavor default, 8 more needed");

  // A Workload left by an earlier TFJob of the same name (another uid) says nothing of this one.
  json stale = workloads;
  stale["items"][1]["metadata"]["ownerReferences"][0]["uid"] = "uid-of-an-earlier-job";
  job["metadata"]["uid"] = "uid-now";
  CHECK(WaitingOf(job, {}, stale, nullptr)["detail"] == "");
  stale["items"][1]["metadata"]["ownerReferences"][0]["uid"] = "uid-now";
  CHECK(WaitingOf(job, {}, stale, nullptr)["detail"] != "");

  // Finished: nothing to wait for.
  job["status"]["conditions"].push_back({{"type", "Failed"}, {"status", "True"}});
  CHECK(WaitingOf(job, {}, workloads, nullptr).is_null());
}

TEST_CASE("Kueue's queues: GPU quota over flavors, reservation, usage and workloads") {
  const json cluster_queues = json::parse(R"({"items": [{
    "metadata": {"name": "team-a-cq"},
    "spec": {"resourceGroups": [
      {"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
        {"name": "a100", "resources": [{"name": "cpu", "nominalQuota": 64},
                                       {"name": "nvidia.com/gpu", "nominalQuota": 8}]},
        {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}]}]}]},
    "status": {"pendingWorkloads": 3, "reservingWorkloads": 2, "admittedWorkloads": 1,
      "flavorsReservation": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "8"}]}],
      "flavorsUsage": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "total": "4"}]}]}
  }]})");
  const json local_queues = json::parse(R"({"items": [
    {"metadata": {"name": "team-a", "namespace": "default"}, "spec": {"clusterQueue": "team-a-cq"},
     "status": {"pendingWorkloads": 3, "admittedWorkloads": 1}}]})");
  const ui_server::QueuesView page = QueuesOf(cluster_queues, local_queues);
  REQUIRE(page.cluster_queues.size() == 1);
  CHECK(page.cluster_queues[0].name == "team-a-cq");
  CHECK(page.cluster_queues[0].gpu_quota == 12);
  CHECK(page.cluster_queues[0].gpu_reserved == 8);
  CHECK(page.cluster_queues[0].gpu_in_use == 4);
  CHECK(page.cluster_queues[0].pending_workloads == 3);
  CHECK(page.cluster_queues[0].reserving_workloads == 2);
  CHECK(page.cluster_queues[0].admitted_workloads == 1);
  REQUIRE(page.local_queues.size() == 1);
  CHECK(page.local_queues[0].cluster_queue == "team-a-cq");
  CHECK(page.local_queues[0].namespace_name == "default");
  CHECK(page.local_queues[0].pending_workloads == 3);
}

}  // namespace
}  // namespace taas::ui_kube
