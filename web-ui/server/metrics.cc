#include "taas/ui_server/metrics.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "taas/base/json_fields.h"
#include "taas/contract/metric_names.h"
#include "taas/http/client.h"
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

bool ConditionTrue(const json& tfjob, std::string_view type) {
  for (const json& c : ArrayOr(ObjectOr(tfjob, "status"), "conditions")) {
    if (jf::StringOr(c, "type", "") == type && jf::StringOr(c, "status", "") == "True") {
      return true;
    }
  }
  return false;
}

}  // namespace

std::map<std::string, double> ParsePrometheusText(std::string_view text) {
  std::map<std::string, double> samples;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    std::size_t name_end = 0;
    while (name_end < line.size() && (std::isalnum(static_cast<unsigned char>(line[name_end])) ||
                                      line[name_end] == '_' || line[name_end] == ':')) {
      ++name_end;
    }
    if (name_end == 0) continue;
    std::string name(line.substr(0, name_end));
    std::string_view rest = line.substr(name_end);
    if (!rest.empty() && rest.front() == '{') {
      const std::size_t close = rest.find('}');
      if (close == std::string_view::npos) continue;
      rest.remove_prefix(close + 1);
    }
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    const std::size_t value_end = rest.find_first_of(" \t");
    std::string value(rest.substr(0, value_end));
    if (value.empty()) continue;
    char* parsed_end = nullptr;
    const double v = std::strtod(value.c_str(), &parsed_end);
    if (parsed_end != value.c_str() + value.size() || std::isnan(v)) continue;
    samples.emplace(std::move(name), v);
  }
  return samples;
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

json MetricsStore::HistoryJson(const std::string& job_key) const {
  json points = json::array();
  auto put = [](json& object, const char* key, const std::optional<double>& v) {
    object[key] = v ? json(*v) : json(nullptr);
  };
  for (const MetricsPoint& p : History(job_key)) {
    json point = {{"time", p.time_ms}};
    put(point, "step", p.global_step);
    put(point, "loss", p.loss);
    put(point, "examplesPerSecond", p.examples_per_second);
    put(point, "learningRate", p.learning_rate);
    put(point, "evalAccuracy", p.eval_accuracy);
    points.push_back(std::move(point));
  }
  json latest = points.empty() ? json(nullptr) : points.back();
  return {{"points", points}, {"latest", latest}};
}

MetricsScraper::MetricsScraper(JobSource* source, std::vector<std::string> namespaces,
                               MetricsStore* store, ScraperOptions options, Logger logger)
    : source_(source),
      namespaces_(std::move(namespaces)),
      store_(store),
      options_(std::move(options)),
      logger_(std::move(logger)) {}

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

std::vector<std::pair<std::string, std::string>> MetricsScraper::Targets(const json& tfjob) const {
  std::vector<std::pair<std::string, std::string>> targets;
  const json& metadata = ObjectOr(tfjob, "metadata");
  const std::string name = jf::StringOr(metadata, "name", "");
  const std::string ns = jf::StringOr(metadata, "namespace", "");
  const json& specs = ObjectOr(ObjectOr(tfjob, "spec"), "tfReplicaSpecs");
  if (name.empty() || ns.empty()) return targets;
  auto port_of = [&](const json& spec) {
    const json& containers = ArrayOr(ObjectOr(ObjectOr(spec, "template"), "spec"), "containers");
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
  auto add = [&](tfjob::ReplicaType type, const json& spec) {
    const std::string replica = tfjob::ReplicaName(name, type, 0);
    auto it = options_.overrides.find(ns + "/" + replica);
    targets.emplace_back(replica,
                         it != options_.overrides.end()
                             ? it->second
                             : replica + "." + ns + ".svc:" + std::to_string(port_of(spec)));
  };
  if (const json* chief = jf::Object(specs, "Chief")) {
    add(tfjob::ReplicaType::kChief, *chief);
  } else if (const json* master = jf::Object(specs, "Master")) {
    add(tfjob::ReplicaType::kMaster, *master);
  } else if (const json* worker = jf::Object(specs, "Worker")) {
    add(tfjob::ReplicaType::kWorker, *worker);
  }
  if (const json* evaluator = jf::Object(specs, "Evaluator")) {
    add(tfjob::ReplicaType::kEvaluator, *evaluator);
  }
  return targets;
}

void MetricsScraper::ScrapeOnce() {
  for (const std::string& ns : namespaces_) {
    auto jobs = source_->ListJobObjects(ns);
    if (!jobs.ok()) {
      logger_.Debug("listing tfjobs for metrics failed",
                    {{"namespace", ns}, {"error", std::string(jobs.status().message())}});
      continue;
    }
    for (const json& job : *jobs) {
      if (ConditionTrue(job, "Succeeded") || ConditionTrue(job, "Failed")) continue;
      if (auto point = Scrape(job)) {
        store_->Add(ns + "/" + jf::StringOr(ObjectOr(job, "metadata"), "name", ""), *point);
      }
    }
  }
}

std::optional<MetricsPoint> MetricsScraper::Scrape(const json& job) const {
  MetricsPoint point;
  point.time_ms = NowMs();
  bool any = false;
  for (const auto& [replica, address] : Targets(job)) {
    auto text = http::Get(address, "/metrics", {options_.timeout, contract::kMaxMetricsPageBytes});
    if (!text.ok()) continue;
    const auto samples = ParsePrometheusText(*text);
    // The first target's value of a metric wins (the chief's step over the evaluator's).
    auto take = [&](std::string_view metric, std::optional<double>* into) {
      if (auto it = samples.find(std::string(metric)); it != samples.end() && !into->has_value()) {
        *into = it->second;
        any = true;
      }
    };
    take(contract::kGlobalStepMetric, &point.global_step);
    take(contract::kLossMetric, &point.loss);
    take(contract::kExamplesPerSecondMetric, &point.examples_per_second);
    take(contract::kLearningRateMetric, &point.learning_rate);
    take(contract::kEvalAccuracyMetric, &point.eval_accuracy);
  }
  if (!any) return std::nullopt;
  return point;
}

}  // namespace taas::ui_server
