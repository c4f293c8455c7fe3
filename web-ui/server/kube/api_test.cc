#include "taas/ui_server/api.h"

#include <absl/strings/cord.h>
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "taas/tfjob/serialization.h"
#include "taas/ui_kube/kube_api.h"
#include "taas/ui_kube/kube_job_source.h"
#include "taas/ui_kube/views.h"
#include "taas/ui_server/job_form.h"
#include "taas/ui_server/metrics.h"
#include "taas/ui_server/server.h"

// The API handlers (taas::ui_server::Api) over the Kubernetes JobSource over an in-memory API
// server: every handler end to end, as taas-ui and the operator serve them.
namespace taas::ui_kube {
namespace {

using namespace taas::ui_server;  // NOLINT: the test speaks the API's names throughout

using nlohmann::json;
constexpr char kToken[] = "s3cret-token";

// An in-memory API server: canned answers by exact path, recorded writes.
class FakeKube : public KubeApi {
 public:
  absl::StatusOr<json> Get(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    gets.push_back(path);
    if (auto failure = failures.find(path); failure != failures.end()) return failure->second;
    auto it = objects.find(path);
    if (it == objects.end()) return NotFound(path);
    return it->second;
  }
  absl::StatusOr<json> Post(const std::string& path, const json& body) override {
    std::lock_guard<std::mutex> lock(mu);
    posts.emplace_back(path, body);
    if (!post_error.ok()) return post_error;
    json created = body;
    created["metadata"]["uid"] = "uid-1";
    return created;
  }
  absl::StatusOr<json> Delete(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    deletes.push_back(path);
    if (!objects.count(path)) return NotFound(path);
    return json{{"status", "Success"}};
  }
  absl::Status StreamText(const std::string& path,
                          const std::function<bool(std::string_view)>& on_chunk,
                          Cancellation* cancel, bool follow) override {
    std::vector<std::string> chunks;
    {
      std::lock_guard<std::mutex> lock(mu);
      texts_requested.push_back(path);
      chunks = log_chunks;
    }
    for (const std::string& chunk : chunks) {
      if (!on_chunk(chunk)) return absl::OkStatus();
    }
    // A quiet pod: nothing more until the stream is cancelled.
    while (follow && stream_until_cancelled && !(cancel && cancel->cancelled())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ++streams_ended;
    return absl::OkStatus();
  }

  static absl::Status KubeStatus(absl::StatusCode code, const json& status) {
    const bool has_message =
        status.is_object() && status.contains("message") && status["message"].is_string();
    absl::Status s(code, has_message ? status["message"].get<std::string>() : "failed");
    s.SetPayload(absl::string_view(kKubeStatusPayload.data(), kKubeStatusPayload.size()),
                 absl::Cord(status.dump()));
    return s;
  }
  static absl::Status NotFound(const std::string& path) {
    const std::string name = path.substr(path.rfind('/') + 1);
    return KubeStatus(absl::StatusCode::kNotFound,
                      {{"kind", "Status"},
                       {"code", 404},
                       {"reason", "NotFound"},
                       {"message", "tfjobs.kubeflow.org \"" + name + "\" not found"}});
  }

  std::mutex mu;
  std::map<std::string, json> objects;
  std::map<std::string, absl::Status> failures;  // answered instead of the object, by path
  absl::Status post_error;
  std::vector<std::string> gets;
  std::vector<std::pair<std::string, json>> posts;
  std::vector<std::string> deletes;
  std::vector<std::string> texts_requested;
  // The pod's output as the API server streams it (a log answer or a followed one).
  std::vector<std::string> log_chunks = {"step=1 loss=2.3\n", "step=2 loss=2.1\n",
                                         "step=3 loss=1.9\n"};
  std::atomic<bool> stream_until_cancelled{false};
  std::atomic<int> streams_ended{0};
};

json Node(const std::string& name) {
  const json resources = {{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "8"}};
  return {{"metadata", {{"name", name}}},
          {"status",
           {{"capacity", resources},
            {"allocatable", resources},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json WorkerPod(int index, const std::string& phase) {
  return {
      {"metadata",
       {{"name", "mnist-worker-" + std::to_string(index)},
        {"namespace", "default"},
        {"labels",
         {{"training.kubeflow.org/job-name", "mnist"},
          {"training.kubeflow.org/replica-type", "worker"},
          {"training.kubeflow.org/replica-index", std::to_string(index)}}}}},
      {"spec",
       {{"nodeName", phase == "Running" ? "taas-node-0" : ""},
        {"containers",
         {{{"name", "tensorflow"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}},
      {"status",
       {{"phase", phase},
        {"conditions", phase == "Pending" ? json::array({{{"type", "PodScheduled"},
                                                          {"status", "False"},
                                                          {"reason", "Unschedulable"},
                                                          {"message", "0/2 nodes are available"}}})
                                          : json::array()}}}};
}

json MnistJob() {
  return json::parse(R"({
    "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
    "metadata": {"name": "mnist", "namespace": "default",
                 "creationTimestamp": "2026-11-22T00:00:00Z", "uid": "u1"},
    "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
      {"name": "tensorflow", "image": "taas/trainer:1",
       "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}}}},
    "status": {"conditions": [{"type": "Running", "status": "True"}]}
  })");
}

struct Fixture {
  explicit Fixture(bool anonymous = false, ApiOptions options = {}) {
    kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs"] = {{"items", {MnistJob()}}};
    kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist"] = MnistJob();
    kube.objects["/apis/kubeflow.org/v1/namespaces/team-b/tfjobs"] = {{"items", json::array()}};
    kube.objects["/api/v1/namespaces/default/pods"] = {
        {"items", {WorkerPod(0, "Running"), WorkerPod(1, "Pending")}}};
    kube.objects["/api/v1/namespaces/team-b/pods"] = {{"items", json::array()}};
    kube.objects["/api/v1/namespaces/default/pods/mnist-worker-0"] = WorkerPod(0, "Running");
    kube.objects["/api/v1/namespaces/default/pods/other-worker-0"] = {
        {"metadata", {{"name", "other-worker-0"}, {"labels", {{"job-name", "other"}}}}}};
    kube.objects["/api/v1/namespaces/default/events"] = {
        {"items",
         {{{"involvedObject", {{"kind", "Pod"}, {"name", "mnist-worker-1"}}},
           {"metadata", {{"namespace", "default"}}},
           {"type", "Warning"},
           {"reason", "FailedScheduling"},
           {"message", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."},
           {"lastTimestamp", "2026-11-22T00:00:03Z"}}}}};
    kube.objects["/api/v1/namespaces/default/events?fieldSelector=reason%3DFailedScheduling"] =
        kube.objects["/api/v1/namespaces/default/events"];
    kube.objects["/api/v1/namespaces/team-b/events?fieldSelector=reason%3DFailedScheduling"] = {
        {"items", json::array()}};
    kube.objects["/api/v1/nodes"] = {{"items", {Node("taas-node-0"), Node("taas-node-1")}}};
    kube.objects
        ["/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"] =
        kube.objects["/api/v1/namespaces/default/pods"];
    options.namespaces = {"default", "team-b"};
    options.token = kToken;
    options.allow_anonymous_read = anonymous;
    api = std::make_unique<Api>(options, &source, &metrics, Logger(stderr), [] {
      return std::int64_t{1795305660};  // 2026-11-22T00:01:00Z
    });
  }

  HttpResponse Call(const std::string& method, const std::string& target,
                    const std::string& body = "", const std::string& auth = "") {
    return api->Handle(
        {method, target, auth.empty() ? std::string("Bearer ") + kToken : auth, body});
  }
  HttpResponse Anonymous(const std::string& method, const std::string& target) {
    return api->Handle({method, target, "", ""});
  }

  FakeKube kube;
  KubeJobSource source{&kube};
  MetricsStore metrics;
  std::unique_ptr<Api> api;
};

json Body(const HttpResponse& r) { return json::parse(r.body); }

json Form() {
  return {{"name", "fmnist"},
          {"image", "taas/trainer:1"},
          {"psReplicas", 1},
          {"workerReplicas", 2},
          {"gpusPerWorker", 1},
          {"workerCpu", "2"},
          {"workerMemory", "4Gi"},
          {"mode", "sync"},
          {"restartPolicy", "OnFailure"},
          {"backoffLimit", 3}};
}

TEST_CASE("requests need the bearer token") {
  Fixture f;
  CHECK(f.Anonymous("GET", "/api/v1/config").status == 401);
  CHECK(Body(f.Anonymous("GET", "/api/v1/config")).contains("error"));
  CHECK(f.Call("GET", "/api/v1/config", "", "Bearer wrong").status == 401);
  CHECK(f.Call("GET", "/api/v1/config", "", "Bearer s3cret-token-and-more").status == 401);
  CHECK(f.Call("GET", "/api/v1/config", "", "Basic s3cret-token").status == 401);
  CHECK(f.Call("POST", "/api/v1/namespaces/default/tfjobs", Form().dump(), "Bearer nope").status ==
        401);
  CHECK(f.kube.posts.empty());
  const HttpResponse ok = f.Call("GET", "/api/v1/config", "", "bearer s3cret-token");
  CHECK(ok.status == 200);
  CHECK(Body(ok)["namespaces"] == json{"default", "team-b"});
  CHECK(Body(ok)["readOnly"] == false);
  CHECK(Body(ok)["localRun"] == false);
}

TEST_CASE("anonymous reads only with the explicit opt-in, and never writes") {
  Fixture f(/*anonymous=*/true);
  const HttpResponse config = f.Anonymous("GET", "/api/v1/config");
  CHECK(config.status == 200);
  CHECK(Body(config)["readOnly"] == true);
  CHECK(f.Anonymous("GET", "/api/v1/tfjobs").status == 200);
  CHECK(f.Anonymous("POST", "/api/v1/namespaces/default/tfjobs").status == 401);
  CHECK(f.Anonymous("DELETE", "/api/v1/namespaces/default/tfjobs/mnist").status == 401);
  CHECK(f.Call("GET", "/api/v1/config", "", "Bearer wrong").status == 401);
  CHECK(f.kube.deletes.empty());
}

TEST_CASE("only the configured namespaces are reachable") {
  Fixture f;
  auto forbidden = f.Call("GET", "/api/v1/namespaces/kube-system/tfjobs");
  CHECK(forbidden.status == 403);
  CHECK(Body(forbidden)["field"] == "metadata.namespace");
  CHECK(f.Call("GET", "/api/v1/tfjobs?namespace=kube-system").status == 403);
  CHECK(f.Call("POST", "/api/v1/namespaces/kube-system/tfjobs", Form().dump()).status == 403);
  CHECK(f.Call("DELETE", "/api/v1/namespaces/kube-system/tfjobs/mnist").status == 403);
  CHECK(f.Call("GET", "/api/v1/namespaces/..%2Fx/tfjobs").status == 400);
  CHECK(f.Call("GET", "/api/v1/namespaces/default/tfjobs/UPPER").status == 400);
  CHECK(f.kube.posts.empty());
  CHECK(f.kube.deletes.empty());
  CHECK(f.Call("GET", "/api/v1/nothing").status == 404);
  CHECK(f.Call("PUT", "/api/v1/namespaces/default/tfjobs/mnist").status == 405);
}

TEST_CASE("the job detail shows each Running pod's devices, read through its headless service") {
  Fixture f;
  DeviceBook book;
  ApiOptions options;
  options.namespaces = {"default"};
  options.token = kToken;
  Api api(options, &f.source, &f.metrics, Logger(stderr), nullptr, &book);
  MetricsScraper scraper(&f.source, {"default"}, &f.metrics, ScraperOptions{}, Logger(stderr),
                         &book);
  auto pods = [&] {
    const HttpResponse r = api.Handle(
        {"GET", "/api/v1/namespaces/default/tfjobs/mnist", std::string("Bearer ") + kToken, ""});
    REQUIRE(r.status == 200);
    return Body(r)["job"]["pods"];
  };
  json before = pods();
  REQUIRE(before.size() == 2);
  CHECK(before[0]["devices"].is_null());
  CHECK(before[1]["devices"].is_null());
  // Only the Running pod is asked for, at the address the chief's scrape would use.
  const auto wanted = book.TakeWanted(10);
  REQUIRE(wanted.size() == 1);
  CHECK(wanted[0].replica == "mnist-worker-0");
  CHECK(scraper.Address(wanted[0].namespace_name, wanted[0].replica, wanted[0].pod_template) ==
        "mnist-worker-0.default.svc:9090");
  book.Put("default/mnist-worker-0", wanted[0].start, {"cuda:0 NVIDIA H100 80GB HBM3"});
  CHECK(pods()[0]["devices"] == json{"cuda:0 NVIDIA H100 80GB HBM3"});
}

TEST_CASE("the job list has one row per TFJob with replicas, GPUs and state") {
  Fixture f;
  const HttpResponse r = f.Call("GET", "/api/v1/tfjobs");
  REQUIRE(r.status == 200);
  const json items = Body(r)["items"];
  REQUIRE(items.size() == 1);
  CHECK(items[0]["name"] == "mnist");
  CHECK(items[0]["replicasText"] == "Worker 1/2");
  CHECK(items[0]["gpus"] == 4);
  CHECK(items[0]["ageSeconds"] == 60);
  CHECK(items[0]["state"] == "Running");
  CHECK(items[0]["severity"] == "warning");
  CHECK(items[0]["reason"].get<std::string>().find(
            "worker-1: Unschedulable (0/2 nodes are available)") != std::string::npos);
  CHECK(Body(f.Call("GET", "/api/v1/tfjobs?q=zzz"))["items"].empty());
  CHECK(Body(f.Call("GET", "/api/v1/tfjobs?namespace=team-b"))["items"].empty());
}

TEST_CASE("creating a job validates every field on the server") {
  Fixture f;
  json form = Form();
  form["workerReplicas"] = -1;
  HttpResponse r = f.Call("POST", "/api/v1/namespaces/default/tfjobs", form.dump());
  CHECK(r.status == 422);
  CHECK(Body(r)["field"] == "spec.tfReplicaSpecs.Worker.replicas");
  CHECK(Body(r)["error"].get<std::string>().find("between 1 and") != std::string::npos);

  form = Form();
  form["gpusPerWorker"] = 16;  // more than any node has
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs", form.dump());
  CHECK(r.status == 422);
  CHECK(Body(r)["field"] ==
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]");

  // Every problem in one answer: a malformed field and one the cluster can never hold.
  form["workerMemory"] = "lots";
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs", form.dump());
  CHECK(r.status == 422);
  CHECK(Body(r)["errors"].size() == 2);
  CHECK(Body(r)["errors"][1]["message"].get<std::string>().find("largest node has 8") !=
        std::string::npos);
  form["workerMemory"] = "4Gi";

  CHECK(f.Call("POST", "/api/v1/namespaces/default/tfjobs", "{not json").status == 400);
  CHECK(f.kube.posts.empty());

  // A dry run answers 200 with the errors, or with the TFJob the API server accepted.
  form["name"] = "Bad";
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs?dryRun=true", form.dump());
  CHECK(r.status == 200);
  CHECK(Body(r)["errors"].size() == 2);  // the name, and 16 GPUs per worker
  CHECK(Body(r)["errors"][0]["field"] == "metadata.name");
  CHECK(Body(r)["tfjob"].is_null());
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs?dryRun=true", Form().dump());
  CHECK(r.status == 200);
  CHECK(Body(r)["errors"].empty());
  CHECK(Body(r)["tfjob"]["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 2);
  REQUIRE(f.kube.posts.size() == 1);
  CHECK(f.kube.posts[0].first == "/apis/kubeflow.org/v1/namespaces/default/tfjobs?dryRun=All");

  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs", Form().dump());
  CHECK(r.status == 201);
  REQUIRE(f.kube.posts.size() == 2);
  CHECK(f.kube.posts[1].first == "/apis/kubeflow.org/v1/namespaces/default/tfjobs");
  CHECK(f.kube.posts[1].second["metadata"]["name"] == "fmnist");
  CHECK(f.kube.posts[1].second["metadata"]["namespace"] == "default");
}

TEST_CASE("API server rejections come back with the field it named") {
  Fixture f;
  f.kube.post_error = FakeKube::KubeStatus(
      absl::StatusCode::kInvalidArgument,
      {{"kind", "Status"},
       {"code", 422},
       {"reason", "Invalid"},
       {"message",
        "TFJob.kubeflow.org \"fmnist\" is invalid: spec.runPolicy.backoffLimit: "
        "Invalid value: 3: must be less than or equal to 2"},
       {"details",
        {{"causes",
          {{{"reason", "FieldValueInvalid"},
            {"message", "Invalid value: 3: must be less than or equal to 2"},
            {"field", "spec.runPolicy.backoffLimit"}}}}}}});
  HttpResponse r = f.Call("POST", "/api/v1/namespaces/default/tfjobs", Form().dump());
  CHECK(r.status == 422);
  CHECK(Body(r)["field"] == "spec.runPolicy.backoffLimit");
  CHECK(Body(r)["error"].get<std::string>().find("is invalid") != std::string::npos);
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs?dryRun=true", Form().dump());
  CHECK(r.status == 200);
  CHECK(Body(r)["errors"][0]["field"] == "spec.runPolicy.backoffLimit");

  f.kube.post_error = FakeKube::KubeStatus(absl::StatusCode::kAlreadyExists,
                                           {{"code", 409},
                                            {"reason", "AlreadyExists"},
                                            {"message", "tfjobs \"fmnist\" already exists"}});
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs", Form().dump());
  CHECK(r.status == 409);
  CHECK(Body(r)["error"] == "tfjobs \"fmnist\" already exists");
}

TEST_CASE("job detail, delete and clone") {
  Fixture f;
  HttpResponse r = f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist");
  REQUIRE(r.status == 200);
  const json detail = Body(r);
  CHECK(detail["job"]["pods"].size() == 2);
  CHECK(detail["job"]["pods"][1]["phase"] == "Pending");
  CHECK(detail["events"].size() == 1);
  CHECK(detail["events"][0]["reason"] == "FailedScheduling");
  CHECK(detail["conditions"][0]["type"] == "Running");
  CHECK(detail["tfjob"]["metadata"]["uid"] == "u1");

  r = f.Call("GET", "/api/v1/namespaces/default/tfjobs/missing");
  CHECK(r.status == 404);
  CHECK(Body(r)["error"] == "tfjobs.kubeflow.org \"missing\" not found");

  r = f.Call("DELETE", "/api/v1/namespaces/default/tfjobs/mnist");
  CHECK(r.status == 200);
  CHECK(f.kube.deletes.back() == "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist");

  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs/mnist/clone", R"({"name":"mnist-again"})");
  CHECK(r.status == 201);
  REQUIRE(f.kube.posts.size() == 1);
  CHECK(f.kube.posts[0].second["metadata"]["name"] == "mnist-again");
  CHECK_FALSE(f.kube.posts[0].second["metadata"].contains("uid"));
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs/mnist/clone", "");
  CHECK(r.status == 201);
  CHECK(Body(r)["name"].get<std::string>().rfind("mnist-", 0) == 0);
  r = f.Call("POST", "/api/v1/namespaces/default/tfjobs/mnist/clone", R"({"name":"Bad Name"})");
  CHECK(r.status == 422);
  CHECK(Body(r)["field"] == "metadata.name");
}

TEST_CASE("logs of a replica, only for pods of the job") {
  Fixture f;
  HttpResponse r = f.Call(
      "GET", "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs?tailLines=50");
  CHECK(r.status == 200);
  CHECK(r.body == "step=1 loss=2.3\nstep=2 loss=2.1\nstep=3 loss=1.9\n");
  // No limitBytes: the API server would keep the first bytes, not the last.
  CHECK(f.kube.texts_requested.back() ==
        "/api/v1/namespaces/default/pods/mnist-worker-0/log?tailLines=50&container=tensorflow");
  r = f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist/pods/other-worker-0/logs");
  CHECK(r.status == 404);
  r = f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs?tailLines=x");
  CHECK(r.status == 400);
}

TEST_CASE("metrics history and cluster view") {
  Fixture f;
  MetricsPoint p;
  p.time_ms = 1000;
  p.global_step = 10;
  p.loss = 2.0;
  f.metrics.Add("default/mnist", p);
  HttpResponse r = f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist/metrics");
  REQUIRE(r.status == 200);
  CHECK(Body(r)["points"][0]["step"] == 10);
  CHECK(Body(r)["latest"]["loss"] == 2.0);

  r = f.Call("GET", "/api/v1/cluster");
  REQUIRE(r.status == 200);
  const json cluster = Body(r);
  CHECK(cluster["totals"]["allocatable"]["gpu"] == 16);
  CHECK(cluster["totals"]["inUse"]["gpu"] == 2);
  REQUIRE(cluster["pending"].size() == 1);
  CHECK(cluster["pending"][0]["pod"] == "mnist-worker-1");
  CHECK(cluster["pending"][0]["message"] ==
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
}

// MnistJob with the status.progress the operator writes (common/tfjob/progress.h).
json MnistJobWithProgress(const json& progress) {
  json job = MnistJob();
  job["status"]["progress"] = progress;
  return job;
}

void SetMnist(Fixture& f, const json& job) {
  f.kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs"] = {{"items", {job}}};
  f.kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist"] = job;
}

// The job list's row and the job page's, which show the same progress.
std::vector<json> MnistRows(Fixture& f) {
  const HttpResponse list = f.Call("GET", "/api/v1/tfjobs");
  const HttpResponse detail = f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist");
  REQUIRE(list.status == 200);
  REQUIRE(detail.status == 200);
  return {Body(list)["items"][0], Body(detail)["job"]};
}

TEST_CASE("a job's progress is its TFJob's status.progress, not the UI's own scrape") {
  Fixture f;
  SetMnist(f, MnistJobWithProgress(json::parse(R"({
    "globalStep": 2520, "maxSteps": 6000, "examplesPerSecond": 3310.5, "etaSeconds": 65,
    "metrics": {"loss": 0.412, "accuracy": 0.884}, "lastUpdateTime": "2026-11-22T00:00:50Z"})")));
  // The chief as the UI scraped it, at another moment: every figure differs from the status's.
  MetricsPoint scraped{1795305655000, 2000, 0.5, 1000, 0.01, 0.7, 9000, std::nullopt};
  f.metrics.Add("default/mnist", scraped);
  for (const json& row : MnistRows(f)) {
    const json& progress = row["progress"];
    CHECK(progress["step"] == 2520);
    CHECK(progress["maxSteps"] == 6000);
    CHECK(progress["percent"] == 42);
    CHECK(progress["examplesPerSecond"] == 3310.5);
    CHECK(progress["etaSeconds"] == 65);
    CHECK(progress["eta"] == "1m05s");
    CHECK(progress["loss"] == 0.412);
    CHECK(progress["accuracy"] == 0.884);
    CHECK(progress["finalMetrics"] == json::array());
    CHECK(progress["updated"] == "2026-11-22T00:00:50Z");
  }
}

TEST_CASE("a finished job's final metrics come from status.progress.finalMetrics") {
  Fixture f;
  json job = MnistJobWithProgress(json::parse(R"({
    "globalStep": 6000, "maxSteps": 6000, "metrics": {"loss": 0.25, "accuracy": 0.9},
    "finalMetrics": {"accuracy": 0.9087, "loss": 0.2571}})"));
  job["status"]["conditions"] = {{{"type", "Succeeded"}, {"status", "True"}}};
  SetMnist(f, job);
  // The last scrape before the end: its rate and time left are not the finished job's.
  f.metrics.Add("default/mnist", {1795305600000, 5990, 0.3, 3000, 0.01, 0.89, 6000, std::nullopt});
  for (const json& row : MnistRows(f)) {
    CHECK(row["state"] == "Succeeded");
    CHECK(row["progress"]["percent"] == 100);
    CHECK(row["progress"]["finalMetrics"] ==
          json::parse(R"([{"name":"accuracy","value":0.9087},{"name":"loss","value":0.2571}])"));
    CHECK(row["progress"]["examplesPerSecond"].is_null());
    CHECK(row["progress"]["eta"] == "");
  }
}

TEST_CASE("what status.progress lacks comes from the UI's scrape; without either, none") {
  Fixture f;
  CHECK(MnistRows(f)[0]["progress"].is_null());
  CHECK(MnistRows(f)[1]["progress"].is_null());
  // No progress in the status (the operator's first read is still to come): the scraped one,
  // its time left at the step rate of the last minute (10 steps a second).
  f.metrics.Add("default/mnist",
                {1795305600000, 1000, 0.6, 800, 0.01, std::nullopt, 4000, std::nullopt});
  f.metrics.Add("default/mnist", {1795305610000, 1100, 0.5, 820, 0.01, 0.81, 4000, std::nullopt});
  for (const json& row : MnistRows(f)) {
    CHECK(row["progress"]["step"] == 1100);
    CHECK(row["progress"]["percent"] == 27);
    CHECK(row["progress"]["etaSeconds"] == 290);
    CHECK(row["progress"]["eta"] == "4m50s");
    CHECK(row["progress"]["accuracy"] == 0.81);
    CHECK(row["progress"]["updated"] == "2026-11-22T00:00:10Z");
  }
  // A status that has some figures keeps them; the scrape fills only the others.
  SetMnist(f, MnistJobWithProgress({{"globalStep", 1200}, {"metrics", {{"loss", 0.45}}}}));
  for (const json& row : MnistRows(f)) {
    CHECK(row["progress"]["step"] == 1200);
    CHECK(row["progress"]["maxSteps"] == 4000);
    CHECK(row["progress"]["percent"] == 30);
    CHECK(row["progress"]["loss"] == 0.45);
    CHECK(row["progress"]["accuracy"] == 0.81);
  }
  // A status.progress of the wrong type is no progress (the rules drop it): the scrape's.
  SetMnist(f, MnistJobWithProgress("42%"));
  CHECK(MnistRows(f)[0]["progress"]["step"] == 1100);
}

// A real HTTP round trip against HttpServer.
struct Fetched {
  int status = 0;
  std::string body;
  std::string content_type;
};

Fetched Fetch(int port, const std::string& method, const std::string& target,
              const std::string& token = "", const std::string& body = "") {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return {static_cast<int>(res.result_int()), res.body(),
          std::string(res[http::field::content_type])};
}

TEST_CASE("a 10 MiB line shows its end behind the cut marker, in an answer and a followed stream") {
  ApiOptions options;
  options.max_log_bytes = 1 << 20;  // the window; under Beast's 8 MiB limit of a read answer
  Fixture f(false, options);
  const std::string line = std::string(10 << 20, 'x') + " the end";
  f.kube.log_chunks = {"before\n"};
  for (std::size_t at = 0; at < line.size(); at += 65536) {
    f.kube.log_chunks.push_back(line.substr(at, 65536));
  }
  f.kube.log_chunks.push_back("\nafter\n");
  const std::string after = "\nafter\n";
  const std::string logs = "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs";
  // Every byte of the line is shown or counted, and the line fills the window (with the lines
  // after it in an answer; alone in a stream, which cuts each line).
  const auto check_cut = [&](const std::string& text, std::size_t window) {
    REQUIRE(text.rfind("[taas: ", 0) == 0);
    CHECK(text.size() <= window);
    CHECK(text.size() > window - 64);
    REQUIRE(text.size() > 14);
    CHECK(text.compare(text.size() - 14, 14, "the end\nafter\n") == 0);
    const std::size_t count = std::stoul(text.substr(7));
    const std::size_t marker_end =
        text.find(" bytes cut] xxx") + std::string(" bytes cut] ").size();
    CHECK(count + (text.size() - marker_end - after.size()) == line.size());
  };
  for (const std::string query : {"?tailLines=5", ""}) {
    CAPTURE(query);
    const HttpResponse r = f.Call("GET", logs + query);
    REQUIRE(r.status == 200);
    check_cut(r.body, std::size_t{1} << 20);
  }

  // A followed stream cuts the line as it passes, over the server.
  const auto assets = std::filesystem::temp_directory_path() /
                      ("taas-ui-long-line-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(assets);
  HttpServer server(f.api.get(), {"127.0.0.1", 0, assets.string()}, Logger(stderr));
  REQUIRE(server.Start().ok());
  const Fetched followed = Fetch(server.port(), "GET", logs + "?follow=true&tailLines=5", kToken);
  CHECK(followed.status == 200);
  REQUIRE(followed.body.rfind("before\n", 0) == 0);
  check_cut(followed.body.substr(std::string("before\n").size()),
            (std::size_t{1} << 20) + std::string("after\n").size());
  server.Stop();
  std::filesystem::remove_all(assets);
}

TEST_CASE("over HTTP: token, API, followed logs and the front end's files") {
  Fixture f;
  const auto assets = std::filesystem::temp_directory_path() /
                      ("taas-ui-assets-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(assets / "assets");
  std::ofstream(assets / "index.html") << "<!doctype html><title>taas</title>";
  std::ofstream(assets / "assets" / "app.js") << "console.log(1)";
  HttpServer server(f.api.get(), {"127.0.0.1", 0, assets.string()}, Logger(stderr));
  REQUIRE(server.Start().ok());
  const int port = server.port();

  CHECK(Fetch(port, "GET", "/api/v1/tfjobs").status == 401);
  CHECK(Fetch(port, "GET", "/api/v1/tfjobs", "wrong").status == 401);
  Fetched ok = Fetch(port, "GET", "/api/v1/tfjobs", kToken);
  CHECK(ok.status == 200);
  CHECK(ok.content_type == "application/json");
  CHECK(json::parse(ok.body)["items"].size() == 1);
  Fetched created = Fetch(port, "POST", "/api/v1/namespaces/default/tfjobs", kToken, Form().dump());
  CHECK(created.status == 201);
  Fetched invalid = Fetch(port, "POST", "/api/v1/namespaces/default/tfjobs", kToken,
                          R"({"name":"x","image":"i","workerReplicas":"many"})");
  CHECK(invalid.status == 422);
  CHECK(json::parse(invalid.body)["field"] == "spec.tfReplicaSpecs.Worker.replicas");

  Fetched logs =
      Fetch(port, "GET",
            "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs?follow=true", kToken);
  CHECK(logs.status == 200);
  CHECK(logs.body == "step=1 loss=2.3\nstep=2 loss=2.1\nstep=3 loss=1.9\n");
  CHECK(f.kube.texts_requested.back().find("&follow=true") != std::string::npos);
  CHECK(Fetch(port, "GET",
              "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs?follow=true")
            .status == 401);

  Fetched index = Fetch(port, "GET", "/");
  CHECK(index.status == 200);
  CHECK(index.content_type == "text/html; charset=utf-8");
  CHECK(Fetch(port, "GET", "/jobs/default/mnist").body == index.body);  // app route
  CHECK(Fetch(port, "GET", "/assets/app.js").content_type == "text/javascript; charset=utf-8");
  CHECK(Fetch(port, "GET", "/assets/missing.js").status == 404);
  CHECK(Fetch(port, "GET", "/../../etc/passwd").status == 404);

  server.Stop();
  std::filesystem::remove_all(assets);
}

// Every value of another type that a field of an outside object may hold.
std::vector<json> WrongValues() {
  return {"text",
          -1,
          18446744073709551615ULL,
          1.5e308,
          -1.5,
          true,
          nullptr,
          json::array(),
          json::object(),
          json::array({1, "a", nullptr}),
          json{{"a", {{"b", 1}}}}};
}

// `object` with one field (at any depth, array elements included) replaced by each wrong value.
std::vector<json> WrongTypeVariants(const json& object) {
  std::vector<json> variants;
  const json flat = object.flatten();
  std::set<std::string> pointers;
  for (const auto& [leaf, value] : flat.items()) {
    // Every prefix of a leaf's pointer is a field too (whole objects and arrays).
    for (std::size_t slash = leaf.find('/', 1);; slash = leaf.find('/', slash + 1)) {
      pointers.insert(leaf.substr(0, slash));
      if (slash == std::string::npos) break;
    }
  }
  for (const std::string& pointer : pointers) {
    for (const json& wrong : WrongValues()) {
      json variant = object;
      variant[json::json_pointer(pointer)] = wrong;
      variants.push_back(std::move(variant));
    }
  }
  for (const json& wrong : WrongValues()) variants.push_back(wrong);  // the object itself
  return variants;
}

TEST_CASE(
    "TFJobs, pods, nodes and events whose every field has the wrong type answer, never throw") {
  ApiOptions options;
  options.cluster_max_age = std::chrono::milliseconds(0);
  Fixture f(false, options);
  MetricsStore store;
  ScraperOptions scraper_options;
  scraper_options.timeout = std::chrono::milliseconds(50);
  // Every replica scraped (the workers for the job's rate) refuses at once: no name to resolve.
  for (const char* replica :
       {"mnist-chief-0", "mnist-worker-0", "mnist-worker-1", "mnist-evaluator-0"}) {
    scraper_options.overrides[std::string("default/") + replica] = "127.0.0.1:1";
  }
  MetricsScraper scraper(&f.source, {"default"}, &store, scraper_options, Logger(stderr));
  const std::string job_path = "/apis/kubeflow.org/v1/namespaces/default/tfjobs";
  const std::string pods_path = "/api/v1/namespaces/default/pods";
  auto calls_answer = [&] {
    for (const char* target :
         {"/api/v1/tfjobs", "/api/v1/namespaces/default/tfjobs/mnist", "/api/v1/cluster",
          "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs"}) {
      CAPTURE(target);
      CHECK(f.Call("GET", target).status != 500);
    }
    CHECK(f.Call("POST", "/api/v1/namespaces/default/tfjobs/mnist/clone", "{}").status != 500);
    CHECK(f.Call("POST", "/api/v1/namespaces/default/tfjobs?dryRun=All", Form().dump()).status !=
          500);
    CHECK_NOTHROW(scraper.ScrapeOnce());
  };

  int variants = 0;
  for (const json& job : WrongTypeVariants(MnistJob())) {
    CAPTURE(job.dump());
    f.kube.objects[job_path] = {{"items", {job}}};
    f.kube.objects[job_path + "/mnist"] = job;
    calls_answer();
    CHECK_NOTHROW(scraper.Targets(job));
    CHECK_NOTHROW(CloneTfJob(job, "copy"));
    CHECK_NOTHROW(JobView(job, {WorkerPod(0, "Running")}, 0));
    if (auto typed = tfjob::TFJobFromJson(job); typed.ok()) CHECK_NOTHROW(JobGpus(typed->spec));
    ++variants;
  }
  f.kube.objects[job_path] = {{"items", {MnistJob()}}};
  f.kube.objects[job_path + "/mnist"] = MnistJob();
  for (const json& pod : WrongTypeVariants(WorkerPod(0, "Running"))) {
    CAPTURE(pod.dump());
    f.kube.objects[pods_path] = {{"items", {pod, WorkerPod(1, "Pending")}}};
    f.kube.objects[pods_path + "/mnist-worker-0"] = pod;
    f.kube.objects
        ["/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"] =
        f.kube.objects[pods_path];
    calls_answer();
    CHECK_NOTHROW(PodView(pod));
    CHECK_NOTHROW(JobView(MnistJob(), {pod}, 0));
    ++variants;
  }
  for (const json& node : WrongTypeVariants(Node("taas-node-0"))) {
    CAPTURE(node.dump());
    f.kube.objects["/api/v1/nodes"] = {{"items", {node, Node("taas-node-1")}}};
    calls_answer();
    CHECK_NOTHROW(ComputeClusterLimits({{"items", {node}}}));
    ++variants;
  }
  const json event = f.kube.objects["/api/v1/namespaces/default/events"]["items"][0];
  for (const json& e : WrongTypeVariants(event)) {
    CAPTURE(e.dump());
    f.kube.objects["/api/v1/namespaces/default/events"] = {{"items", {e}}};
    f.kube.objects["/api/v1/namespaces/default/events?fieldSelector=reason%3DFailedScheduling"] =
        f.kube.objects["/api/v1/namespaces/default/events"];
    calls_answer();
    CHECK_NOTHROW(EventsView({{"items", {e}}}, "mnist", {"mnist-worker-1"}));
    ++variants;
  }
  // Whole lists of the wrong type.
  for (const json& wrong : WrongValues()) {
    for (const std::string& path : {job_path, pods_path, std::string("/api/v1/nodes")}) {
      const json saved = f.kube.objects[path];
      f.kube.objects[path] = wrong;
      calls_answer();
      f.kube.objects[path] = {{"items", wrong}};
      calls_answer();
      f.kube.objects[path] = saved;
    }
  }
  // A Kubernetes Status of the wrong shape in an error.
  const json status = {{"kind", "Status"},
                       {"code", 422},
                       {"message", "invalid"},
                       {"details", {{"causes", {{{"field", "spec"}, {"message", "bad"}}}}}}};
  for (const json& wrong : WrongTypeVariants(status)) {
    CHECK_NOTHROW(
        SourceErrorResponse(FakeKube::KubeStatus(absl::StatusCode::kInvalidArgument, wrong)));
  }
  MESSAGE(variants << " objects with a field of the wrong type");
  CHECK(variants > 400);
}

// Kueue's and the gang schedulers' objects, as the API server would serve them.
const char kKueueDiscoveryPath[] = "/apis/kueue.x-k8s.io/v1beta1";
const char kClusterQueuesPath[] = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues";
const char kLocalQueuesPath[] = "/apis/kueue.x-k8s.io/v1beta1/namespaces/default/localqueues";
constexpr char kQueuedJobUid[] = "0b5c1d2e-aaaa-4bbb-8ccc-123456789abc";
// Only the job's own Workload, by the label Kueue puts on it.
const std::string kWorkloadsPath = std::string(
                                       "/apis/kueue.x-k8s.io/v1beta1/namespaces/default/workloads"
                                       "?labelSelector=kueue.x-k8s.io/job-uid%3D") +
                                   kQueuedJobUid;
const char kPodGroupPath[] =
    "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/mnist";
const char kVolcanoPodGroupPath[] =
    "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/mnist";

json ClusterQueue() {
  return json::parse(R"({"metadata": {"name": "team-a-cq"},
    "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
      {"name": "default", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]}]},
    "status": {"pendingWorkloads": 1, "reservingWorkloads": 1, "admittedWorkloads": 1,
      "flavorsReservation": [{"name": "default", "resources": [{"name": "nvidia.com/gpu", "total": "8"}]}],
      "flavorsUsage": [{"name": "default", "resources": [{"name": "nvidia.com/gpu", "total": "8"}]}]}})");
}

json LocalQueue() {
  return json::parse(R"({"metadata": {"name": "team-a", "namespace": "default"},
    "spec": {"clusterQueue": "team-a-cq"}, "status": {"pendingWorkloads": 1, "admittedWorkloads": 1}})");
}

json Workload() {
  return json::parse(R"({"metadata": {"name": "tfjob-mnist-1", "namespace": "default",
      "ownerReferences": [{"kind": "TFJob", "name": "mnist", "apiVersion": "kubeflow.org/v1"}]},
    "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
      "message": "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor default, 4 more needed"}]}})");
}

json QueuedJob() {
  json job = MnistJob();
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  job["metadata"]["uid"] = kQueuedJobUid;
  job["spec"]["runPolicy"] = {{"suspend", true}};
  return job;
}

TEST_CASE("the job detail says why the job waits; the cluster page shows Kueue's queues") {
  ApiOptions options;
  options.cluster_max_age = std::chrono::milliseconds(0);
  Fixture f(false, options);
  // Running and Pending replicas, no PodGroup: the scheduler's message, summarised.
  json detail = Body(f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist"));
  CHECK(detail["waiting"]["reason"] == "unschedulable");
  CHECK(detail["waiting"]["message"] == "0/2 nodes are available");

  // A PodGroup of minMember 2 with 1 placed (Volcano's when scheduler-plugins' is absent).
  f.kube.objects[kVolcanoPodGroupPath] = {{"spec", {{"minMember", 2}}},
                                          {"status", {{"phase", "Pending"}}}};
  detail = Body(f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist"));
  CHECK(detail["waiting"]["message"] == "gang incomplete: 1 of minMember 2 pods placed");

  // Queued in Kueue, with the Workload's condition.
  f.kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist"] = QueuedJob();
  f.kube.objects[kWorkloadsPath] = {{"items", {Workload()}}};
  detail = Body(f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist"));
  CHECK(detail["waiting"]["message"] == "queued in LocalQueue team-a (Kueue)");
  CHECK(detail["waiting"]["detail"] ==
        "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu "
        "in flavor default, 4 more needed");
  // Without Kueue's API the Workload is left out quietly.
  f.kube.objects.erase(kWorkloadsPath);
  detail = Body(f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist"));
  CHECK(detail["waiting"]["reason"] == "queued");
  CHECK(detail["waiting"]["detail"] == "");

  // No Kueue: no queues section, no error.
  HttpResponse r = f.Call("GET", "/api/v1/cluster");
  REQUIRE(r.status == 200);
  CHECK(Body(r)["queues"].is_null());
  // Kueue installed (its API in discovery) but its ClusterQueues forbidden to the UI: said so.
  f.kube.objects[kKueueDiscoveryPath] = {{"kind", "APIResourceList"}};
  f.kube.failures[kClusterQueuesPath] = absl::PermissionDeniedError("clusterqueues is forbidden");
  r = f.Call("GET", "/api/v1/cluster");
  REQUIRE(r.status == 200);
  CHECK(Body(r)["queues"]["error"].get<std::string>().find("clusterqueues is forbidden") !=
        std::string::npos);
  f.kube.failures.clear();
  f.kube.objects[kClusterQueuesPath] = {{"items", {ClusterQueue()}}};
  f.kube.objects[kLocalQueuesPath] = {{"items", {LocalQueue()}}};
  f.kube.objects["/apis/kueue.x-k8s.io/v1beta1/namespaces/team-b/localqueues"] = {
      {"items", json::array()}};
  r = f.Call("GET", "/api/v1/cluster");
  REQUIRE(r.status == 200);
  const json queues = Body(r)["queues"];
  REQUIRE(queues["clusterQueues"].size() == 1);
  CHECK(queues["clusterQueues"][0]["gpuQuota"] == 8);
  CHECK(queues["clusterQueues"][0]["gpuInUse"] == 8);
  CHECK(queues["clusterQueues"][0]["pendingWorkloads"] == 1);
  CHECK(queues["clusterQueues"][0]["localQueues"] == json{"default/team-a"});
  CHECK(queues["error"] == "");
  // LocalQueues that cannot be listed are named, the rest still shown.
  f.kube.objects.erase("/apis/kueue.x-k8s.io/v1beta1/namespaces/team-b/localqueues");
  const json partial = Body(f.Call("GET", "/api/v1/cluster"))["queues"];
  CHECK(partial["clusterQueues"].size() == 1);
  CHECK(partial["error"].get<std::string>().find("LocalQueues in team-b") != std::string::npos);
}

TEST_CASE("taints, queues, Workloads and PodGroups of every wrong type answer, never throw") {
  ApiOptions options;
  options.cluster_max_age = std::chrono::milliseconds(0);
  Fixture f(false, options);
  f.kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist"] = QueuedJob();
  f.kube.objects[kKueueDiscoveryPath] = {{"kind", "APIResourceList"}};
  f.kube.objects["/apis/kueue.x-k8s.io/v1beta1/namespaces/team-b/localqueues"] = {
      {"items", json::array()}};
  auto answers = [&] {
    CHECK(f.Call("GET", "/api/v1/cluster").status == 200);
    CHECK(f.Call("GET", "/api/v1/namespaces/default/tfjobs/mnist").status == 200);
  };
  int variants = 0;
  json node = Node("taas-node-0");
  node["spec"] = {{"unschedulable", true},
                  {"taints", {{{"key", "gpu"}, {"value", "a100"}, {"effect", "NoSchedule"}}}}};
  for (const json& wrong : WrongTypeVariants(node)) {
    f.kube.objects["/api/v1/nodes"] = {{"items", {wrong, Node("taas-node-1")}}};
    answers();
    CHECK_NOTHROW(ui_server::schema::ToJson(
        ui_server::ClusterViewOf({NodesOf({{"items", {wrong}}}), {}, std::nullopt})));
    ++variants;
  }
  f.kube.objects[kLocalQueuesPath] = {{"items", {LocalQueue()}}};
  for (const json& wrong : WrongTypeVariants(ClusterQueue())) {
    f.kube.objects[kClusterQueuesPath] = {{"items", {wrong}}};
    answers();
    f.kube.objects[kClusterQueuesPath] = wrong;
    answers();
    ++variants;
  }
  f.kube.objects[kClusterQueuesPath] = {{"items", {ClusterQueue()}}};
  for (const json& wrong : WrongTypeVariants(LocalQueue())) {
    f.kube.objects[kLocalQueuesPath] = {{"items", {wrong}}};
    answers();
    ++variants;
  }
  for (const json& wrong : WrongTypeVariants(Workload())) {
    f.kube.objects[kWorkloadsPath] = {{"items", {wrong}}};
    answers();
    CHECK_NOTHROW(WaitingOf(*tfjob::TFJobFromJson(QueuedJob()), {}, {{"items", {wrong}}}, nullptr));
    ++variants;
  }
  // The job of the wrong type, as far as the TFJob rules read it (the API answers for every
  // variant, read or not: the test of TFJobs of the wrong type above).
  for (const json& wrong : WrongTypeVariants(QueuedJob())) {
    if (auto job = tfjob::TFJobFromJson(wrong); job.ok()) {
      CHECK_NOTHROW(WaitingOf(*job, {}, {{"items", {Workload()}}}, nullptr));
    }
    ++variants;
  }
  f.kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist"] = MnistJob();
  const json pod_group = {
      {"spec", {{"minMember", 2}}},
      {"status",
       {{"phase", "Pending"},
        {"conditions", {{{"type", "Unschedulable"}, {"status", "True"}, {"message", "m"}}}}}}};
  const ReplicaRow pending = PodView(WorkerPod(1, "Pending"));
  const tfjob::TFJob mnist = *tfjob::TFJobFromJson(MnistJob());
  for (const json& wrong : WrongTypeVariants(pod_group)) {
    f.kube.objects[kPodGroupPath] = wrong;
    answers();
    CHECK_NOTHROW(WaitingOf(mnist, {pending}, nullptr, wrong));
    ++variants;
  }
  // (A replica row is typed: a pod of any shape reaches it through PodView, tested above.)
  MESSAGE(variants << " objects with a field of the wrong type");
  CHECK(variants > 500);
}

// Sends `bytes` on a fresh connection (after `pause`, the rest of `later`) and returns all the
// server answers until it closes the connection or `wait` passes.
std::string RawExchange(int port, const std::string& bytes, std::chrono::milliseconds wait,
                        const std::string& later = "",
                        std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  timeval timeout{static_cast<time_t>(wait.count() / 1000),
                  static_cast<suseconds_t>(wait.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (!later.empty()) {
    std::this_thread::sleep_for(pause);
    ::send(fd, later.data(), later.size(), MSG_NOSIGNAL);
  }
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) answer.append(buffer, n);
  ::close(fd);
  return answer;
}

int StatusOf(const std::string& answer) {
  return answer.size() > 12 ? std::atoi(answer.substr(9, 3).c_str()) : 0;
}

TEST_CASE("static files come only from the index of the assets folder") {
  const AssetIndex index =
      AssetIndex::FromFiles({{"/index.html", "<!doctype html>"}, {"/assets/app.js", "1"}});
  REQUIRE(index.Resolve("/assets/app.js") != nullptr);
  CHECK(index.Resolve("/assets/app.js")->content == "1");
  CHECK(index.Resolve("/assets/app%2ejs")->content == "1");  // looked up decoded
  // Plain paths are the app's routes: index.html, whatever file they name elsewhere.
  for (const char* route : {"/", "/cluster", "/new", "/jobs/default/mnist", "/jobs/default/mnist/",
                            "/?x=1", "/cluster#top", "/proc/self/environ", "/etc/hostname"}) {
    CAPTURE(std::string(route));
    REQUIRE(index.Resolve(route) != nullptr);
    CHECK(index.Resolve(route)->html);
  }
  for (const char* hostile :
       {"//etc/hostname", "//etc/passwd", "/../etc/passwd", "/assets/../../etc/passwd",
        "/%2e%2e/etc/passwd", "/%2F%2Fetc/hostname", "/assets%2f..%2f..%2fetc%2fpasswd",
        "/..\\..\\etc\\passwd", "/%00", "/index.html%00.js", "/%c0%ae%c0%ae/etc/passwd",
        "/assets/missing.js", "/etc/hostname.txt", "relative", "", "/%zz", "/a//b", "/jobs/./x"}) {
    CAPTURE(std::string(hostile));
    CHECK(index.Resolve(hostile) == nullptr);
  }
}

TEST_CASE("over HTTP: no file outside the assets, whatever the encoding") {
  Fixture f;
  const auto assets = std::filesystem::temp_directory_path() /
                      ("taas-ui-assets-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(assets);
  std::ofstream(assets / "index.html") << "<!doctype html><title>taas</title>";
  std::filesystem::create_symlink("/etc/hostname", assets / "hostname");
  HttpServer server(f.api.get(), {"127.0.0.1", 0, assets.string()}, Logger(stderr));
  REQUIRE(server.Start().ok());
  for (const char* target : {"//etc/hostname", "//etc/passwd", "/%2e%2e/etc/hostname",
                             "/..%2f..%2fetc/hostname", "/assets/..//etc/hostname"}) {
    CAPTURE(std::string(target));
    const std::string answer =
        RawExchange(server.port(), std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n",
                    std::chrono::milliseconds(2000));
    CHECK(StatusOf(answer) == 404);
  }
  // A symbolic link in the assets folder is not one of the build's files: the app's page instead.
  const std::string linked = RawExchange(server.port(), "GET /hostname HTTP/1.1\r\nHost: x\r\n\r\n",
                                         std::chrono::milliseconds(2000));
  CHECK(StatusOf(linked) == 200);
  CHECK(linked.find("<title>taas</title>") != std::string::npos);
  server.Stop();
  std::filesystem::remove_all(assets);
}

TEST_CASE("over HTTP: deadlines, the connection limit, body limits and followed logs end") {
  Fixture f;
  ServerOptions options;
  options.max_connections = 2;
  options.idle_timeout = std::chrono::milliseconds(400);
  options.header_timeout = std::chrono::milliseconds(300);
  options.body_timeout = std::chrono::milliseconds(300);
  options.max_body_bytes = 4096;
  options.max_follow = std::chrono::milliseconds(1000);
  HttpServer server(f.api.get(), options, Logger(stderr));
  REQUIRE(server.Start().ok());
  const int port = server.port();
  const std::string get_config =
      std::string("GET /api/v1/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") + kToken +
      "\r\n\r\n";

  SUBCASE("a slow request gets 408, an idle connection is closed") {
    const auto started = std::chrono::steady_clock::now();
    CHECK(StatusOf(RawExchange(port, "GET /api/v1/config HTTP/1.1\r\nHost:",
                               std::chrono::milliseconds(3000))) == 408);
    CHECK(StatusOf(RawExchange(port,
                               "POST /api/v1/namespaces/default/tfjobs HTTP/1.1\r\n"
                               "Host: x\r\nContent-Length: 100\r\n\r\n{",
                               std::chrono::milliseconds(3000))) == 408);
    CHECK(RawExchange(port, "", std::chrono::milliseconds(3000)).empty());  // closed when idle
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds(2500));
  }
  SUBCASE("past the connection limit: 503, and served again once the idle ones are closed") {
    std::vector<std::thread> idle;
    for (int i = 0; i < 2; ++i) {
      idle.emplace_back([&] { RawExchange(port, "", std::chrono::milliseconds(1000)); });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::string refused = RawExchange(port, get_config, std::chrono::milliseconds(2000));
    CHECK(StatusOf(refused) == 503);
    CHECK(refused.find("limit of 2 connections") != std::string::npos);
    for (std::thread& t : idle) t.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(StatusOf(RawExchange(port, get_config, std::chrono::milliseconds(2000))) == 200);
  }
  SUBCASE("bodies over the limit get 413, oversized headers 431") {
    CHECK(StatusOf(RawExchange(port,
                               "POST /api/v1/namespaces/default/tfjobs HTTP/1.1\r\nHost: x\r\n"
                               "Content-Length: 1000000\r\n\r\n",
                               std::chrono::milliseconds(2000))) == 413);
    CHECK(StatusOf(RawExchange(
              port, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n",
              std::chrono::milliseconds(2000))) == 431);
  }
  SUBCASE("a followed stream ends after max_follow, and when its client goes") {
    f.kube.stream_until_cancelled = true;
    const std::string follow =
        std::string(
            "GET /api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs"
            "?follow=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
        kToken + "\r\n\r\n";
    const std::string answer = RawExchange(port, follow, std::chrono::milliseconds(4000));
    CHECK(StatusOf(answer) == 200);
    CHECK(answer.find("step=3 loss=1.9") != std::string::npos);
    CHECK(answer.find("ended after the longest follow of 1.000 s") != std::string::npos);
    CHECK(f.kube.streams_ended == 1);

    RawExchange(port, follow, std::chrono::milliseconds(100));  // reads a little, then leaves
    for (int i = 0; i < 100 && f.kube.streams_ended < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(f.kube.streams_ended == 2);  // within a second, well before max_follow
  }
  server.Stop();
}

TEST_CASE("a request quoting bytes that are not UTF-8 gets its error, not an exception") {
  // Found by fuzz_ui_http_request: the error message quotes the namespace, and serialising
  // invalid UTF-8 threw outside the handler's catch (the old server then terminated).
  Fixture f;
  const HttpResponse r = f.Call("GET",
                                "/api/v1/namespaces/d\x97"
                                "fault/tfjobs");
  CHECK(r.status == 400);
  CHECK(Body(r)["error"].get<std::string>().find("is not a namespace name") != std::string::npos);
  CHECK(f.Call("GET", "/api/v1/namespaces/default/tfjobs/%ff").status == 400);
}

TEST_CASE("log answers are bounded in bytes, job lists in rows") {
  ApiOptions options;
  options.max_log_bytes = 4096;
  options.max_list_items = 1;
  Fixture f(false, options);
  const std::string logs = "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs";
  f.kube.log_chunks = {std::string(5000, 'a') + "\n", "step 1\n", "step 2\n"};
  const HttpResponse small = f.Call("GET", logs + "?limitBytes=100");
  CHECK(small.status == 200);
  CHECK(small.body.size() <= 100);
  CHECK(small.body.find("bytes cut] aaa") != std::string::npos);
  CHECK(f.kube.texts_requested.back().find("limitBytes") == std::string::npos);
  const HttpResponse most = f.Call("GET", logs);
  CHECK(most.status == 200);
  CHECK(most.body.size() <= 4096);
  CHECK(most.body.rfind("[taas: ", 0) == 0);
  CHECK(most.body.find("bytes cut] aaa") != std::string::npos);
  CHECK(most.body.find("a\nstep 1\nstep 2\n") == most.body.size() - 16);
  for (const char* bad : {"0", "4097", "-1", "1e3", "99999999999999999999", "", "x"}) {
    CAPTURE(bad);
    const HttpResponse r = f.Call("GET", logs + "?limitBytes=" + bad);
    CHECK(r.status == 400);
    CHECK(Body(r)["error"] == "limitBytes must be a whole number from 1 to 4096");
  }
  CHECK(f.Call("GET", logs + "?tailLines=100001").status == 400);

  f.kube.objects["/apis/kubeflow.org/v1/namespaces/default/tfjobs"]["items"].push_back(MnistJob());
  const json list = Body(f.Call("GET", "/api/v1/tfjobs?namespace=default"));
  CHECK(list["items"].size() == 1);
  CHECK(list["total"] == 2);
  CHECK(list["truncated"] == true);
}

TEST_CASE("the cluster page is computed once per period for every tab") {
  Fixture f;
  for (int i = 0; i < 5; ++i) REQUIRE(f.Call("GET", "/api/v1/cluster").status == 200);
  const auto lists =
      std::count_if(f.kube.gets.begin(), f.kube.gets.end(),
                    [](const std::string& p) { return p.rfind("/api/v1/pods?", 0) == 0; });
  CHECK(lists == 1);
}

}  // namespace
}  // namespace taas::ui_kube
