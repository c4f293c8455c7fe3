#include "taas/kube/workqueue.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

using taas::kube::WorkQueue;
using namespace std::chrono_literals;

TEST_CASE("a key added many times is processed once") {
  WorkQueue q;
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/a");
  q.Add("ns/a");
  CHECK(q.Len() == 2);
  CHECK(*q.Get() == "ns/a");
  CHECK(*q.Get() == "ns/b");
  CHECK(q.Len() == 0);
}

TEST_CASE("a key added while processing is handed out again only after Done") {
  WorkQueue q;
  q.Add("ns/a");
  auto key = q.Get();
  REQUIRE(key);
  q.Add("ns/a");
  q.Add("ns/a");
  CHECK(q.Len() == 0);  // not ready while a worker holds it
  q.Add("ns/b");
  CHECK(*q.Get() == "ns/b");
  q.Done("ns/a");
  CHECK(q.Len() == 1);
  CHECK(*q.Get() == "ns/a");
  q.Done("ns/a");
  q.Done("ns/b");
  CHECK(q.Len() == 0);
}

TEST_CASE("Done without a new Add does not requeue") {
  WorkQueue q;
  q.Add("k");
  REQUIRE(q.Get());
  q.Done("k");
  CHECK(q.Len() == 0);
}

TEST_CASE("no key is processed by two workers at once") {
  WorkQueue q;
  std::atomic<int> in_flight{0};
  std::atomic<int> overlap{0};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        if (in_flight.fetch_add(1) != 0) overlap.fetch_add(1);
        std::this_thread::sleep_for(100us);
        in_flight.fetch_sub(1);
        processed.fetch_add(1);
        q.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) q.Add("only-key");
  // Wait until everything added has drained, then stop.
  for (int i = 0; i < 2000 && (q.Len() > 0 || in_flight.load() > 0); ++i)
    std::this_thread::sleep_for(1ms);
  q.ShutDown();
  for (auto& t : workers) t.join();
  CHECK(overlap.load() == 0);
  CHECK(processed.load() >= 1);
  CHECK(processed.load() < 2000);  // de-duplicated
}

TEST_CASE("AddAfter delays a key and the earliest delay wins") {
  WorkQueue q;
  auto start = WorkQueue::Clock::now();
  q.AddAfter("late", 10s);
  q.AddAfter("late", 30ms);
  q.AddAfter("late", 20s);
  CHECK(q.Len() == 0);
  CHECK(q.NumWaiting() == 1);
  auto key = q.Get();
  auto waited = WorkQueue::Clock::now() - start;
  REQUIRE(key);
  CHECK(*key == "late");
  CHECK(waited >= 30ms);
  CHECK(waited < 5s);
  CHECK(q.NumWaiting() == 0);
}

TEST_CASE("a delayed key also added now runs now and once more when its delay fires") {
  WorkQueue q;
  q.AddAfter("k", 20ms);
  q.Add("k");
  REQUIRE(*q.Get() == "k");
  q.Done("k");
  auto key = q.Get();  // the delayed copy fires once
  REQUIRE(key);
  q.Done(*key);
  CHECK(q.Len() == 0);
  CHECK(q.NumWaiting() == 0);
}

TEST_CASE("per-key exponential backoff, reset by Forget") {
  WorkQueue q(WorkQueue::Options{std::chrono::milliseconds(10), std::chrono::milliseconds(40)});
  for (int i = 0; i < 4; ++i) {
    auto start = WorkQueue::Clock::now();
    q.AddRateLimited("k");
    auto key = q.Get();
    REQUIRE(key);
    q.Done(*key);
    auto waited = WorkQueue::Clock::now() - start;
    auto expected = std::min(std::chrono::milliseconds(10 << i), std::chrono::milliseconds(40));
    CHECK(waited >= expected);
  }
  CHECK(q.NumRequeues("k") == 4);
  CHECK(q.NumRequeues("other") == 0);
  q.Forget("k");
  CHECK(q.NumRequeues("k") == 0);
}

TEST_CASE("ShutDown wakes blocked workers") {
  WorkQueue q;
  std::thread t([&] { CHECK_FALSE(q.Get().has_value()); });
  std::this_thread::sleep_for(10ms);
  q.ShutDown();
  t.join();
  q.Add("x");
  CHECK(q.Len() == 0);
}
