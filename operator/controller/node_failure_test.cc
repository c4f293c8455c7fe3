#include "taas/controller/node_failure.h"

#include <doctest/doctest.h>

#include "taas/tfjob/rfc3339.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace tf = taas::tfjob;
using nlohmann::json;
using taas::controller::Decide;
using taas::controller::Decision;
using taas::controller::FailedSince;
using taas::controller::NodeFailurePlan;
using taas::controller::NodeHealth;
using taas::controller::Observation;
using taas::controller::ObservedPod;
using taas::controller::ObserveNode;
using taas::controller::PlanNodeFailures;
using taas::controller::TrimCachedNode;

namespace {

const tf::Time kNow = std::chrono::floor<std::chrono::seconds>(
    std::chrono::sys_days{std::chrono::year{2026} / 1 / 1} + std::chrono::hours(12));
constexpr std::chrono::seconds kThreshold{60};

tf::Time Ago(int seconds) { return kNow - std::chrono::seconds(seconds); }
std::string Rfc3339(tf::Time t) { return tf::FormatRfc3339(t); }

// Arrays are spelled json::array: a braced list of one json is an array of it under gcc and a copy
// of it under clang (the ASan tree's compiler).
json Node(const std::string& ready, std::optional<tf::Time> transition = std::nullopt,
          json taints = json::array()) {
  json condition = {{"type", "Ready"},
                    {"status", ready},
                    {"lastHeartbeatTime", Rfc3339(kNow)},
                    {"reason", "KubeletReady"}};
  if (transition) condition["lastTransitionTime"] = Rfc3339(*transition);
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", "n1"}, {"resourceVersion", "7"}, {"labels", {{"a", "b"}}}}},
               {"status",
                {{"conditions", json::array({json{{"type", "MemoryPressure"}, {"status", "False"}},
                                             std::move(condition)})},
                 {"capacity", {{"cpu", "32"}}}}}};
  if (!taints.empty()) node["spec"] = {{"taints", std::move(taints)}};
  return node;
}

json Taint(std::string_view key, std::optional<tf::Time> added, const char* effect = "NoExecute") {
  json taint = {{"key", key}, {"effect", effect}};
  if (added) taint["timeAdded"] = Rfc3339(*added);
  return taint;
}

NodeHealth Failed(std::optional<tf::Time> reported, std::optional<tf::Time> seen = std::nullopt,
                  const char* state = "NotReady") {
  NodeHealth health;
  health.failed = true;
  health.state = state;
  health.reported_since = reported;
  health.seen_since = seen;
  return health;
}

ObservedPod Pod(tf::ReplicaType type, int index, const std::string& node,
                tf::ReplicaPhase phase = tf::ReplicaPhase::kRunning) {
  ObservedPod pod;
  pod.name = tf::ReplicaName("j", type, index);
  pod.uid = pod.name + "-uid";
  pod.node = node;
  tf::ObservedReplica replica;
  replica.type = type;
  replica.index = index;
  replica.phase = phase;
  pod.replica = replica;
  return pod;
}

bool Same(const NodeHealth& a, const NodeHealth& b) {
  return a.failed == b.failed && a.state == b.state && a.reported_since == b.reported_since &&
         a.seen_since == b.seen_since;
}

// 1 PS + 2 workers, workers under ExitCode, no restart allowed.
tf::TFJob Job() {
  const json container = {{"name", "tensorflow"}, {"image", "taas/trainer"}};
  const json tmpl = {{"spec", {{"containers", json::array({container})}}}};
  json object = {
      {"apiVersion", "kubeflow.org/v1"},
      {"kind", "TFJob"},
      {"metadata", {{"name", "j"}, {"namespace", "ns"}, {"uid", "job-uid"}}},
      {"spec",
       {{"runPolicy", {{"backoffLimit", 0}}},
        {"tfReplicaSpecs",
         {{"PS", {{"replicas", 1}, {"template", tmpl}}},
          {"Worker", {{"replicas", 2}, {"restartPolicy", "ExitCode"}, {"template", tmpl}}}}}}}};
  auto job = tf::LoadTFJob(object);
  REQUIRE_MESSAGE(job.ok(), job.status().ToString());
  return *job;
}

}  // namespace

