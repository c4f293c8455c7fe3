#include "taas/collective/in_process.h"

#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <random>
#include <thread>

namespace taas::collective {
namespace {

std::unique_ptr<InProcessGroup> MakeGroup(int members, std::unique_ptr<Collective> cross = nullptr,
                                          double timeout_secs = 30) {
  InProcessOptions options;
  options.members = members;
  options.cross = std::move(cross);
  options.timeout_secs = timeout_secs;
  auto group = InProcessGroup::Create(std::move(options));
  REQUIRE(group.ok());
  return std::move(*group);
}

// Runs `body(member)` on one thread per member and returns each member's status.
std::vector<absl::Status> OnEveryMember(InProcessGroup& group,
                                        const std::function<absl::Status(int)>& body) {
  std::vector<absl::Status> statuses(static_cast<std::size_t>(group.members()));
  std::vector<std::thread> threads;
  for (int m = 0; m < group.members(); ++m) {
    threads.emplace_back([&, m] { statuses[static_cast<std::size_t>(m)] = body(m); });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

// Stands for the other workers: adds `others` copies of what it is given (as if every other
// worker held the same values), so a test sees the cross step happen.
class SameOnEveryWorker final : public Collective {
 public:
  explicit SameOnEveryWorker(int workers) : workers_(workers) {}
  int rank() const override { return 1; }
  int size() const override { return workers_; }
  std::string Describe() const override { return "fake ring"; }
  Handle AllReduce(std::span<float> data, ReduceOp op) override {
    for (float& x : data) x = op == ReduceOp::kSum ? x * static_cast<float>(workers_) : x;
    return Handle();
  }
  Handle Broadcast(std::span<std::byte> data, int root) override {
    if (root != rank()) std::memset(data.data(), 0x5a, data.size());
    return Handle();
  }

 private:
  int workers_;
};

TEST_CASE("members all-reduce in process: every member gets the same sum and mean") {
  for (int members : {1, 2, 3, 4}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
      auto group = MakeGroup(members);
      std::vector<std::vector<float>> sums(static_cast<std::size_t>(members)),
          means(static_cast<std::size_t>(members));
      auto statuses = OnEveryMember(*group, [&](int m) {
        auto& sum = sums[static_cast<std::size_t>(m)];
        auto& mean = means[static_cast<std::size_t>(m)];
        for (std::size_t i = 0; i < n; ++i) sum.push_back(static_cast<float>(i + 10 * m));
        mean = sum;
        TAAS_RETURN_IF_ERROR(group->member(m).AllReduce(sum, ReduceOp::kSum).Wait());
        return group->member(m).AllReduce(mean, ReduceOp::kMean).Wait();
      });
      for (const auto& s : statuses) REQUIRE(s.ok());
      for (int m = 0; m < members; ++m) {
        CHECK(group->member(m).rank() == m);
        CHECK(group->member(m).size() == members);
        for (std::size_t i = 0; i < n; ++i) {
          const float expected = static_cast<float>(members * static_cast<int>(i)) +
                                 10.0f * static_cast<float>(members * (members - 1) / 2);
          CHECK(sums[static_cast<std::size_t>(m)][i] == expected);
          CHECK(means[static_cast<std::size_t>(m)][i] == expected / static_cast<float>(members));
        }
      }
    }
  }
}

TEST_CASE("random floats reduce to the same bits on every member, run after run") {
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    auto group = MakeGroup(3);
    std::vector<std::vector<float>> data(3);
    std::mt19937 random(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (auto& d : data) {
      for (int i = 0; i < 4099; ++i) d.push_back(uniform(random));
    }
    auto statuses = OnEveryMember(*group, [&](int m) {
      return group->member(m).AllReduce(data[static_cast<std::size_t>(m)], ReduceOp::kMean).Wait();
    });
    for (const auto& s : statuses) REQUIRE(s.ok());
    CHECK(std::memcmp(data[0].data(), data[1].data(), data[0].size() * sizeof(float)) == 0);
    CHECK(std::memcmp(data[0].data(), data[2].data(), data[0].size() * sizeof(float)) == 0);
    if (run == 0) first = data[0];
    CHECK(std::memcmp(first.data(), data[0].data(), first.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("with a collective across workers, member 0 joins it and the mean counts every replica") {
  auto group = MakeGroup(2, std::make_unique<SameOnEveryWorker>(3));
  CHECK(group->member(1).rank() == 3);  // worker 1, member 1
  CHECK(group->member(0).size() == 6);
  std::vector<std::vector<float>> data = {{1, 2}, {3, 4}};
  auto statuses = OnEveryMember(*group, [&](int m) {
    return group->member(m).AllReduce(data[static_cast<std::size_t>(m)], ReduceOp::kMean).Wait();
  });
  for (const auto& s : statuses) REQUIRE(s.ok());
  // Each worker's sum {4, 6} times 3 workers, over 6 replicas.
  for (const auto& d : data) CHECK(d == std::vector<float>{2, 3});
}

TEST_CASE("broadcast copies the root's bytes, from this worker or across workers") {
  auto group = MakeGroup(3, std::make_unique<SameOnEveryWorker>(2));
  std::vector<std::vector<std::byte>> data(3, std::vector<std::byte>(5, std::byte{0}));
  data[2].assign(5, std::byte{7});
  // Rank 5 is worker 1's member 2: ours.
  auto statuses = OnEveryMember(*group, [&](int m) {
    return group->member(m).Broadcast(data[static_cast<std::size_t>(m)], 5).Wait();
  });
  for (const auto& s : statuses) REQUIRE(s.ok());
  for (const auto& d : data) CHECK(d == std::vector<std::byte>(5, std::byte{7}));
  // Rank 0 is worker 0's: the bytes come from the cross collective.
  statuses = OnEveryMember(*group, [&](int m) {
    return group->member(m).Broadcast(data[static_cast<std::size_t>(m)], 0).Wait();
  });
  for (const auto& s : statuses) REQUIRE(s.ok());
  for (const auto& d : data) CHECK(d == std::vector<std::byte>(5, std::byte{0x5a}));
  CHECK(group->member(0).Broadcast(data[0], 6).Wait().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a member that never arrives fails the others after the timeout, naming the wait") {
  auto group = MakeGroup(2, nullptr, 0.2);
  std::vector<float> data(3, 1.0f);
  absl::Status status = group->member(0).AllReduce(data, ReduceOp::kSum).Wait();
  CHECK(status.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(std::string(status.message()).find("did not all arrive") != std::string::npos);
}

TEST_CASE("Abort releases waiting members at once with its status") {
  auto group = MakeGroup(2);
  std::vector<float> data(3, 1.0f);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    group->Abort(absl::InternalError("replica 1: train() failed"));
  });
  absl::Status status = group->member(0).AllReduce(data, ReduceOp::kSum).Wait();
  aborter.join();
  CHECK(status.code() == absl::StatusCode::kInternal);
  CHECK(group->member(1).Barrier().code() == absl::StatusCode::kInternal);
}

TEST_CASE("members that disagree about a buffer's length fail instead of mixing bytes") {
  auto group = MakeGroup(2);
  std::vector<std::vector<float>> data = {std::vector<float>(3), std::vector<float>(4)};
  auto statuses = OnEveryMember(*group, [&](int m) {
    return group->member(m).AllReduce(data[static_cast<std::size_t>(m)], ReduceOp::kSum).Wait();
  });
  for (const auto& s : statuses) CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  InProcessOptions none;
  none.members = 0;
  CHECK(InProcessGroup::Create(std::move(none)).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taas::collective
