#include "task_pool.h"

#include <algorithm>

namespace taas::controller {

TaskPool::TaskPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

absl::Status TaskPool::RunAll(std::vector<Task> tasks) {
  if (tasks.empty()) return absl::OkStatus();
  auto batch = std::make_shared<Batch>();
  batch->results.resize(tasks.size());
  batch->tasks = std::move(tasks);
  std::unique_lock<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < batch->tasks.size(); ++i) queue_.push_back({batch, i});
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return batch->done == batch->tasks.size(); });
  for (auto& result : batch->results) {
    if (!result.ok()) return result;
  }
  return absl::OkStatus();
}

void TaskPool::RunLater(std::vector<Task> tasks) {
  if (tasks.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& task : tasks) later_.push_back(std::move(task));
  work_cv_.notify_all();
}

void TaskPool::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty() || !later_.empty(); });
    if (queue_.empty() && later_.empty()) return;  // stopping and drained
    if (queue_.empty()) {
      Task task = std::move(later_.front());
      later_.pop_front();
      lock.unlock();
      try {
        (void)task();
      } catch (const std::exception&) {  // a task must not take the pool down
      }
      lock.lock();
      continue;
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    absl::Status result;
    try {
      result = item.batch->tasks[item.index]();
    } catch (const std::exception& e) {  // a task must not take the pool down
      result = absl::InternalError(std::string("task threw: ") + e.what());
    }
    lock.lock();
    item.batch->results[item.index] = std::move(result);
    if (++item.batch->done == item.batch->tasks.size()) done_cv_.notify_all();
  }
}

}  // namespace taas::controller