TEST_CASE("a Ready node is not failed; NotReady and unreachable are, since their transition") {
  CHECK_FALSE(ObserveNode(Node("True", Ago(600))).failed);

  const NodeHealth not_ready = ObserveNode(Node("False", Ago(70)));
  CHECK(not_ready.failed);
  CHECK(not_ready.state == "NotReady");
  CHECK(not_ready.reported_since == Ago(70));

  // The node lifecycle controller's view of a silent kubelet: Unknown and the unreachable taint;
  // the earliest of their times counts.
  const NodeHealth unreachable = ObserveNode(
      Node("Unknown", Ago(50),
           json::array({Taint("node.kubernetes.io/unreachable", Ago(55)),
                        Taint("node.kubernetes.io/unreachable", Ago(45), "NoSchedule")})));
  CHECK(unreachable.failed);
  CHECK(unreachable.state == "unreachable");
  CHECK(unreachable.reported_since == Ago(55));

  // A taint alone is enough (Ready not reported, or not yet updated).
  const NodeHealth tainted = ObserveNode(
      Node("True", Ago(600), json::array({Taint("node.kubernetes.io/not-ready", Ago(20))})));
  CHECK(tainted.failed);
  CHECK(tainted.state == "NotReady");
  CHECK(tainted.reported_since == Ago(20));

  // Other taints say nothing; a failure without a valid time has no reported_since.
  CHECK_FALSE(ObserveNode(Node("True", std::nullopt, json::array({Taint("gpu", Ago(5))}))).failed);
  json no_time = Node("Unknown");
  CHECK(ObserveNode(no_time).failed);
  CHECK_FALSE(ObserveNode(no_time).reported_since);
  no_time["status"]["conditions"][1]["lastTransitionTime"] = "yesterday";
  CHECK_FALSE(ObserveNode(no_time).reported_since);
}

TEST_CASE("any JSON type anywhere in a Node is tolerated") {
  const std::vector<json> values = {nullptr,
                                    true,
                                    -1,
                                    1.5,
                                    "text",
                                    json::array({1, "x"}),
                                    json::object(),
                                    json::array({json::array()}),
                                    json::object({{"type", 1}})};
  const json base =
      Node("False", Ago(90), json::array({Taint("node.kubernetes.io/not-ready", Ago(80))}));
  // Every field on the way to what is read, and every value read, replaced by every type.
  const std::vector<std::vector<std::string>> paths = {
      {},       {"metadata"},       {"metadata", "name"}, {"status"}, {"status", "conditions"},
      {"spec"}, {"spec", "taints"},
  };
  for (const auto& path : paths) {
    for (const json& value : values) {
      json node = base;
      json* at = &node;
      for (const auto& key : path) at = &(*at)[key];
      *at = value;
      CHECK_NOTHROW(ObserveNode(node));
      json trimmed = node;
      CHECK_NOTHROW(TrimCachedNode(trimmed));
      CHECK(Same(ObserveNode(trimmed), ObserveNode(node)));
    }
  }
  for (const char* field : {"type", "status", "lastTransitionTime"}) {
    for (const json& value : values) {
      json node = base;
      node["status"]["conditions"][1][field] = value;
      CHECK_NOTHROW(ObserveNode(node));
      node["status"]["conditions"][0] = value;
      json trimmed = node;
      CHECK_NOTHROW(TrimCachedNode(trimmed));
      CHECK(Same(ObserveNode(trimmed), ObserveNode(node)));
    }
  }
  for (const char* field : {"key", "effect", "timeAdded"}) {
    for (const json& value : values) {
      json node = base;
      node["spec"]["taints"][0][field] = value;
      node["spec"]["taints"].push_back(value);
      json trimmed = node;
      CHECK_NOTHROW(TrimCachedNode(trimmed));
      CHECK(Same(ObserveNode(trimmed), ObserveNode(node)));
    }
  }
}

