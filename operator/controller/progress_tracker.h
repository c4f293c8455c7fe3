// Reads every running job's progress off the reconcile workers. Private to the controller.
//
// `ProgressOptions::parallelism` threads each take the job whose read is due soonest, read its
// chief's and its evaluator's page (one bounded GET each: `timeout`, kMaxProgressPageBytes),
// and keep the job's newest progress (ProgressEstimator). When that progress is worth a write
// (ProgressWriteDue) they call `due(key)`: the controller enqueues the job, and its reconcile
// writes the status through the same path as every status write (StatusBody, 409 retries). So a
// slow or hostile chief holds one scrape thread for at most `timeout`, never a reconcile, and
// the threads bound the scrapes in flight however many jobs run.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/controller/progress.h"

namespace taas::controller {

class ProgressTracker {
 public:
  using Clock = std::chrono::steady_clock;
  // GET http://<address>/metrics, bounded; the tests fake it.
  using Fetch = std::function<absl::StatusOr<std::string>(const std::string& address)>;

  // `due` is called from the scrape threads, without the tracker's lock held.
  ProgressTracker(ProgressOptions options, Fetch fetch, std::function<void(const std::string&)> due,
                  Logger logger);
  ~ProgressTracker();  // Stop()
  ProgressTracker(const ProgressTracker&) = delete;
  ProgressTracker& operator=(const ProgressTracker&) = delete;

  void Start();
  // Ends the threads once their scrape in flight returns (each within its timeout).
  void Stop();

  // A running job ("namespace/name", its UID), where its progress is read and the spec's max
  // steps. Cheap when nothing changed (every reconcile of a running job calls it). A job seen for
  // the first time (or again with another UID: a new job of the same name) is first read after
  // between one and one and a half `interval` (spread by its key): its chief has just started
  // (there is little to show yet), the cluster is often still starting the jobs started with it
  // (their pods and services come first), and jobs started together are not read together.
  void Track(const std::string& key, const std::string& uid, const ScrapeTargets& targets,
             std::optional<std::int64_t> spec_max_steps);
  // No more reads (the job finished, was suspended or deleted); a read in flight is dropped.
  void Untrack(const std::string& key);

  struct Snapshot {
    std::optional<tfjob::JobProgress> latest;  // nullopt: no read has answered yet
    std::optional<Clock::time_point> last_write;
  };
  Snapshot Get(const std::string& key) const;
  // The status write that carried `progress` succeeded at `at`.
  void Written(const std::string& key, const tfjob::JobProgress& progress, Clock::time_point at);

  std::size_t Tracked() const;
  std::uint64_t Scrapes() const;       // pages read
  std::uint64_t ScrapeErrors() const;  // reads that failed (refused, timed out, too big, ...)

 private:
  struct Job {
    std::string uid;
    ScrapeTargets targets;
    std::optional<std::int64_t> spec_max_steps;
    ProgressEstimator estimator;
    std::optional<tfjob::JobProgress> latest;
    std::optional<tfjob::JobProgress> written;
    std::optional<Clock::time_point> last_write;
    Clock::time_point next;  // in schedule_ unless a read is in flight
    bool in_flight = false;
  };
  struct Reports {
    std::optional<TrainerReport> chief, evaluator;
    std::vector<TrainerReport> trainers;  // the other training replicas', for their rates
  };

  void Loop();
  std::optional<TrainerReport> Read(const std::string& key, const std::string& address);
  // Takes the reports in; true when a write is due. Called with mu_ held.
  bool Record(const std::string& key, const std::string& uid, const Reports& reports);
  void Schedule(const std::string& key, Job& job, Clock::time_point at);  // mu_ held

  const ProgressOptions options_;
  const Fetch fetch_;
  const std::function<void(const std::string&)> due_;
  Logger logger_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Job> jobs_;                               // guarded by mu_
  std::set<std::pair<Clock::time_point, std::string>> schedule_;  // guarded by mu_
  std::atomic<std::uint64_t> scrapes_{0};
  std::atomic<std::uint64_t> scrape_errors_{0};
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace taas::controller
