#include "taas/kube/workqueue.h"

#include <algorithm>

namespace taas::kube {

WorkQueue::WorkQueue(Options options) : options_(options) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key) != 0) return;
  dirty_.insert(key);
  if (processing_.count(key) != 0) return;  // queued again by Done
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, Clock::duration delay) {
  if (delay <= Clock::duration::zero()) return Add(key);
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  Clock::time_point when = Clock::now() + delay;
  auto it = waiting_.find(key);
  if (it != waiting_.end()) {
    if (it->second <= when) return;  // an earlier wake-up is already planned
    auto range = waiting_by_time_.equal_range(it->second);
    for (auto w = range.first; w != range.second; ++w) {
      if (w->second == key) {
        waiting_by_time_.erase(w);
        break;
      }
    }
  }
  waiting_[key] = when;
  waiting_by_time_.emplace(when, key);
  cv_.notify_all();  // a sleeping Get may need to wake earlier
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::chrono::milliseconds delay;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int failures = failures_[key]++;
    double factor = 1.0;
    for (int i = 0; i < failures && factor * options_.base_delay.count() <
                                        static_cast<double>(options_.max_delay.count());
         ++i) {
      factor *= 2;
    }
    auto ms = static_cast<std::int64_t>(factor * static_cast<double>(options_.base_delay.count()));
    delay = std::min(std::chrono::milliseconds(ms), options_.max_delay);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::MoveDueLocked(Clock::time_point now) {
  while (!waiting_by_time_.empty() && waiting_by_time_.begin()->first <= now) {
    std::string key = waiting_by_time_.begin()->second;
    waiting_by_time_.erase(waiting_by_time_.begin());
    waiting_.erase(key);
    AddLocked(key);
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (shutting_down_) return std::nullopt;
    MoveDueLocked(Clock::now());
    if (!queue_.empty()) break;
    if (waiting_by_time_.empty()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, waiting_by_time_.begin()->first);
    }
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0 && !shutting_down_) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard<std::mutex> lock(mu_);
  return shutting_down_;
}

std::size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

std::size_t WorkQueue::NumWaiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

}  // namespace taas::kube
