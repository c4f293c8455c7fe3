// A fixed set of threads that run the API calls of every reconcile (creates and deletes), so the
// operator's requests in flight are bounded by one number however many workers reconcile at
// once, and no reconcile starts threads of its own. Private to the controller.
#pragma once

#include <absl/status/status.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace taas::controller {

class TaskPool {
 public:
  using Task = std::function<absl::Status()>;

  explicit TaskPool(int threads);  // at least one thread
  ~TaskPool();                     // finishes queued tasks (RunLater's too), then joins
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Runs every task (first in, first out with other callers' tasks) and blocks until all have
  // finished. Returns the first error by task order, or OK. Thread-safe.
  absl::Status RunAll(std::vector<Task> tasks);

  // Queues tasks behind every RunAll task (queued now or later) and returns at once: work that
  // must not hold up anyone (a task reports its own errors; its returned status is dropped).
  void RunLater(std::vector<Task> tasks);

 private:
  struct Batch {
    std::vector<Task> tasks;
    std::vector<absl::Status> results;
    std::size_t done = 0;  // guarded by TaskPool::mu_
  };
  struct Item {
    std::shared_ptr<Batch> batch;
    std::size_t index;
  };
  void Loop();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Item> queue_;  // guarded by mu_
  std::deque<Task> later_;  // guarded by mu_; run only when queue_ is empty
  bool stopping_ = false;   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace taas::controller
