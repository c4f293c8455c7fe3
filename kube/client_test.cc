// Client tests without a cluster: status mapping, kubeconfig parsing, and the HTTP/streaming
// path against a tiny loopback server written with plain sockets.
#include "taas/kube/client.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "taas/kube_testing/test_server.h"

using taas::kube::Client;
using taas::kube::ClientConfig;
using taas::kube::KubeStatusOf;
using taas::kube::StatusFromHttp;
using taas::kube::WatchEvent;
using taas::kube::testing::Chunk;
using taas::kube::testing::Response;
using taas::kube::testing::TestServer;

TEST_CASE("HTTP codes map to absl codes and keep the Kubernetes Status") {
  std::string body =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"tfjobs \"x\" not found","reason":"NotFound","code":404})";
  absl::Status s = StatusFromHttp(404, body);
  CHECK(s.code() == absl::StatusCode::kNotFound);
  CHECK(s.message() == "tfjobs \"x\" not found");
  auto raw = KubeStatusOf(s);
  REQUIRE(raw);
  CHECK((*raw)["reason"] == "NotFound");

  CHECK(StatusFromHttp(200, "").ok());
  CHECK(StatusFromHttp(201, "{}").ok());
  CHECK(StatusFromHttp(422, "{}").code() == absl::StatusCode::kInvalidArgument);
  CHECK(StatusFromHttp(400, "").code() == absl::StatusCode::kInvalidArgument);
  CHECK(StatusFromHttp(401, "").code() == absl::StatusCode::kUnauthenticated);
  CHECK(StatusFromHttp(403, "").code() == absl::StatusCode::kPermissionDenied);
  CHECK(StatusFromHttp(409, R"({"kind":"Status","reason":"AlreadyExists","message":"m"})").code() ==
        absl::StatusCode::kAlreadyExists);
  CHECK(StatusFromHttp(409, R"({"kind":"Status","reason":"Conflict","message":"m"})").code() ==
        absl::StatusCode::kAborted);
  CHECK(StatusFromHttp(410, "").code() == absl::StatusCode::kOutOfRange);
  CHECK(StatusFromHttp(429, "").code() == absl::StatusCode::kResourceExhausted);
  CHECK(StatusFromHttp(503, "").code() == absl::StatusCode::kUnavailable);
  CHECK(StatusFromHttp(500, "").code() == absl::StatusCode::kInternal);
  CHECK_FALSE(KubeStatusOf(StatusFromHttp(500, "not json")).has_value());
  CHECK(StatusFromHttp(500, "oops").message() == "HTTP 500: oops");
}

TEST_CASE("422 keeps the field causes for callers") {
  std::string body =
      R"({"kind":"Status","code":422,"reason":"Invalid","message":"TFJob.kubeflow.org \"bad\" is invalid: spec.tfReplicaSpecs.Worker.replicas: Invalid value: -1","details":{"causes":[{"field":"spec.tfReplicaSpecs.Worker.replicas","reason":"FieldValueInvalid"}]}})";
  auto raw = KubeStatusOf(StatusFromHttp(422, body));
  REQUIRE(raw);
  CHECK((*raw)["details"]["causes"][0]["field"] == "spec.tfReplicaSpecs.Worker.replicas");
}

TEST_CASE("QueryEscape") {
  CHECK(taas::kube::QueryEscape("a=b,c in (x y)") == "a%3Db%2Cc%20in%20%28x%20y%29");
  CHECK(taas::kube::QueryEscape("training.kubeflow.org/job-name") ==
        "training.kubeflow.org%2Fjob-name");
}

TEST_CASE("LoadKubeconfig reads the current context, inline data and relative files") {
  auto dir =
      std::filesystem::temp_directory_path() / ("taas-kubeconfig-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ca.crt") << "CA-PEM";
  std::ofstream(dir / "config") << R"(apiVersion: v1
kind: Config
current-context: second
clusters:
- name: c1
  cluster: {server: "https://10.0.0.1:6443"}
- name: c2
  cluster:
    server: https://127.0.0.1:7443
    certificate-authority: ca.crt
contexts:
- name: first
  context: {cluster: c1, user: u1}
- name: second
  context: {cluster: c2, user: u2, namespace: team}
users:
- name: u1
  user: {token: nope}
- name: u2
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
    token: tok
)";
  auto config = taas::kube::LoadKubeconfig((dir / "config").string());
  REQUIRE(config.ok());
  CHECK(config->server == "https://127.0.0.1:7443");
  CHECK(config->ca_pem == "CA-PEM");
  CHECK(config->client_cert_pem == "CERT");
  CHECK(config->client_key_pem == "KEY");
  CHECK(config->bearer_token == "tok");
  CHECK(config->namespace_name == "team");
  CHECK_FALSE(taas::kube::LoadKubeconfig((dir / "missing").string()).ok());
  std::filesystem::remove_all(dir);
}

