#include "task_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

using taas::controller::TaskPool;

TEST_CASE("the pool runs every task, at most its size at once, and returns the first error") {
  TaskPool pool(3);
  std::atomic<int> running{0}, peak{0}, ran{0};
  std::vector<TaskPool::Task> tasks;
  for (int i = 0; i < 12; ++i) {
    tasks.push_back([&, i]() -> absl::Status {
      int now = ++running;
      int seen = peak.load();
      while (now > seen && !peak.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      --running;
      ++ran;
      if (i == 4) return absl::InternalError("four");
      if (i == 9) return absl::InternalError("nine");
      return absl::OkStatus();
    });
  }
  absl::Status status = pool.RunAll(std::move(tasks));
  CHECK(ran == 12);
  CHECK(peak <= 3);
  CHECK(status.message() == "four");
  CHECK(pool.RunAll({}).ok());
}

TEST_CASE("callers on several threads share the pool") {
  TaskPool pool(2);
  std::atomic<int> ran{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      std::vector<TaskPool::Task> tasks(5, [&]() -> absl::Status {
        ++ran;
        return absl::OkStatus();
      });
      CHECK(pool.RunAll(std::move(tasks)).ok());
    });
  }
  for (auto& t : callers) t.join();
  CHECK(ran == 20);
}

TEST_CASE("RunLater tasks run after every RunAll task queued before them") {
  std::vector<int> order;
  std::mutex mu;
  auto record = [&](int v) {
    return [&, v]() -> absl::Status {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(v);
      return absl::OkStatus();
    };
  };
  std::atomic<bool> release{false};
  {
    TaskPool pool(1);
    std::thread blocker([&] {
      CHECK(pool.RunAll({[&]() -> absl::Status {
                  while (!release) std::this_thread::yield();
                  return absl::OkStatus();
                }})
                .ok());
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the one thread is busy
    pool.RunLater({record(2), record(3)});
    std::thread urgent([&] { CHECK(pool.RunAll({record(1)}).ok()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    release = true;
    blocker.join();
    urgent.join();
  }  // the destructor drains RunLater's tasks
  CHECK(order == std::vector<int>{1, 2, 3});
}
