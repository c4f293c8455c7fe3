// The progress tracker's threads against a fake metrics endpoint: reads are scheduled per job,
// a slow chief holds one scrape thread and no other job, untracked jobs are not read again.
#include "progress_tracker.h"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace taas::controller {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A fake of every job's metrics endpoint: each read of an address answers its step, which goes
// up by 100 a read, and a rate of 100 examples/s; "slow:..." addresses block until released;
// "refused:..." fail.
class FakeEndpoints {
 public:
  absl::StatusOr<std::string> Fetch(const std::string& address) {
    std::unique_lock<std::mutex> lock(mu_);
    ++reads_[address];
    changed_.notify_all();
    if (address.rfind("refused:", 0) == 0) return absl::UnavailableError("connection refused");
    if (address.rfind("slow:", 0) == 0) changed_.wait(lock, [&] { return released_; });
    return "taas_global_step " + std::to_string(100 * reads_[address]) +
           "\ntaas_max_steps 100000\ntaas_eval_accuracy 0.5\ntaas_examples_per_second 100\n";
  }
  int Reads(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_[address];
  }
  // Until `address` was read `n` times, at most `timeout`.
  bool WaitReads(const std::string& address, int n, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return reads_[address] >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, int> reads_;
  bool released_ = false;
};

struct Due {
  std::mutex mu;
  std::multiset<std::string> keys;
  void Add(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu);
    keys.insert(key);
  }
  std::size_t Count(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu);
    return keys.count(key);
  }
};

// A started tracker reading `endpoints` every second with `parallelism` threads.
struct Tracked {
  explicit Tracked(int parallelism)
      : tracker(
            Options(parallelism), [this](const std::string& a) { return endpoints.Fetch(a); },
            [this](const std::string& key) { due.Add(key); }, Logger(stderr, LogLevel::kWarning)) {
    tracker.Start();
  }
  // A hung read returns, so the tracker can stop even when a check failed before the release.
  ~Tracked() { endpoints.Release(); }
  static ProgressOptions Options(int parallelism) {
    ProgressOptions o;
    o.interval = std::chrono::seconds(1);
    o.parallelism = parallelism;
    return o;
  }

  FakeEndpoints endpoints;
  Due due;
  ProgressTracker tracker;  // last: stopped before the endpoints go
};

TEST_CASE("progress tracker: a tracked job is read each interval and its write asked for") {
  const auto start = Clock::now();
  Tracked t(1);
  auto& [endpoints, due, tracker] = t;
  tracker.Track("ns/a", "uid-a", {"chief-a", "evaluator-a", {}}, 6000);
  CHECK(tracker.Tracked() == 1);
  REQUIRE(endpoints.WaitReads("chief-a", 1, milliseconds(5000)));
  // The first read waits a whole interval at least: the job's chief has just started.
  CHECK(Clock::now() - start >= milliseconds(950));
  REQUIRE(endpoints.WaitReads("evaluator-a", 1, milliseconds(5000)));
  for (int i = 0; i < 100 && due.Count("ns/a") == 0; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  CHECK(due.Count("ns/a") == 1);  // never written: due at once
  ProgressTracker::Snapshot s = tracker.Get("ns/a");
  REQUIRE(s.latest.has_value());
  CHECK(s.latest->global_step == 100);
  CHECK(s.latest->max_steps == 100000);  // the trainer's, over the spec's 6000
  CHECK(s.latest->metrics.at("accuracy") == 0.5);

  // Written now: the next read comes a whole interval later, and is due then.
  tracker.Written("ns/a", *s.latest, Clock::now());
  CHECK(tracker.Get("ns/a").last_write.has_value());
  REQUIRE(endpoints.WaitReads("chief-a", 2, milliseconds(5000)));
  for (int i = 0; i < 100 && due.Count("ns/a") < 2; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  CHECK(due.Count("ns/a") == 2);
  CHECK(tracker.Get("ns/a").latest->global_step == 200);

  tracker.Untrack("ns/a");
  CHECK(tracker.Tracked() == 0);
  CHECK_FALSE(tracker.Get("ns/a").latest.has_value());
  const int reads = endpoints.Reads("chief-a");
  std::this_thread::sleep_for(milliseconds(1500));
  CHECK(endpoints.Reads("chief-a") <= reads + 1);  // at most the read that was in flight
  CHECK(tracker.Scrapes() >= 4);
  CHECK(tracker.ScrapeErrors() == 0);
}

TEST_CASE("progress tracker: the job's rate adds every training replica's that answered") {
  Tracked t(1);
  auto& [endpoints, due, tracker] = t;
  tracker.Track("ns/r", "uid-r", {"chief-r", "evaluator-r", {"worker-r1", "refused:worker-r2"}},
                std::nullopt);
  REQUIRE(endpoints.WaitReads("worker-r1", 1, milliseconds(5000)));
  for (int i = 0; i < 100 && due.Count("ns/r") == 0; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  const ProgressTracker::Snapshot s = tracker.Get("ns/r");
  REQUIRE(s.latest.has_value());
  // The chief's 100 and worker 1's 100; not the evaluator's, and nothing from a worker that
  // refused.
  CHECK(s.latest->examples_per_second == 200);
  CHECK(s.latest->global_step == 100);  // the chief's
}

TEST_CASE("progress tracker: a hung chief holds one scrape thread, never the other jobs") {
  Tracked t(2);
  auto& [endpoints, due, tracker] = t;
  tracker.Track("ns/hung", "u1", {"slow:hung", "", {}}, std::nullopt);
  tracker.Track("ns/fine", "u2", {"fine", "", {}}, std::nullopt);
  tracker.Track("ns/down", "u3", {"refused:down", "", {}}, std::nullopt);
  REQUIRE(endpoints.WaitReads("slow:hung", 1, milliseconds(5000)));
  // While the hung read holds one thread, the other keeps reading the other jobs each interval.
  CHECK(endpoints.WaitReads("fine", 3, milliseconds(6000)));
  CHECK(endpoints.WaitReads("refused:down", 2, milliseconds(6000)));
  CHECK(tracker.Get("ns/fine").latest.has_value());
  CHECK_FALSE(tracker.Get("ns/down").latest.has_value());  // no answer: nothing to write
  CHECK(due.Count("ns/down") == 0);
  CHECK(tracker.ScrapeErrors() >= 2);
  CHECK(endpoints.Reads("slow:hung") == 1);
}

TEST_CASE(
    "progress tracker: a new job of the same name starts over; a read of the old is dropped") {
  Tracked t(1);
  [[maybe_unused]] auto& [endpoints, due, tracker] = t;
  tracker.Track("ns/j", "old", {"slow:old", "", {}}, std::nullopt);
  REQUIRE(endpoints.WaitReads("slow:old", 1, milliseconds(5000)));
  tracker.Track("ns/j", "new", {"new", "", {}}, std::nullopt);  // while the old one's read hangs
  endpoints.Release();
  REQUIRE(endpoints.WaitReads("new", 1, milliseconds(5000)));
  for (int i = 0; i < 100 && !tracker.Get("ns/j").latest; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  REQUIRE(tracker.Get("ns/j").latest.has_value());
  CHECK(tracker.Get("ns/j").latest->global_step == 100);  // the new job's first read, alone
  // The same job again (every reconcile of it): nothing changes, no extra read.
  tracker.Track("ns/j", "new", {"new", "", {}}, std::nullopt);
  CHECK(tracker.Tracked() == 1);
}

}  // namespace
}  // namespace taas::controller
