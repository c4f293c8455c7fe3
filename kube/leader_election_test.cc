#include "taas/kube/leader_election.h"

#include <doctest/doctest.h>

#include "taas/kube/events.h"
#include "taas/kube_testing/test_server.h"

using namespace std::chrono_literals;
using taas::kube::LeaseTakeable;

TEST_CASE("a lease is takeable when free, ours, or unchanged for a lease duration") {
  auto t0 = std::chrono::steady_clock::now();
  nlohmann::json held = {{"holderIdentity", "other"}, {"leaseDurationSeconds", 15}};
  CHECK(LeaseTakeable(nlohmann::json::object(), "me", t0, t0, 15s));
  CHECK(LeaseTakeable({{"holderIdentity", ""}}, "me", t0, t0, 15s));
  CHECK(LeaseTakeable({{"holderIdentity", "me"}}, "me", t0, t0, 15s));
  CHECK_FALSE(LeaseTakeable(held, "me", t0, t0 + 14s, 15s));
  CHECK(LeaseTakeable(held, "me", t0, t0 + 15s, 15s));
  // The lease's own duration wins (a released lease has 1s).
  CHECK(LeaseTakeable({{"holderIdentity", "other"}, {"leaseDurationSeconds", 1}}, "me", t0, t0 + 1s,
                      15s));
}

TEST_CASE("MakeEvent fills the core/v1 Event fields kubectl describe shows") {
  taas::kube::ObjectReference ref = taas::kube::ObjectReference::Of(
      {{"metadata", {{"name", "mnist"}, {"namespace", "ns"}, {"uid", "u-1"}}}}, "kubeflow.org/v1",
      "TFJob");
  auto e = taas::kube::MakeEvent(ref, true, "TFJobRestarting", "restarting worker-0",
                                 "tfjob-controller", "host", "2026-01-01T00:00:00Z");
  CHECK(e["kind"] == "Event");
  CHECK(e["metadata"]["namespace"] == "ns");
  CHECK(e["metadata"]["name"].get<std::string>().rfind("mnist.", 0) == 0);
  CHECK(e["involvedObject"]["kind"] == "TFJob");
  CHECK(e["involvedObject"]["apiVersion"] == "kubeflow.org/v1");
  CHECK(e["involvedObject"]["uid"] == "u-1");
  CHECK(e["type"] == "Warning");
  CHECK(e["reason"] == "TFJobRestarting");
  CHECK(e["source"]["component"] == "tfjob-controller");
  CHECK(e["count"] == 1);
  auto micro = taas::kube::NowRfc3339Micro();
  CHECK(micro.size() == 27);
  CHECK(micro.back() == 'Z');
}

TEST_CASE("a leader that cannot renew stops at the renew deadline, before the lease can expire") {
  using taas::kube::LeaseRenewal;
  taas::kube::LeaderElectionOptions options;  // 15 s lease, 10 s renew deadline, 2 s retry
  REQUIRE(taas::kube::ValidateLeaderElectionOptions(options).ok());
  const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;  // a fake clock
  LeaseRenewal renewal(options, t0);
  CHECK(renewal.Leading(t0));
  CHECK(renewal.NextAttemptIn(t0) == 2s);
  // Each lease call gets half the renew deadline, never more than the time left.
  CHECK(renewal.CallTimeout(t0) == 5s);
  CHECK(renewal.CallTimeout(t0 + 8s) == 2s);
  CHECK(renewal.CallTimeout(t0 + 9999ms) == 1ms);
  CHECK(renewal.NextAttemptIn(t0 + 9s) == 1s);

  // A renewal that started at t0 + 2s moves the deadline to t0 + 12s.
  renewal.Renewed(t0 + 2s);
  CHECK(renewal.deadline() == t0 + 12s);
  // An older success never moves it back.
  renewal.Renewed(t0 + 1s);
  CHECK(renewal.deadline() == t0 + 12s);

  // No more renewals: the leader stops by t0 + 12s. A standby that read the t0 + 2s record no
  // earlier than it was written takes over at t0 + 2s + 15s at the earliest.
  CHECK(renewal.Leading(t0 + 11999ms));
  CHECK_FALSE(renewal.Leading(t0 + 12s));
  CHECK(renewal.NextAttemptIn(t0 + 13s) == 0ms);
  CHECK(LeaseTakeable({{"holderIdentity", "old"}, {"leaseDurationSeconds", 15}}, "new", t0 + 2s,
                      t0 + 12s, 15s) == false);

  // An explicit call timeout is capped at the renew deadline.
  options.call_timeout = 60s;
  CHECK(LeaseRenewal(options, t0).CallTimeout(t0) == 10s);
}

TEST_CASE("leader election options: the renew deadline sits between the retry period and lease") {
  taas::kube::LeaderElectionOptions options;
  options.renew_deadline = 15s;
  CHECK(taas::kube::ValidateLeaderElectionOptions(options).code() ==
        absl::StatusCode::kInvalidArgument);
  options.renew_deadline = 2s;
  CHECK_FALSE(taas::kube::ValidateLeaderElectionOptions(options).ok());
  options.renew_deadline = 3s;
  CHECK(taas::kube::ValidateLeaderElectionOptions(options).ok());
}

TEST_CASE("a leader behind a slow API server stops within the renew deadline") {
  // The server answers the first read and write at once (the lease is taken), then every call
  // only after 4 s, longer than the 3 s lease: with the client's 30 s timeout per call the
  // leader would have kept leading past the lease (until the first renewal gave up).
  std::atomic<int> calls{0};
  taas::kube::testing::TestServer server([&](const std::string& head) -> std::vector<std::string> {
    const int n = calls.fetch_add(1);
    std::vector<std::string> parts;
    if (n >= 2) parts.push_back("SLEEP4000");
    if (head.rfind("GET ", 0) == 0)
      parts.push_back(taas::kube::testing::Response(404, R"({"kind":"Status","code":404})"));
    else
      parts.push_back(taas::kube::testing::Response(201, "{}"));
    return parts;
  });
  taas::kube::ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  auto client = taas::kube::Client::Create(config);  // 30 s default timeout
  REQUIRE(client.ok());
  taas::kube::LeaderElectionOptions options;
  options.identity = "me";
  options.lease_duration = 3s;
  options.renew_deadline = 2s;
  options.retry_period = 1s;
  taas::kube::LeaderElector elector(client->get(), options,
                                    taas::Logger(stderr, taas::LogLevel::kError));
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(elector.Acquire());
  CHECK(elector.IsLeader());
  CHECK_FALSE(elector.HoldUntilStopped());  // lost
  const auto held = std::chrono::steady_clock::now() - start;
  CHECK_FALSE(elector.IsLeader());
  CHECK(held >= 2s);
  CHECK(held < 2500ms);  // the renew deadline, not the lease duration or the client's timeout
}
