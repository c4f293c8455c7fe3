#include "progress_tracker.h"

#include <algorithm>

namespace taas::controller {
namespace {

// Between one and one and a half `interval`, the same for the same key: jobs that start together
// are read at different times.
ProgressTracker::Clock::duration FirstReadDelay(const std::string& key,
                                                std::chrono::seconds interval) {
  const auto whole = std::chrono::duration_cast<ProgressTracker::Clock::duration>(interval);
  const auto half = whole / 2;
  if (half.count() <= 0) return whole;
  return whole + ProgressTracker::Clock::duration(std::hash<std::string>{}(key) %
                                                  static_cast<std::size_t>(half.count()));
}

}  // namespace

ProgressTracker::ProgressTracker(ProgressOptions options, Fetch fetch,
                                 std::function<void(const std::string&)> due, Logger logger)
    : options_(std::move(options)),
      fetch_(std::move(fetch)),
      due_(std::move(due)),
      logger_(std::move(logger)) {}

ProgressTracker::~ProgressTracker() { Stop(); }

void ProgressTracker::Start() {
  for (int i = 0; i < std::max(1, options_.parallelism); ++i)
    threads_.emplace_back([this] { Loop(); });
}

void ProgressTracker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void ProgressTracker::Track(const std::string& key, const std::string& uid,
                            const ScrapeTargets& targets,
                            std::optional<std::int64_t> spec_max_steps) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(key);
  if (it != jobs_.end() && it->second.uid == uid) {
    it->second.targets = targets;
    it->second.spec_max_steps = spec_max_steps;
    return;
  }
  if (it != jobs_.end()) {  // a new job of the same name: nothing of the old one carries over
    schedule_.erase({it->second.next, key});
    jobs_.erase(it);
  }
  Job& job = jobs_[key];
  job.uid = uid;
  job.targets = targets;
  job.spec_max_steps = spec_max_steps;
  Schedule(key, job, Clock::now() + FirstReadDelay(key, options_.interval));
}

void ProgressTracker::Untrack(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  if (!it->second.in_flight) schedule_.erase({it->second.next, key});
  jobs_.erase(it);
}

ProgressTracker::Snapshot ProgressTracker::Get(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return {};
  return {it->second.latest, it->second.last_write};
}

void ProgressTracker::Written(const std::string& key, const tfjob::JobProgress& progress,
                              Clock::time_point at) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return;
  Job& job = it->second;
  job.written = progress;
  job.last_write = at;
  // The next read comes a whole interval after this write, or it would find the write not yet
  // due and the job would be written every other interval.
  const auto again = at + ReadAgainIn(job.latest, job.estimator.Finishing(), options_.interval);
  if (!job.in_flight && job.next < again) {
    schedule_.erase({job.next, key});
    Schedule(key, job, again);
  }
}

std::size_t ProgressTracker::Tracked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size();
}

std::uint64_t ProgressTracker::Scrapes() const { return scrapes_.load(); }
std::uint64_t ProgressTracker::ScrapeErrors() const { return scrape_errors_.load(); }

void ProgressTracker::Schedule(const std::string& key, Job& job, Clock::time_point at) {
  job.next = at;
  job.in_flight = false;
  schedule_.emplace(at, key);
  wake_.notify_one();
}

void ProgressTracker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (schedule_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const auto [when, key] = *schedule_.begin();
    if (when > Clock::now()) {
      wake_.wait_until(lock, when);
      continue;
    }
    schedule_.erase(schedule_.begin());
    auto it = jobs_.find(key);
    if (it == jobs_.end() || it->second.in_flight || it->second.next != when) continue;
    Job& job = it->second;
    job.in_flight = true;
    const std::string uid = job.uid;
    const ScrapeTargets targets = job.targets;
    lock.unlock();
    Reports reports;
    if (!targets.chief.empty()) reports.chief = Read(key, targets.chief);
    if (!targets.evaluator.empty()) reports.evaluator = Read(key, targets.evaluator);
    for (const std::string& trainer : targets.trainers) {
      if (auto report = Read(key, trainer)) reports.trainers.push_back(*std::move(report));
    }
    lock.lock();
    if (Record(key, uid, reports)) {
      lock.unlock();
      due_(key);
      lock.lock();
    }
  }
}

std::optional<TrainerReport> ProgressTracker::Read(const std::string& key,
                                                   const std::string& address) {
  scrapes_.fetch_add(1);
  absl::StatusOr<std::string> page = fetch_(address);
  if (!page.ok()) {
    scrape_errors_.fetch_add(1);
    logger_.Debug(
        "reading a job's progress failed",
        {{"job", key}, {"address", address}, {"error", std::string(page.status().message())}});
    return std::nullopt;
  }
  return ReadTrainerReport(prometheus::ParsePrometheusSamples(*page));
}

bool ProgressTracker::Record(const std::string& key, const std::string& uid,
                             const Reports& reports) {
  auto it = jobs_.find(key);
  // Untracked meanwhile, or tracked again (another job of the name, or the same job after an
  // Untrack): that entry has a read scheduled of its own.
  if (it == jobs_.end() || it->second.uid != uid || !it->second.in_flight) return false;
  Job& job = it->second;
  const Clock::time_point now = Clock::now();
  if (reports.chief || reports.evaluator) {
    const auto wall = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    job.latest = job.estimator.Add(MergeReports(reports.chief, reports.evaluator, reports.trainers),
                                   job.spec_max_steps, now, wall);
  }
  Schedule(key, job, now + ReadAgainIn(job.latest, job.estimator.Finishing(), options_.interval));
  return job.latest &&
         ProgressWriteDue(job.written, *job.latest, job.last_write, now, options_.interval);
}

}  // namespace taas::controller