namespace {

std::unique_ptr<Client> MakeClient(int port) {
  ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  config.bearer_token = "secret";
  config.timeout = std::chrono::milliseconds(5000);
  auto client = Client::Create(config);
  REQUIRE(client.ok());
  return std::move(*client);
}

}  // namespace

TEST_CASE("JSON calls reuse one connection and map errors") {
  TestServer server([](const std::string& head) -> std::vector<std::string> {
    if (head.find("GET /api/v1/namespaces/ns/pods/missing") == 0)
      return {Response(
          404,
          R"({"kind":"Status","message":"pods \"missing\" not found","reason":"NotFound","code":404})")};
    if (head.find("POST ") == 0) return {Response(201, R"({"created":true})")};
    return {Response(200, R"({"kind":"Pod","metadata":{"name":"p"}})")};
  });
  auto client = MakeClient(server.port());
  auto pod = client->Get("/api/v1/namespaces/ns/pods/p");
  REQUIRE(pod.ok());
  CHECK((*pod)["metadata"]["name"] == "p");
  auto missing = client->Get("/api/v1/namespaces/ns/pods/missing");
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(missing.status().message() == "pods \"missing\" not found");
  auto created = client->Post("/api/v1/namespaces/ns/pods", {{"a", 1}});
  REQUIRE(created.ok());
  CHECK((*created)["created"] == true);
  CHECK(server.connections() == 1);
  auto requests = server.requests();
  REQUIRE(requests.size() == 3);
  CHECK(requests[0].find("Authorization: Bearer secret") != std::string::npos);
  CHECK(requests[2].find("{\"a\":1}") != std::string::npos);
  CHECK(client->stats().requests == 3);
  CHECK(client->stats().errors == 1);
}

TEST_CASE("a closed keep-alive connection is replaced transparently") {
  TestServer server([](const std::string&) -> std::vector<std::string> {
    return {Response(200, "{}"), "CLOSE"};
  });
  auto client = MakeClient(server.port());
  CHECK(client->Get("/a").ok());
  CHECK(client->Get("/b").ok());
  CHECK(server.connections() == 2);
}

TEST_CASE("Watch splits events across chunk boundaries, in order") {
  TestServer server([](const std::string&) -> std::vector<std::string> {
    std::string e1 = R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})";
    std::string e2 = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5"}}})";
    std::string all = e1 + "\n" + e2 + "\n";
    return {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        Chunk(all.substr(0, 10)),
        "SLEEP20",
        Chunk(all.substr(10, 50)),
        Chunk(all.substr(60)),
        Chunk(""),
        "CLOSE"};
  });
  auto client = MakeClient(server.port());
  std::vector<WatchEvent> events;
  absl::Status s = client->Watch("/api/v1/pods?watch=1", [&](const WatchEvent& e) {
    events.push_back(e);
    return true;
  });
  CHECK(s.ok());
  REQUIRE(events.size() == 2);
  CHECK(events[0].type == "ADDED");
  CHECK(events[0].object["metadata"]["name"] == "a");
  CHECK(events[1].type == "BOOKMARK");
}

TEST_CASE("a watch answered with 410 is OutOfRange; a broken stream is Unavailable") {
  TestServer server([](const std::string& head) -> std::vector<std::string> {
    if (head.find("GET /gone") == 0)
      return {Response(
          410,
          R"({"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"})")};
    return {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", Chunk("{\"type\":\"ADDED\","),
            "CLOSE"};
  });
  auto client = MakeClient(server.port());
  absl::Status gone = client->Watch("/gone", [](const WatchEvent&) { return true; });
  CHECK(gone.code() == absl::StatusCode::kOutOfRange);
  absl::Status broken = client->Watch("/broken", [](const WatchEvent&) { return true; });
  CHECK(broken.code() == absl::StatusCode::kUnavailable);
}

