#include "taas/kube/events.h"

#include <doctest/doctest.h>

#include "taas/kube_testing/test_server.h"

using nlohmann::json;
using taas::kube::AggregateEvents;
using taas::kube::ObjectReference;
using taas::kube::RecordedEvent;
using taas::kube::testing::Response;
using taas::kube::testing::TestServer;

namespace {

ObjectReference Job(const std::string& name) {
  return {"kubeflow.org/v1", "TFJob", "ns", name, name + "-uid", "1"};
}

RecordedEvent Event(const std::string& job, const std::string& reason, const std::string& message,
                    bool warning = false) {
  return {Job(job), warning, reason, message, 1};
}

}  // namespace

TEST_CASE("events about one object with one reason aggregate; counts add up") {
  auto out = AggregateEvents({Event("a", "SuccessfulCreatePod", "Created pod: a-ps-0"),
                              Event("a", "SuccessfulCreatePod", "Created pod: a-worker-0"),
                              Event("b", "SuccessfulCreatePod", "Created pod: b-ps-0"),
                              Event("a", "TFJobCreated", "TFJob ns/a is created."),
                              Event("a", "SuccessfulCreatePod", "Created pod: a-worker-1"),
                              Event("a", "SuccessfulCreatePod", "Created pod: a-ps-0", true)});
  REQUIRE(out.size() == 4);
  CHECK(out[0].ref.name == "a");
  CHECK(out[0].message == "Created pod: a-ps-0, a-worker-0, a-worker-1");
  CHECK(out[0].count == 3);
  CHECK(out[1].message == "Created pod: b-ps-0");
  CHECK(out[1].count == 1);
  CHECK(out[2].reason == "TFJobCreated");
  CHECK(out[3].warning);  // another type: not merged
  CHECK(out[3].count == 1);
}

TEST_CASE("different message shapes join with '; ', equal ones just count, long ones split") {
  auto mixed = AggregateEvents({Event("a", "R", "first thing"), Event("a", "R", "second thing"),
                                Event("a", "R", "second thing")});
  REQUIRE(mixed.size() == 1);
  CHECK(mixed[0].message == "first thing; second thing; second thing");
  CHECK(mixed[0].count == 3);

  auto same = AggregateEvents({Event("a", "R", "x: y"), Event("a", "R", "x: y")});
  REQUIRE(same.size() == 1);
  CHECK(same[0].message == "x: y");
  CHECK(same[0].count == 2);

  std::vector<RecordedEvent> many;
  for (int i = 0; i < 10; ++i)
    many.push_back(Event("a", "R", "Created pod: pod-" + std::to_string(i)));
  auto split = AggregateEvents(many, 40);
  REQUIRE(split.size() > 1);
  int total = 0;
  for (const auto& e : split) {
    CHECK(e.message.size() <= 40);
    total += e.count;
  }
  CHECK(total == 10);
}

TEST_CASE("the recorder posts a burst as one Event with its count, and repeats as PATCHes") {
  TestServer server([](const std::string&) -> std::vector<std::string> {
    return {Response(201, R"({"kind":"Event"})")};
  });
  taas::kube::ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  auto client = taas::kube::Client::Create(config);
  REQUIRE(client.ok());
  std::FILE* sink = std::fopen("/dev/null", "w");
  {
    taas::kube::EventRecorder recorder(client->get(), "tfjob-controller", "host",
                                       taas::Logger(sink), std::chrono::milliseconds(100));
    for (int i = 0; i < 5; ++i)
      recorder.Normal(Job("j"), "SuccessfulCreatePod",
                      "Created pod: j-worker-" + std::to_string(i));
    for (int i = 0; i < 200 && recorder.posted() < 1; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    recorder.Normal(Job("j"), "SuccessfulCreatePod",
                    "Created pod: j-worker-0, j-worker-1, j-worker-2, j-worker-3, j-worker-4");
    CHECK(recorder.recorded() == 6);
  }  // flushes
  std::fclose(sink);
  auto requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].rfind("POST /api/v1/namespaces/ns/events", 0) == 0);
  json posted = json::parse(requests[0].substr(requests[0].rfind('\n') + 1));
  CHECK(posted["count"] == 5);
  CHECK(posted["message"] ==
        "Created pod: j-worker-0, j-worker-1, j-worker-2, j-worker-3, j-worker-4");
  CHECK(requests[1].rfind("PATCH /api/v1/namespaces/ns/events/", 0) == 0);
  CHECK(requests[1].find("\"count\":6") != std::string::npos);
}
