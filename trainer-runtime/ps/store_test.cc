#include "taas/ps/store.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <optional>
#include <thread>

// Counts allocations of at least 1 MB while armed: the sync staging test checks that a push
// allocates no buffer of its gradient's size once the store has a spare one. The replaced new and
// delete pair malloc with free, which GCC cannot see through when it inlines the library's calls.
// A sanitizer's runtime defines new and delete itself (TAAS_SANITIZED, set by the top
// CMakeLists): there nothing is counted and that test is skipped.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<bool> g_count_large_allocations{false};
std::atomic<int> g_large_allocations{0};
#ifdef TAAS_SANITIZED
constexpr bool kAllocationsCounted = false;
#else
constexpr bool kAllocationsCounted = true;
#endif
}  // namespace

#ifndef TAAS_SANITIZED
void* operator new(std::size_t size) {
  if (size >= (1u << 20) && g_count_large_allocations) ++g_large_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace taas::ps {
namespace {

TrainingSpec Sgd(bool sync, int replicas, float lr = 1.0f) {
  TrainingSpec spec;
  spec.sync = sync;
  spec.replicas_to_aggregate = replicas;
  spec.optimizer.name = "sgd";
  spec.optimizer.learning_rate.initial = lr;
  return spec;
}

// Records the result of one push.
struct Outcome {
  std::optional<absl::StatusOr<PushResult>> result;
  std::function<void(absl::StatusOr<PushResult>)> Callback() {
    return [this](absl::StatusOr<PushResult> r) {
      REQUIRE_FALSE(result.has_value());  // called exactly once
      result = std::move(r);
    };
  }
  PushOutcome outcome() const {
    REQUIRE(result.has_value());
    REQUIRE(result->ok());
    return (*result)->outcome;
  }
};

std::vector<float> Read(const ParameterStore& store, const std::string& name) {
  std::vector<float> out;
  auto step = store.Pull({name}, [&](const std::string&, std::span<const float> v) {
    out.assign(v.begin(), v.end());
  });
  REQUIRE(step.ok());
  return out;
}

TEST_CASE("an uninitialised store refuses to serve with FAILED_PRECONDITION") {
  ParameterStore store(7);
  auto pull = store.Pull({"w"}, [](const std::string&, std::span<const float>) {});
  CHECK(pull.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(pull.status().message()).find("waiting for the chief") != std::string::npos);
  Outcome push;
  std::vector<float> g = {1};
  store.Push(0, {{"w", g}}, push.Callback());
  REQUIRE(push.result.has_value());
  CHECK(push.result->status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(store.Snapshot().status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(store.GetStatus().incarnation == 7);
  CHECK_FALSE(store.GetStatus().initialized);
}

TEST_CASE("async: every push is applied at once and advances the step") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(false, 1, 0.5f), {{"w", {1, 2}, {}}}, 10).ok());
  std::vector<float> g = {2, 4};
  Outcome a, b;
  store.Push(3, {{"w", g}}, a.Callback());  // even an old step is applied in async mode
  CHECK(a.outcome() == PushOutcome::kApplied);
  CHECK((*a.result)->step == 11);
  store.Push(11, {}, b.Callback());  // a push with no gradients for this PS still counts
  CHECK((*b.result)->step == 12);
  CHECK(Read(store, "w") == std::vector<float>{0, 0});
}

TEST_CASE("sync: averages replicas_to_aggregate pushes and releases them together") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2), {{"w", {10, 10}, {}}, {"b", {1}, {}}}, 0).ok());
  std::vector<float> g1 = {2, 4}, g2 = {4, 8}, gb = {1};
  Outcome first, second;
  store.Push(0, {{"w", g1}, {"b", gb}}, first.Callback());
  CHECK_FALSE(first.result.has_value());  // waits for the second replica
  CHECK(store.GetStatus().pending == 1);
  CHECK(Read(store, "w") == std::vector<float>{10, 10});
  store.Push(0, {{"w", g2}}, second.Callback());
  CHECK(first.outcome() == PushOutcome::kApplied);
  CHECK(second.outcome() == PushOutcome::kApplied);
  CHECK((*first.result)->step == 1);
  CHECK(Read(store, "w") == std::vector<float>{7, 4});  // 10 - mean(2,4), 10 - mean(4,8)
  CHECK(Read(store, "b") == std::vector<float>{0.5f});  // mean over the step's pushes
}

