#include "taas/ui_server/api.h"

#include <absl/strings/cord.h>
#include <doctest/doctest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>

#include "taas/ui_server/server.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;
constexpr char kToken[] = "s3cret-token";

// An in-memory API server: canned answers by exact path, recorded writes.
class FakeKube : public KubeApi {
 public:
  absl::StatusOr<json> Get(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    gets.push_back(path);
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
  absl::StatusOr<std::string> GetText(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    texts_requested.push_back(path);
    return std::string("line 1\nline 2\n");
  }
  absl::Status StreamText(const std::string& path,
                          const std::function<bool(std::string_view)>& on_chunk,
                          kube::Cancellation*) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      texts_requested.push_back(path);
    }
    for (const char* chunk : {"step=1 loss=2.3\n", "step=2 loss=2.1\n", "step=3 loss=1.9\n"}) {
      if (!on_chunk(chunk)) return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  static absl::Status KubeStatus(absl::StatusCode code, const json& status) {
    absl::Status s(code, status.value("message", "failed"));
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
  absl::Status post_error;
  std::vector<std::string> gets;
  std::vector<std::pair<std::string, json>> posts;
  std::vector<std::string> deletes;
  std::vector<std::string> texts_requested;
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
  Fixture(bool anonymous = false) {
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
    ApiOptions options;
    options.namespaces = {"default", "team-b"};
    options.token = kToken;
    options.allow_anonymous_read = anonymous;
    api = std::make_unique<Api>(options, &kube, &metrics, Logger(stderr), [] {
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
  CHECK(ConstantTimeEquals("abc", "abc"));
  CHECK_FALSE(ConstantTimeEquals("abc", "abd"));
  CHECK_FALSE(ConstantTimeEquals("abc", "abcd"));
  CHECK_FALSE(ConstantTimeEquals("", "a"));
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
  CHECK(r.body == "line 1\nline 2\n");
  CHECK(f.kube.texts_requested.back() ==
        "/api/v1/namespaces/default/pods/mnist-worker-0/log?tailLines=50&limitBytes=8388608"
        "&container=tensorflow");
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

}  // namespace
}  // namespace taas::ui_server
