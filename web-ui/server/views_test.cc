#include "taas/ui_server/views.h"

#include <doctest/doctest.h>

namespace taas::ui_server {
namespace {

NodeUsage GpuNode(const std::string& name, double gpus, double in_use) {
  NodeUsage node;
  node.name = name;
  node.ready = true;
  node.capacity.gpu = node.allocatable.gpu = gpus;
  node.in_use.gpu = in_use;
  return node;
}

TEST_CASE("a node's GPU slots: open, usable only by pods that tolerate its taints, or cordoned") {
  NodeUsage node = GpuNode("n", 8, 2);
  CHECK(ClassifyGpuSlots(node).access == GpuAccess::kOpen);
  CHECK(ClassifyGpuSlots(node).note.empty());

  node.taints = {{"nvidia.com/gpu", "", "NoSchedule"}, {"team", "vision", "NoExecute"}};
  const GpuSlots tainted = ClassifyGpuSlots(node);
  CHECK(tainted.access == GpuAccess::kTainted);
  CHECK(tainted.note ==
        "usable only by pods that tolerate nvidia.com/gpu:NoSchedule, team=vision:NoExecute");

  // Cordoned wins over taints: no new pod at all, tolerations or not.
  node.unschedulable = true;
  CHECK(ClassifyGpuSlots(node).access == GpuAccess::kCordoned);
  CHECK(ClassifyGpuSlots(node).note == "cordoned: no new pods");
  CHECK(schema::Name(GpuAccess::kCordoned) == "cordoned");
  CHECK(TaintText({"k", "v", "NoExecute"}) == "k=v:NoExecute");
}

TEST_CASE("the cluster page counts GPUs set apart in the totals and per node") {
  ClusterPage page;
  page.nodes.push_back(GpuNode("a-open", 8, 6));
  NodeUsage tainted = GpuNode("b-tainted", 4, 1);
  tainted.taints = {{"gpu", "a100", "NoSchedule"}};
  page.nodes.push_back(tainted);
  NodeUsage cordoned = GpuNode("c-cordoned", 2, 0);
  cordoned.unschedulable = true;
  page.nodes.push_back(cordoned);
  const nlohmann::json view = schema::ToJson(ClusterViewOf(page));
  const nlohmann::json& slots = view["totals"]["gpuSlots"];
  CHECK(slots["open"] == nlohmann::json{{"allocatable", 8}, {"inUse", 6}});
  CHECK(slots["tainted"] == nlohmann::json{{"allocatable", 4}, {"inUse", 1}});
  CHECK(slots["cordoned"] == nlohmann::json{{"allocatable", 2}, {"inUse", 0}});
  CHECK(view["totals"]["allocatable"]["gpu"] == 14);
  CHECK(view["nodes"][0]["gpuAccess"] == "open");
  CHECK(view["nodes"][1]["gpuAccess"] == "tainted");
  CHECK(view["nodes"][1]["taints"] == nlohmann::json{"gpu=a100:NoSchedule"});
  CHECK(view["nodes"][1]["gpuNote"] == "usable only by pods that tolerate gpu=a100:NoSchedule");
  CHECK(view["nodes"][2]["gpuAccess"] == "cordoned");
  CHECK(view["queues"].is_null());  // no quota system: the section is hidden
}

TEST_CASE("queues: each ClusterQueue with its GPU quota, use, workloads and LocalQueues") {
  ClusterPage page;
  QueuesView queues;
  queues.cluster_queues.push_back({"team-a-cq", 16, 8, 8, 3, 1, 1});
  queues.cluster_queues.push_back({"idle-cq", 4, 0, 0, 0, 0, 0});
  queues.local_queues.push_back({"default", "team-a", "team-a-cq", 3, 1});
  queues.local_queues.push_back({"team-b", "b", "team-a-cq", 0, 0});
  page.queues = queues;
  const nlohmann::json view = schema::ToJson(ClusterViewOf(page))["queues"];
  REQUIRE(view["clusterQueues"].size() == 2);
  const nlohmann::json& team = view["clusterQueues"][1];  // sorted by name
  CHECK(team["name"] == "team-a-cq");
  CHECK(team["gpuQuota"] == 16);
  CHECK(team["gpuInUse"] == 8);
  CHECK(team["pendingWorkloads"] == 3);
  CHECK(team["admittedWorkloads"] == 1);
  CHECK(team["localQueues"] == nlohmann::json{"default/team-a", "team-b/b"});
  CHECK(view["clusterQueues"][0]["localQueues"] == nlohmann::json::array());
  CHECK(view["localQueues"][0]["clusterQueue"] == "team-a-cq");
  CHECK(view["error"] == "");
}

}  // namespace
}  // namespace taas::ui_server
