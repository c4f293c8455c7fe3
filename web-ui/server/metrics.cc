#include "taas/ui_server/metrics.h"

#include <algorithm>
#include <chrono>

#include "taas/base/json_fields.h"
#include "taas/contract/metric_names.h"
#include "taas/http/client.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/progress.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/tfjob.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;
namespace jf = taas::json_fields;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The member `key` of `object` as an object (resp. array), or an empty one.
const json& ObjectOr(const json& object, std::string_view key) {
  static const json kEmpty = json::object();  // NOLINT: an immutable empty value, not state.
  const json* found = jf::Object(object, key);
  return found ? *found : kEmpty;
}
const json& ArrayOr(const json& object, std::string_view key) {
  static const json kEmpty = json::array();  // NOLINT: an immutable empty value, not state.
  const json* found = jf::Array(object, key);
  return found ? *found : kEmpty;
}

// A scraped step count as a progress holds it: a whole number from 0 to tfjob::kMaxProgressStep.
std::optional<std::int64_t> StepOf(const std::optional<double>& value) {
  if (!value || !(*value >= 0) || *value > static_cast<double>(tfjob::kMaxProgressStep)) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(*value);
}

// Whether the job has ended: Succeeded or Failed (the operator's verdict).
bool Finished(const tfjob::JobStatus& status) {
  return std::any_of(status.conditions.begin(), status.conditions.end(), [](const auto& c) {
    return c.status == tfjob::ConditionStatus::kTrue &&
           (c.type == tfjob::ConditionType::kSucceeded || c.type == tfjob::ConditionType::kFailed);
  });
}

}  // namespace

std::vector<std::string> ReportedDevices(const std::vector<PrometheusSample>& samples) {
  std::vector<std::string> devices;
  for (const PrometheusSample& sample : samples) {
    if (devices.size() == kMaxReportedDevices) break;
    if (sample.name != contract::kReplicaDeviceInfoMetric || sample.value != 1) continue;
    std::string device, name;
    for (const auto& [label, value] : sample.labels) {
      if (label == contract::kDeviceLabel) device = value;
      if (label == contract::kDeviceNameLabel) name = value;
    }
    if (device.empty()) continue;
    devices.push_back(name.empty() ? device : device + " " + name);
  }
  return devices;
}

DeviceBook::DeviceBook(std::size_t max_replicas, std::size_t max_wanted)
    : max_replicas_(std::max<std::size_t>(1, max_replicas)),
      max_wanted_(std::max<std::size_t>(1, max_wanted)) {}

std::optional<std::vector<std::string>> DeviceBook::Devices(const std::string& key,
                                                            const std::string& start) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(key);
  if (it == known_.end() || it->second.start != start) return std::nullopt;
  return it->second.devices;
}

void DeviceBook::Put(const std::string& key, const std::string& start,
                     std::vector<std::string> devices) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = known_.insert_or_assign(key, Entry{start, std::move(devices)});
  if (inserted) known_order_.push_back(key);
  while (known_.size() > max_replicas_) {
    known_.erase(known_order_.front());
    known_order_.pop_front();
  }
}

void DeviceBook::Want(DeviceRequest request) {
  const std::string key = request.namespace_name + "/" + request.replica;
  std::lock_guard<std::mutex> lock(mu_);
  if (wanted_.size() >= max_wanted_) return;
  if (auto it = known_.find(key); it != known_.end() && it->second.start == request.start) return;
  for (const DeviceRequest& w : wanted_) {
    if (w.namespace_name == request.namespace_name && w.replica == request.replica &&
        w.start == request.start) {
      return;
    }
  }
  wanted_.push_back(std::move(request));
}

std::vector<DeviceRequest> DeviceBook::TakeWanted(std::size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DeviceRequest> taken;
  while (!wanted_.empty() && taken.size() < max) {
    taken.push_back(std::move(wanted_.front()));
    wanted_.pop_front();
  }
  return taken;
}

void DeviceBook::Annotate(const tfjob::TFJob& job, std::vector<ReplicaRow>* replicas) {
  const std::string& ns = job.metadata.namespace_name;
  for (ReplicaRow& row : *replicas) {
    row.devices = row.name.empty() ? std::nullopt : Devices(ns + "/" + row.name, row.start_time);
    if (row.devices || row.name.empty() || ns.empty() || row.phase != "Running") continue;
    const auto type = tfjob::ParseReplicaTypeIgnoringCase(row.replica_type);
    const auto spec = type ? job.spec.replica_specs.find(*type) : job.spec.replica_specs.end();
    Want({ns, row.name, row.start_time,
          spec != job.spec.replica_specs.end() ? spec->second.pod_template : json(nullptr)});
  }
}

MetricsStore::MetricsStore(std::size_t points_per_job, std::size_t max_jobs)
    : points_per_job_(std::max<std::size_t>(1, points_per_job)),
      max_jobs_(std::max<std::size_t>(1, max_jobs)) {}

