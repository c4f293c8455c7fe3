// A de-duplicating, rate-limited work queue of object keys ("namespace/name"), with client-go's
// semantics:
//   - a key added many times before a worker takes it is processed once (the `dirty` set);
//   - a key is never handed to two workers at once: added while being processed, it is queued
//     again only when the worker calls Done (the `processing` set);
//   - AddAfter delays a key (the earliest of several delays wins); AddRateLimited delays it by a
//     per-key exponential backoff that Forget resets.
// Thread-safe. Get blocks until a key is ready or the queue is shut down.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace taas::kube {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::chrono::milliseconds base_delay{5};
    std::chrono::milliseconds max_delay{std::chrono::seconds(300)};
  };

  WorkQueue() : WorkQueue(Options{}) {}
  explicit WorkQueue(Options options);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Clock::duration delay);
  // Adds after base_delay * 2^(failures so far), capped at max_delay.
  void AddRateLimited(const std::string& key);
  // Clears the key's failure count (call after a successful reconcile).
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // The next ready key, marked as processing; std::nullopt once shut down.
  std::optional<std::string> Get();
  // Ends processing of `key`; if it was added meanwhile it becomes ready again.
  void Done(const std::string& key);

  // Wakes every Get (which then returns std::nullopt) and drops further Adds.
  void ShutDown();
  bool shutting_down() const;

  // Keys ready to be processed (the queue depth metric), and keys waiting for a delay.
  std::size_t Len() const;
  std::size_t NumWaiting() const;

 private:
  void MoveDueLocked(Clock::time_point now);
  void AddLocked(const std::string& key);

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;                                  // guarded by mu_
  std::unordered_set<std::string> dirty_;                          // guarded by mu_
  std::unordered_set<std::string> processing_;                     // guarded by mu_
  std::unordered_map<std::string, Clock::time_point> waiting_;     // key -> ready time; mu_
  std::multimap<Clock::time_point, std::string> waiting_by_time_;  // guarded by mu_
  std::unordered_map<std::string, int> failures_;                  // guarded by mu_
  bool shutting_down_ = false;                                     // guarded by mu_
};

}  // namespace taas::kube