TEST_CASE("sync: a push reports how long it waited for the other replicas") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2), {{"w", {0}, {}}}, 0).ok());
  std::vector<float> g = {1};
  Outcome early, late;
  store.Push(0, {{"w", g}}, early.Callback(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the straggler computes
  store.Push(0, {{"w", g}}, late.Callback(), 1);
  REQUIRE(early.outcome() == PushOutcome::kApplied);
  CHECK((*early.result)->wait_secs >= 0.025);
  CHECK((*late.result)->wait_secs < (*early.result)->wait_secs);
}

TEST_CASE("sync: gradients computed at an older step are dropped") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 1), {{"w", {0}, {}}}, 5).ok());
  std::vector<float> g = {1};
  Outcome stale, fresh;
  store.Push(4, {{"w", g}}, stale.Callback());
  CHECK(stale.outcome() == PushOutcome::kStale);
  CHECK((*stale.result)->step == 5);
  CHECK(Read(store, "w") == std::vector<float>{0});
  store.Push(5, {{"w", g}}, fresh.Callback());
  CHECK(fresh.outcome() == PushOutcome::kApplied);
  CHECK(Read(store, "w") == std::vector<float>{-1});
}

TEST_CASE("sync with backup workers: 3 workers, 2 aggregate, the straggler is dropped") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2), {{"w", {0}, {}}}, 0).ok());
  std::vector<float> fast1 = {1}, fast2 = {3}, slow = {100};
  Outcome a, b, c;
  store.Push(0, {{"w", fast1}}, a.Callback());
  store.Push(0, {{"w", fast2}}, b.Callback());
  CHECK(a.outcome() == PushOutcome::kApplied);
  CHECK(b.outcome() == PushOutcome::kApplied);
  store.Push(0, {{"w", slow}}, c.Callback());  // arrives after step 0 completed
  CHECK(c.outcome() == PushOutcome::kStale);
  CHECK(Read(store, "w") == std::vector<float>{-2});
  CHECK(store.GetStatus().step == 1);
}

TEST_CASE("sync: a worker's retried push for the same step does not count twice") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2), {{"w", {0}, {}}}, 0).ok());
  std::vector<float> g = {1};
  Outcome first, retry, other;
  store.Push(0, {{"w", g}}, first.Callback(), /*worker=*/0);
  store.Push(0, {{"w", g}}, retry.Callback(), /*worker=*/0);
  CHECK(retry.outcome() == PushOutcome::kStale);
  CHECK_FALSE(first.result.has_value());
  CHECK(store.GetStatus().step == 0);
  store.Push(0, {{"w", g}}, other.Callback(), /*worker=*/1);
  CHECK(first.outcome() == PushOutcome::kApplied);
  CHECK(store.GetStatus().step == 1);
}

TEST_CASE("a shard nobody pushes (state that is not trained) is never changed") {
  // The runtime places a model's state as shards of their own and never names them in a push:
  // sync and async steps advance without them, and a snapshot returns them as placed.
  for (const bool sync : {true, false}) {
    CAPTURE(sync);
    ParameterStore store(1);
    TrainingSpec spec = Sgd(sync, 2);
    spec.optimizer.name = "momentum";
    REQUIRE(store.Initialize(spec, {{"w", {0}, {}}, {"mean", {7, 8}, {}}}, 0).ok());
    std::vector<float> g = {1};
    for (int step = 0; step < 2; ++step) {
      Outcome a, b;
      const std::int64_t tag = store.GetStatus().step;
      store.Push(tag, {{"w", g}}, a.Callback(), /*worker=*/0);
      store.Push(tag, {{"w", g}}, b.Callback(), /*worker=*/1);
      CHECK(a.outcome() == PushOutcome::kApplied);
      CHECK(b.outcome() == PushOutcome::kApplied);
    }
    CHECK(store.GetStatus().step == (sync ? 2 : 4));
    CHECK(Read(store, "w") != std::vector<float>{0});
    CHECK(Read(store, "mean") == std::vector<float>{7, 8});
    auto snap = store.Snapshot();
    REQUIRE(snap.ok());
    REQUIRE(snap->second.size() == 2);
    CHECK(snap->second[0].name == "mean");
    CHECK(snap->second[0].values == std::vector<float>{7, 8});
    // Its optimizer slots were never made: a frozen trunk costs the PS its values only.
    CHECK(snap->second[0].slots.empty());
    CHECK(snap->second[1].slots.size() == 1);
  }
}