void MetricsStore::Add(const std::string& job_key, const MetricsPoint& point) {
  std::lock_guard<std::mutex> lock(mu_);
  recency_.remove(job_key);
  recency_.push_front(job_key);
  auto& points = history_[job_key];
  points.push_back(point);
  while (points.size() > points_per_job_) points.pop_front();
  while (recency_.size() > max_jobs_) {
    history_.erase(recency_.back());
    recency_.pop_back();
  }
}

std::vector<MetricsPoint> MetricsStore::History(const std::string& job_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = history_.find(job_key);
  if (it == history_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

MetricsAnswer MetricsStore::HistoryAnswer(const std::string& job_key) const {
  MetricsAnswer answer{History(job_key), std::nullopt};
  if (!answer.points.empty()) answer.latest = answer.points.back();
  return answer;
}

std::optional<tfjob::JobProgress> MetricsStore::Progress(const std::string& job_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = history_.find(job_key);
  if (it == history_.end() || it->second.empty()) return std::nullopt;
  const std::deque<MetricsPoint>& points = it->second;
  const MetricsPoint& latest = points.back();
  // The points inside the window and one before it, oldest first (StepRate's samples).
  const std::int64_t window_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(kProgressRateWindow).count();
  auto first = points.end() - 1;
  while (first != points.begin() && latest.time_ms - first->time_ms < window_ms) --first;
  tfjob::StepRate rate(kProgressRateWindow);
  for (auto p = first; p != points.end(); ++p) {
    if (auto step = StepOf(p->global_step)) {
      rate.Add(tfjob::StepRate::Clock::time_point(std::chrono::milliseconds(p->time_ms)), *step);
    }
  }
  tfjob::JobProgress progress;
  progress.global_step = StepOf(latest.global_step);
  progress.max_steps = StepOf(latest.max_steps);
  progress.examples_per_second = latest.examples_per_second;
  if (progress.global_step && progress.max_steps) {
    progress.eta_seconds =
        tfjob::EtaSeconds(*progress.global_step, *progress.max_steps, rate.PerSecond());
  }
  if (latest.loss) progress.metrics[std::string(tfjob::kLossMetricName)] = *latest.loss;
  if (latest.eval_accuracy) {
    progress.metrics[std::string(tfjob::kAccuracyMetricName)] = *latest.eval_accuracy;
  }
  tfjob::ApplyStall(progress, latest.stall);
  progress.update_time = std::chrono::floor<std::chrono::seconds>(
      std::chrono::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(latest.time_ms)));
  return progress;
}

MetricsScraper::MetricsScraper(JobSource* source, std::vector<std::string> namespaces,
                               MetricsStore* store, ScraperOptions options, Logger logger,
                               DeviceBook* devices)
    : source_(source),
      namespaces_(std::move(namespaces)),
      store_(store),
      options_(std::move(options)),
      logger_(std::move(logger)),
      devices_(devices) {}

MetricsScraper::~MetricsScraper() { Stop(); }

void MetricsScraper::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      try {
        ScrapeOnce();
      } catch (const std::exception& e) {
        // A round that fails (an object no accessor foresaw, memory) costs one round, not the
        // process: the next interval scrapes again.
        logger_.Error("metrics scrape failed", {{"error", e.what()}});
      }
      lock.lock();
      wake_.wait_for(lock, options_.interval, [this] { return stopping_; });
    }
  });
}

void MetricsScraper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string MetricsScraper::Address(const std::string& namespace_name, const std::string& replica,
                                    const json& pod_template) const {
  if (auto it = options_.overrides.find(namespace_name + "/" + replica);
      it != options_.overrides.end()) {
    return it->second;
  }
  auto port_of = [&] {
    const json& containers = ArrayOr(ObjectOr(pod_template, "spec"), "containers");
    for (const json& c : containers) {
      for (const json& p : ArrayOr(c, "ports")) {
        const auto port = jf::Int(p, "containerPort");
        if (jf::StringOr(p, "name", "") == contract::kMetricsPortName && port && *port > 0 &&
            *port <= 65535) {
          return static_cast<int>(*port);
        }
      }
    }
    return options_.default_port;
  };
  return replica + "." + namespace_name + ".svc:" + std::to_string(port_of());
}

std::vector<std::pair<std::string, std::string>> MetricsScraper::Targets(const json& tfjob) const {
  const auto job = tfjob::TFJobFromJson(tfjob);
  if (!job.ok()) return {};
  std::vector<std::pair<std::string, std::string>> targets;
  for (const Target& t : TargetsOf(*job)) targets.emplace_back(t.replica, t.address);
  return targets;
}