TEST_CASE("Cancel ends an idle watch promptly") {
  TestServer server([](const std::string&) -> std::vector<std::string> {
    return {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "SLEEP3000", "CLOSE"};
  });
  auto client = MakeClient(server.port());
  taas::Cancellation cancel;
  taas::kube::StreamOptions options;
  options.cancel = &cancel;
  auto start = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.Cancel();
  });
  absl::Status s = client->Watch(
      "/w", [](const WatchEvent&) { return true; }, options);
  canceller.join();
  CHECK(s.ok());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500));
}

TEST_CASE("a call's own timeout bounds the whole exchange; the configured one is the default") {
  TestServer server([](const std::string&) -> std::vector<std::string> {
    return {"SLEEP1500", Response(200, "{}")};
  });
  auto client = MakeClient(server.port());  // 5 s configured
  auto start = std::chrono::steady_clock::now();
  auto slow = client->Get("/slow", taas::kube::CallOptions{std::chrono::milliseconds(200)});
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(slow.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(took < std::chrono::milliseconds(1000));
  CHECK(client->Get("/slow").ok());  // within the configured 5 s
}

TEST_CASE("a response larger than max_response_bytes fails with ResourceExhausted") {
  const std::string big = "[" + std::string(4096, ' ') + "]";
  TestServer server(
      [&](const std::string&) -> std::vector<std::string> { return {Response(200, big)}; });
  ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  config.max_response_bytes = 1024;
  auto client = Client::Create(config);
  REQUIRE(client.ok());
  auto got = (*client)->Get("/big");
  CHECK(got.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(got.status().message()).find("max_response_bytes") != std::string::npos);
}

TEST_CASE("a watch event line longer than max_watch_event_bytes ends the watch") {
  TestServer server([](const std::string&) -> std::vector<std::string> {
    std::vector<std::string> parts = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                                      Chunk(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                                            "\n")};
    for (int i = 0; i < 8; ++i) parts.push_back(Chunk(std::string(1024, 'x')));  // never a newline
    parts.push_back("SLEEP3000");
    parts.push_back("CLOSE");
    return parts;
  });
  ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  config.max_watch_event_bytes = 4096;
  auto client = Client::Create(config);
  REQUIRE(client.ok());
  int events = 0;
  auto start = std::chrono::steady_clock::now();
  absl::Status s = (*client)->Watch("/w", [&](const WatchEvent&) { return ++events, true; });
  CHECK(events == 1);
  CHECK(s.code() == absl::StatusCode::kResourceExhausted);
  CHECK(std::string(s.message()).find("max_watch_event_bytes") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500));
}

TEST_CASE("a watch that stays silent past its idle deadline fails with DeadlineExceeded") {
  TestServer server([](const std::string&) -> std::vector<std::string> {
    return {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "SLEEP3000", "CLOSE"};
  });
  auto client = MakeClient(server.port());
  taas::kube::StreamOptions options;
  options.idle_timeout = std::chrono::milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  absl::Status s = client->Watch(
      "/w", [](const WatchEvent&) { return true; }, options);
  CHECK(s.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000));
}

TEST_CASE("WatchDecoder: events across any split, blank lines, and every kind of bad line") {
  const std::string stream = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"
                             "\n\r\n"
                             R"({"type":"DELETED","object":7})"
                             "\n";
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    taas::kube::WatchDecoder decoder(1024);
    std::vector<WatchEvent> events;
    bool stopped = false;
    auto collect = [&](const WatchEvent& e) { return events.push_back(e), true; };
    CHECK(decoder.Feed(stream.substr(0, split), collect, &stopped).ok());
    CHECK(decoder.Feed(stream.substr(split), collect, &stopped).ok());
    REQUIRE(events.size() == 2);
    CHECK(events[0].type == "ADDED");
    CHECK(events[1].object == 7);
    CHECK(decoder.buffered() == 0);
  }
  for (const char* bad : {"nope\n", "[1,2]\n", "{\"type\":5}\n", "{\"object\":{}}\n", "7\n"}) {
    taas::kube::WatchDecoder decoder(1024);
    bool stopped = false;
    CHECK(decoder
              .Feed(
                  bad, [](const WatchEvent&) { return true; }, &stopped)
              .code() == absl::StatusCode::kInternal);
  }
  taas::kube::WatchDecoder decoder(16);
  bool stopped = false;
  auto none = [](const WatchEvent&) { return true; };
  CHECK(decoder.Feed(std::string(10, ' '), none, &stopped).ok());
  CHECK(decoder.Feed(std::string(10, ' '), none, &stopped).code() ==
        absl::StatusCode::kResourceExhausted);
  CHECK(decoder.buffered() == 0);  // nothing kept past the limit
}