TEST_CASE("re-initialising (chief restore) releases waiting pushes and resets the step") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2), {{"w", {0}, {}}}, 8).ok());
  std::vector<float> g = {1};
  Outcome waiting, after;
  store.Push(8, {{"w", g}}, waiting.Callback());
  REQUIRE(store.Initialize(Sgd(true, 2), {{"w", {5}, {}}}, 4).ok());
  CHECK(waiting.outcome() == PushOutcome::kReset);
  CHECK(store.GetStatus().step == 4);
  CHECK(Read(store, "w") == std::vector<float>{5});
  store.Push(8, {{"w", g}}, after.Callback());  // computed before the restore: dropped
  CHECK(after.outcome() == PushOutcome::kStale);
}

TEST_CASE("done releases waiting pushes; snapshots carry slots") {
  ParameterStore store(1);
  TrainingSpec spec = Sgd(true, 2);
  spec.optimizer.name = "momentum";
  REQUIRE(store.Initialize(spec, {{"w", {1, 1}, {{0.5f, 0.5f}}}}, 2).ok());
  auto snap = store.Snapshot();
  REQUIRE(snap.ok());
  CHECK(snap->first == 2);
  REQUIRE(snap->second.size() == 1);
  CHECK(snap->second[0].slots.size() == 1);
  CHECK(snap->second[0].slots[0] == std::vector<float>{0.5f, 0.5f});
  std::vector<float> g = {1, 1};
  Outcome waiting, later;
  store.Push(2, {{"w", g}}, waiting.Callback());
  store.MarkDone();
  CHECK(waiting.outcome() == PushOutcome::kDone);
  store.Push(2, {{"w", g}}, later.Callback());
  CHECK(later.outcome() == PushOutcome::kDone);
  CHECK(Read(store, "w") == std::vector<float>{1, 1});  // still served after done
}

TEST_CASE("no push is applied once the step reaches max_steps") {
  ParameterStore store(1);
  TrainingSpec spec = Sgd(false, 1);
  spec.max_steps = 2;
  REQUIRE(store.Initialize(spec, {{"w", {0}, {}}}, 1).ok());
  std::vector<float> g = {1};
  Outcome last, over;
  store.Push(1, {{"w", g}}, last.Callback());
  CHECK(last.outcome() == PushOutcome::kApplied);
  store.Push(1, {{"w", g}}, over.Callback());  // a straggling async worker
  CHECK(over.outcome() == PushOutcome::kDone);
  CHECK(store.GetStatus().step == 2);
  CHECK(Read(store, "w") == std::vector<float>{-1});
}

TEST_CASE("pushes that do not match the variables are errors") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(false, 1), {{"w", {0, 0}, {}}}, 0).ok());
  std::vector<float> g = {1};
  Outcome wrong_size, unknown;
  store.Push(0, {{"w", g}}, wrong_size.Callback());
  CHECK(wrong_size.result->status().code() == absl::StatusCode::kInvalidArgument);
  store.Push(0, {{"v", g}}, unknown.Callback());
  CHECK(unknown.result->status().code() == absl::StatusCode::kNotFound);
  CHECK(store.GetStatus().step == 0);
}