std::vector<MetricsScraper::Target> MetricsScraper::TargetsOf(const tfjob::TFJob& job) const {
  std::vector<Target> targets;
  if (job.metadata.name.empty()) return targets;
  const tfjob::TFJobSpec& spec = job.spec;
  auto add = [&](tfjob::ReplicaType type, int index, const tfjob::ReplicaSpec& replica_spec,
                 bool rate_only) {
    const std::string replica = tfjob::ReplicaName(job.metadata.name, type, index);
    targets.push_back({replica,
                       Address(job.metadata.namespace_name, replica, replica_spec.pod_template),
                       type, rate_only});
  };
  // The chief first: its value of a metric wins over the evaluator's (Scrape).
  for (const auto& [type, replica_spec] : spec.replica_specs) {
    if (tfjob::IsMasterRole(spec, type, 0)) add(type, 0, replica_spec, false);
  }
  if (auto evaluator = spec.replica_specs.find(tfjob::ReplicaType::kEvaluator);
      evaluator != spec.replica_specs.end()) {
    add(evaluator->first, 0, evaluator->second, false);
  }
  // Then every other training replica, for its rate: the job's is their sum.
  for (const auto& [type, replica_spec] : spec.replica_specs) {
    if (!tfjob::TrainsExamples(type)) continue;
    const std::int64_t replicas = std::min<std::int64_t>(replica_spec.replicas, kMaxRateTargets);
    for (int index = 0; index < replicas; ++index) {
      if (!tfjob::IsMasterRole(spec, type, index)) add(type, index, replica_spec, true);
    }
  }
  return targets;
}

void MetricsScraper::ScrapeDevices() {
  if (devices_ == nullptr) return;
  for (const DeviceRequest& r : devices_->TakeWanted(kDeviceScrapesPerRound)) {
    const std::string address = Address(r.namespace_name, r.replica, r.pod_template);
    auto text = http::Get(address, "/metrics", {options_.timeout, contract::kMaxMetricsPageBytes});
    if (!text.ok()) {
      logger_.Debug("reading a replica's devices failed",
                    {{"replica", r.namespace_name + "/" + r.replica},
                     {"address", address},
                     {"error", std::string(text.status().message())}});
      continue;
    }
    std::vector<std::string> devices = ReportedDevices(ParsePrometheusSamples(*text));
    // None yet: the replica serves metrics before it has chosen its devices (or its image
    // predates the metric); the next view asks again.
    if (devices.empty()) continue;
    devices_->Put(r.namespace_name + "/" + r.replica, r.start, std::move(devices));
  }
}

void MetricsScraper::ScrapeOnce() {
  for (const std::string& ns : namespaces_) {
    auto jobs = source_->ListJobObjects(ns);
    if (!jobs.ok()) {
      logger_.Debug("listing tfjobs for metrics failed",
                    {{"namespace", ns}, {"error", std::string(jobs.status().message())}});
      continue;
    }
    for (const json& object : *jobs) {
      const auto job = tfjob::TFJobFromJson(object);
      if (!job.ok() || Finished(job->status)) continue;
      if (auto point = Scrape(*job)) store_->Add(ns + "/" + job->metadata.name, *point);
    }
  }
  ScrapeDevices();
}

std::optional<MetricsPoint> MetricsScraper::Scrape(const tfjob::TFJob& job) const {
  MetricsPoint point;
  point.time_ms = NowMs();
  bool any = false;
  tfjob::JobExamplesRate rate;
  tfjob::JobStall stall;
  for (const Target& target : TargetsOf(job)) {
    auto text =
        http::Get(target.address, "/metrics", {options_.timeout, contract::kMaxMetricsPageBytes});
    if (!text.ok()) continue;
    const auto samples = ParsePrometheusText(*text);
    if (tfjob::TrainsExamples(target.type)) {
      if (auto it = samples.find(std::string(contract::kExamplesPerSecondMetric));
          it != samples.end()) {
        rate.Add(it->second);
      }
      stall.Add(tfjob::ReplicaStall(ParsePrometheusSamples(*text)));
    }
    if (target.rate_only) continue;
    // The first target's value of a metric wins (the chief's step over the evaluator's).
    auto take = [&](std::string_view metric, std::optional<double>* into) {
      if (auto it = samples.find(std::string(metric)); it != samples.end() && !into->has_value()) {
        *into = it->second;
        any = true;
      }
    };
    take(contract::kGlobalStepMetric, &point.global_step);
    take(contract::kLossMetric, &point.loss);
    take(contract::kLearningRateMetric, &point.learning_rate);
    take(contract::kEvalAccuracyMetric, &point.eval_accuracy);
    take(contract::kMaxStepsMetric, &point.max_steps);
  }
  point.examples_per_second = rate.PerSecond();
  point.stall = stall.Longest();
  if (!any && !point.examples_per_second) return std::nullopt;
  return point;
}

}  // namespace taas::ui_server