TEST_CASE("the node cache keeps what ObserveNode reads, and no heartbeat") {
  json node =
      Node("Unknown", Ago(50),
           json::array({Taint("node.kubernetes.io/unreachable", Ago(55)), Taint("other", Ago(1))}));
  json trimmed = node;
  TrimCachedNode(trimmed);
  CHECK(Same(ObserveNode(trimmed), ObserveNode(node)));
  CHECK(trimmed["metadata"] == json({{"name", "n1"}, {"resourceVersion", "7"}}));
  CHECK(trimmed["status"]["conditions"].size() == 1);
  CHECK_FALSE(trimmed["status"]["conditions"][0].contains("lastHeartbeatTime"));
  CHECK(trimmed["spec"]["taints"].size() == 1);
  // A heartbeat alone leaves the trimmed node as it was.
  json beat = node;
  beat["status"]["conditions"][1]["lastHeartbeatTime"] = Rfc3339(kNow + std::chrono::seconds(9));
  TrimCachedNode(beat);
  CHECK(beat == trimmed);
}

TEST_CASE("a failure counts from its reported time, else from when the operator saw it") {
  CHECK(FailedSince(Failed(Ago(70), Ago(10)), kNow) == Ago(70));  // e.g. after a restart
  CHECK(FailedSince(Failed(std::nullopt, Ago(10)), kNow) == Ago(10));
  // A time ahead of the operator's clock does not count: it would be waited from unbounded.
  CHECK(FailedSince(Failed(kNow + std::chrono::hours(1), Ago(10)), kNow) == Ago(10));
  CHECK_FALSE(FailedSince(NodeHealth{}, kNow));
}

TEST_CASE("pods on a node failed past the threshold are replaced, with one event per node") {
  const std::vector<ObservedPod> pods = {
      Pod(tf::ReplicaType::kPS, 0, "n0"), Pod(tf::ReplicaType::kWorker, 0, "n1"),
      Pod(tf::ReplicaType::kWorker, 1, "n1"), Pod(tf::ReplicaType::kWorker, 2, "")};
  std::map<std::string, NodeHealth> nodes = {{"n0", NodeHealth{}}, {"n1", Failed(Ago(30))}};

  SUBCASE("before the threshold: nothing yet, a reconcile when it is reached") {
    const NodeFailurePlan plan = PlanNodeFailures(nodes, pods, kNow, kThreshold);
    CHECK(plan.lost_pods.empty());
    CHECK(plan.events.empty());
    CHECK(plan.requeue_at == Ago(30) + kThreshold);
  }
  SUBCASE("at and past it: the node's active pods") {
    nodes["n1"] = Failed(Ago(61));
    const NodeFailurePlan plan = PlanNodeFailures(nodes, pods, kNow, kThreshold);
    CHECK(plan.lost_pods ==
          std::map<std::string, std::string>{{"j-worker-0-uid", "node n1 NotReady for 61s"},
                                             {"j-worker-1-uid", "node n1 NotReady for 61s"}});
    CHECK(plan.events ==
          std::vector<std::string>{"node n1 NotReady for 61s: replaced worker-0, worker-1"});
    CHECK_FALSE(plan.requeue_at);
    nodes["n1"] = Failed(Ago(60));
    CHECK(PlanNodeFailures(nodes, pods, kNow, kThreshold).lost_pods.size() == 2);
  }
  SUBCASE("two failed nodes: an event each") {
    nodes["n0"] = Failed(std::nullopt, Ago(100), "unreachable");
    nodes["n1"] = Failed(Ago(61));
    const NodeFailurePlan plan = PlanNodeFailures(nodes, pods, kNow, kThreshold);
    CHECK(plan.lost_pods.size() == 3);
    CHECK(plan.events == std::vector<std::string>{"node n0 unreachable for 100s: replaced ps-0",
                                                  "node n1 NotReady for 61s: replaced "
                                                  "worker-0, worker-1"});
  }
  SUBCASE("threshold zero: off") {
    nodes["n1"] = Failed(Ago(6000));
    CHECK(PlanNodeFailures(nodes, pods, kNow, std::chrono::seconds(0)).lost_pods.empty());
  }
  SUBCASE("a node not observed is not failed") {
    nodes.erase("n1");
    const NodeFailurePlan plan = PlanNodeFailures(nodes, pods, kNow, kThreshold);
    CHECK(plan.lost_pods.empty());
    CHECK_FALSE(plan.requeue_at);
  }
}