// Feeds the gradients of `shards` (concatenated as float32 bytes) to a streamed push in pieces of
// `piece` bytes, then finishes it.
void StreamPush(ParameterStore& store, std::int64_t step,
                const std::vector<std::pair<std::string, std::vector<float>>>& shards,
                std::size_t piece, Outcome& outcome, int worker = -1) {
  std::vector<ParameterStore::GradientSize> sizes;
  std::string bytes;
  for (const auto& [name, g] : shards) {
    sizes.push_back({name, static_cast<std::int64_t>(g.size())});
    bytes.append(reinterpret_cast<const char*>(g.data()), g.size() * sizeof(float));
  }
  auto stream = store.BeginPush(step, sizes, worker);
  REQUIRE(stream.ok());
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    REQUIRE((*stream)->Add(bytes.data() + at, std::min(piece, bytes.size() - at)).ok());
  }
  (*stream)->Finish(outcome.Callback());
}

TEST_CASE("streamed push: pieces cut anywhere (inside floats, across shards) apply as one push") {
  for (std::size_t piece : {1u, 3u, 4u, 7u, 4096u}) {
    CAPTURE(piece);
    ParameterStore store(1);
    REQUIRE(
        store.Initialize(Sgd(false, 1), {{"a", {1, 2, 3}, {}}, {"e", {}, {}}, {"b", {5}, {}}}, 4)
            .ok());
    Outcome out;
    StreamPush(store, 4, {{"a", {1, 1, 1}}, {"e", {}}, {"b", {0.5f}}}, piece, out);
    CHECK(out.outcome() == PushOutcome::kApplied);
    CHECK((*out.result)->step == 5);  // one step for the whole push
    CHECK(Read(store, "a") == std::vector<float>{0, 1, 2});
    CHECK(Read(store, "b") == std::vector<float>{4.5f});
  }
}

TEST_CASE("streamed push in sync mode aggregates exactly like Push") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2), {{"w", {10, 10}, {}}}, 0).ok());
  Outcome first, retry, second;
  StreamPush(store, 0, {{"w", {2, 4}}}, 3, first, /*worker=*/0);
  CHECK_FALSE(first.result.has_value());
  StreamPush(store, 0, {{"w", {2, 4}}}, 5, retry, /*worker=*/0);
  CHECK(retry.outcome() == PushOutcome::kStale);
  StreamPush(store, 0, {{"w", {4, 8}}}, 5, second, /*worker=*/1);
  CHECK(first.outcome() == PushOutcome::kApplied);
  CHECK(second.outcome() == PushOutcome::kApplied);
  CHECK(Read(store, "w") == std::vector<float>{7, 4});
}

TEST_CASE("sync: streamed pushes of several shards, cut anywhere, stage each shard in place") {
  // The second step's pushes reuse the first step's staging buffers (larger than they need when
  // a push carries fewer shards): every gradient must still land at its own shard.
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2), {{"a", {0, 0, 0}, {}}, {"b", {0}, {}}}, 0).ok());
  Outcome w0, w1;
  StreamPush(store, 0, {{"a", {2, 4, 6}}, {"b", {8}}}, 5, w0, /*worker=*/0);
  StreamPush(store, 0, {{"b", {2}}, {"a", {0, 2, 4}}}, 3, w1, /*worker=*/1);
  CHECK(w0.outcome() == PushOutcome::kApplied);
  CHECK(Read(store, "a") == std::vector<float>{-1, -3, -5});
  CHECK(Read(store, "b") == std::vector<float>{-5});
  Outcome x0, x1;
  StreamPush(store, 1, {{"b", {4}}}, 1, x0, /*worker=*/0);
  StreamPush(store, 1, {{"b", {6}}, {"a", {2, 2, 2}}}, 7, x1, /*worker=*/1);
  CHECK(x1.outcome() == PushOutcome::kApplied);
  CHECK(Read(store, "a") == std::vector<float>{-2, -4, -6});
  CHECK(Read(store, "b") == std::vector<float>{-10});
}

