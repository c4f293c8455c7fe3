#include "taas/ui_kube/views.h"

#include <doctest/doctest.h>

namespace taas::ui_kube {
namespace {

using ui_server::ClusterLimits;
using ui_server::ParseQuantity;
using ui_server::ParseTimestamp;

using nlohmann::json;

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
  const json view = PodView(pod);
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
  CHECK(PodView(pending)["reason"] == "Unschedulable");
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
  const json view = JobView(Job(), pods, *ParseTimestamp("2026-11-22T00:01:30Z"));
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
  CHECK(JobView(restarted, {}, 0)["restarts"] == 3);  // recreated pods count from 0 again

  json failed = Job();
  failed["status"]["conditions"].push_back(
      {{"type", "Failed"}, {"status", "True"}, {"message", "worker 0 exited with code 1"}});
  const json failed_view = JobView(failed, {}, 0);
  CHECK(failed_view["state"] == "Failed");
  CHECK(failed_view["severity"] == "error");
  CHECK(failed_view["reason"] == "worker 0 exited with code 1");

  json fresh = Job();
  fresh.erase("status");
  CHECK(JobView(fresh, {}, 0)["state"] == "Pending");
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
  const json view = EventsView(events, "mnist", {"mnist-worker-0"});
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
  const json view = ClusterView(nodes, active, {running, pending}, events);
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

}  // namespace
}  // namespace taas::ui_kube
