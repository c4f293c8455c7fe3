#include "taas/kube/leader_election.h"

#include <doctest/doctest.h>

#include "taas/kube/events.h"

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
