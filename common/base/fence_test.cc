#include "taas/base/fence.h"

#include <doctest/doctest.h>

#include <string>

namespace taas {
namespace {

TEST_CASE("an incarnation at least the highest seen proceeds; an older one is fenced") {
  CHECK(CheckIncarnation("worker-1", 3, 3).ok());  // the same pod, its container restarted
  CHECK(CheckIncarnation("worker-1", 3, 4).ok());  // its replacement
  CHECK(CheckIncarnation("worker-1", 0, 0).ok());  // started by hand, unnumbered
  const absl::Status fenced = CheckIncarnation("worker-1", 4, 3);
  CHECK(fenced.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(fenced.message()) ==
        "worker-1 incarnation 3 is fenced: incarnation 4 of worker-1 joined since (its pod or "
        "process was replaced; this one must stop)");
  CHECK(IsFenced(fenced));
  CHECK_FALSE(CheckIncarnation("ps-0", 1, 0).ok());  // unnumbered, once a numbered one was seen
}

TEST_CASE("a fencing refusal is recognised through any prefix, and nothing else is") {
  const absl::Status fenced = CheckIncarnation("chief-0", 2, 1);
  CHECK(IsFenced(absl::FailedPreconditionError("push to ps-0: " + std::string(fenced.message()))));
  CHECK_FALSE(IsFenced(absl::UnavailableError(std::string(fenced.message()))));
  CHECK_FALSE(IsFenced(absl::FailedPreconditionError("the PS holds no variables yet")));
  CHECK_FALSE(IsFenced(absl::OkStatus()));
}

TEST_CASE("a fence keeps the highest incarnation per replica and refuses older ones") {
  IncarnationFence fence;
  CHECK(fence.Highest("worker-1") == 0);
  CHECK(fence.Admit({"worker-1", 2}).ok());
  CHECK(fence.Admit({"worker-1", 2}).ok());
  CHECK(fence.Admit({"worker-0", 1}).ok());  // replicas are fenced apart
  CHECK(fence.Admit({"worker-1", 5}).ok());
  CHECK(fence.Highest("worker-1") == 5);
  const absl::Status old = fence.Admit({"worker-1", 2});
  CHECK(IsFenced(old));
  CHECK(std::string(old.message()).find("worker-1 incarnation 2 is fenced: incarnation 5") == 0);
  CHECK(fence.Highest("worker-1") == 5);  // a refusal changes nothing
  CHECK(fence.Highest("worker-0") == 1);
}

TEST_CASE("a fence refuses names it cannot hold, and holds a bounded number of replicas") {
  IncarnationFence fence;
  CHECK(fence.Admit({"", 1}).code() == absl::StatusCode::kInvalidArgument);
  CHECK(fence.Admit({std::string(kMaxFencedReplicaNameBytes + 1, 'w'), 1}).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(fence.Admit({std::string(kMaxFencedReplicaNameBytes, 'w'), 1}).ok());
  for (std::size_t i = 1; i < kMaxFencedReplicas; ++i)
    REQUIRE(fence.Admit({"worker-" + std::to_string(i), 1}).ok());
  CHECK(fence.Admit({"worker-x", 1}).code() == absl::StatusCode::kResourceExhausted);
  CHECK(fence.Admit({"worker-1", 2}).ok());  // a replica already held still moves on
}

}  // namespace
}  // namespace taas