TEST_CASE("finished pods are left alone; pods already deleted are not reported again") {
  std::vector<ObservedPod> pods = {
      Pod(tf::ReplicaType::kWorker, 0, "n1", tf::ReplicaPhase::kSucceeded),
      Pod(tf::ReplicaType::kWorker, 1, "n1", tf::ReplicaPhase::kFailed),
      Pod(tf::ReplicaType::kWorker, 2, "n1"),
      Pod(tf::ReplicaType::kWorker, 3, "n1", tf::ReplicaPhase::kPending),
      Pod(tf::ReplicaType::kWorker, 4, "n1", tf::ReplicaPhase::kUnknown),
      Pod(tf::ReplicaType::kWorker, 5, "n1")};
  pods[2].deleting = true;
  pods[5].replica->terminating = true;  // deleted gracefully: only a forced deletion ends it there
  const std::map<std::string, NodeHealth> nodes = {{"n1", Failed(Ago(90))}};
  const NodeFailurePlan plan = PlanNodeFailures(nodes, pods, kNow, kThreshold);
  CHECK(plan.events == std::vector<std::string>{
                           "node n1 NotReady for 90s: replaced worker-3, worker-4, worker-5"});
  // Worker 2's deletion stays forced until it is gone (a failed one is never retried gracefully).
  CHECK(plan.lost_pods.size() == 4);
  CHECK(plan.lost_pods.count("j-worker-2-uid") == 1);
  CHECK(plan.lost_pods.count("j-worker-0-uid") == 0);
  CHECK(plan.lost_pods.count("j-worker-1-uid") == 0);
}

TEST_CASE("a replica lost with its node is replaced forced, and is no failure and no restart") {
  tf::TFJob job = Job();  // backoffLimit 0: one counted restart would fail the job
  Observation seen;
  seen.pods = {Pod(tf::ReplicaType::kPS, 0, "n0"), Pod(tf::ReplicaType::kWorker, 0, "n0"),
               Pod(tf::ReplicaType::kWorker, 1, "n1")};
  for (const auto& pod : seen.pods) seen.services.push_back({pod.name, false});
  const Decision running = Decide(job, {}, seen, kNow, {});
  job.status = running.update.status;
  REQUIRE(tf::IsRunning(job.status));

  const std::map<std::string, NodeHealth> nodes = {{"n0", NodeHealth{}}, {"n1", Failed(Ago(61))}};
  seen.lost_pods = PlanNodeFailures(nodes, seen.pods, kNow, kThreshold).lost_pods;
  const Decision lost = Decide(job, {}, seen, kNow, {});
  REQUIRE(lost.delete_pods.size() == 1);
  CHECK(lost.delete_pods[0].name == "j-worker-1");
  CHECK(lost.delete_pods[0].force);
  CHECK_FALSE(lost.delete_pods[0].restart);
  CHECK(lost.delete_pods[0].why == "node n1 NotReady for 61s");
  CHECK(lost.update.restart.empty());
  CHECK(lost.ledger.empty());
  CHECK_FALSE(tf::IsFinished(lost.update.status));
  CHECK(lost.update.status.replica_statuses.at(tf::ReplicaType::kWorker).restarts == 0);
  CHECK(lost.update.status.replica_statuses.at(tf::ReplicaType::kWorker).failed == 0);
  CHECK(lost.update.status.replica_statuses.at(tf::ReplicaType::kWorker).active == 1);
  job.status = lost.update.status;

  // Once gone, it is created again: elsewhere, since its node is tainted for the scheduler.
  seen.pods.pop_back();
  seen.lost_pods.clear();
  const Decision gone = Decide(job, {}, seen, kNow, {});
  CHECK(gone.create_pods == std::vector<tf::ReplicaRef>{{tf::ReplicaType::kWorker, 1}});
  CHECK(gone.update.status.replica_statuses.at(tf::ReplicaType::kWorker).restarts == 0);
  CHECK_FALSE(tf::IsFinished(gone.update.status));
}

TEST_CASE("a lost pod whose restart was already counted is still deleted forced, once") {
  tf::TFJob job = Job();
  Observation seen;
  seen.pods = {Pod(tf::ReplicaType::kWorker, 1, "n1")};
  const taas::controller::RestartLedger ledger = {"j-worker-1-uid"};
  seen.lost_pods = {{"j-worker-1-uid", "node n1 NotReady for 61s"}};
  const Decision d = Decide(job, ledger, seen, kNow, {});
  REQUIRE(d.delete_pods.size() == 1);
  CHECK(d.delete_pods[0].force);
}