TEST_CASE("sync: a streamed push reuses a spare staging buffer instead of allocating one" *
          doctest::skip(!kAllocationsCounted)) {
  constexpr std::int64_t kFloats = 1 << 19;  // 2 MB of gradient
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(true, 2, 0.0f), {{"w", std::vector<float>(kFloats), {}}}, 0).ok());
  const std::string bytes(static_cast<std::size_t>(kFloats) * sizeof(float), '\0');
  auto step = [&](std::int64_t at) {
    for (int worker = 0; worker < 2; ++worker) {
      auto stream = store.BeginPush(at, {{"w", kFloats}}, worker);
      REQUIRE(stream.ok());
      REQUIRE((*stream)->Add(bytes.data(), bytes.size()).ok());
      (*stream)->Finish([](absl::StatusOr<PushResult>) {});
    }
  };
  step(0);  // The first pushes allocate the buffers (and the accumulator).
  g_large_allocations = 0;
  g_count_large_allocations = true;
  step(1);
  step(2);
  g_count_large_allocations = false;
  CHECK(g_large_allocations == 0);
  CHECK(store.GetStatus().step == 3);
}

TEST_CASE("streamed push: wrong sizes, unknown shards, short or long bodies are errors") {
  ParameterStore uninitialised(3);
  auto refused = uninitialised.BeginPush(0, {{"w", 1}});
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);

  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(false, 1), {{"w", {0, 0}, {}}}, 0).ok());
  CHECK(store.BeginPush(0, {{"w", 3}}).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(store.BeginPush(0, {{"v", 2}}).status().code() == absl::StatusCode::kNotFound);

  const float g[3] = {1, 1, 1};
  auto long_body = store.BeginPush(0, {{"w", 2}});
  REQUIRE(long_body.ok());
  CHECK((*long_body)->Add(reinterpret_cast<const char*>(g), sizeof(g)).code() ==
        absl::StatusCode::kInvalidArgument);

  auto short_body = store.BeginPush(0, {{"w", 2}});
  REQUIRE(short_body.ok());
  REQUIRE((*short_body)->Add(reinterpret_cast<const char*>(g), 6).ok());
  Outcome cut;
  (*short_body)->Finish(cut.Callback());
  CHECK(cut.result->status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(store.GetStatus().step == 0);
}

TEST_CASE("streamed push: a restore in the middle answers kReset; max steps answers kDone") {
  ParameterStore store(1);
  TrainingSpec spec = Sgd(false, 1);
  spec.max_steps = 1;
  REQUIRE(store.Initialize(spec, {{"w", {0, 0}, {}}}, 0).ok());
  const float g[2] = {1, 1};
  auto stream = store.BeginPush(0, {{"w", 2}});
  REQUIRE(stream.ok());
  REQUIRE(store.Initialize(spec, {{"w", {5, 5}, {}}}, 0).ok());
  REQUIRE((*stream)->Add(reinterpret_cast<const char*>(g), sizeof(g)).ok());
  Outcome reset;
  (*stream)->Finish(reset.Callback());
  CHECK(reset.outcome() == PushOutcome::kReset);
  CHECK(Read(store, "w") == std::vector<float>{5, 5});  // nothing applied to the restored values

  Outcome last, over;
  StreamPush(store, 0, {{"w", {1, 1}}}, 4, last);
  CHECK(last.outcome() == PushOutcome::kApplied);
  StreamPush(store, 1, {{"w", {1, 1}}}, 4, over);
  CHECK(over.outcome() == PushOutcome::kDone);
  CHECK(Read(store, "w") == std::vector<float>{4, 4});
}

TEST_CASE("PullShared hands out buffers that later updates never change (copy-on-write)") {
  ParameterStore store(1);
  REQUIRE(store.Initialize(Sgd(false, 1), {{"w", {1, 2}, {}}}, 0).ok());
  std::vector<std::shared_ptr<const std::vector<float>>> held;
  auto step = store.PullShared({"w"}, &held);
  REQUIRE(step.ok());
  CHECK(*step == 0);
  REQUIRE(held.size() == 1);
  std::vector<float> g = {1, 1};
  Outcome plain, streamed;
  store.Push(0, {{"w", g}}, plain.Callback());
  StreamPush(store, 1, {{"w", {1, 1}}}, 4, streamed);
  CHECK(*held[0] == std::vector<float>{1, 2});
  CHECK(Read(store, "w") == std::vector<float>{-1, 0});
  CHECK(store.PullShared({"x"}, &held).status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace taas::ps
