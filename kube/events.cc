#include "taas/kube/events.h"

#include <chrono>
#include <ctime>
#include <random>

#include "taas/base/json_fields.h"

namespace taas::kube {

namespace {
std::string FormatUtc(std::chrono::system_clock::time_point tp, bool micro) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(tp);
  std::time_t t = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (micro) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(tp - secs).count();
    char frac[16];
    std::snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(us));
    out += frac;
  }
  return out + "Z";
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}
}  // namespace

std::string NowRfc3339Micro() { return FormatUtc(std::chrono::system_clock::now(), true); }
std::string NowRfc3339() { return FormatUtc(std::chrono::system_clock::now(), false); }

ObjectReference ObjectReference::Of(const nlohmann::json& object, const std::string& api_version,
                                    const std::string& kind) {
  ObjectReference ref;
  namespace jf = taas::json_fields;
  ref.api_version = jf::StringOr(object, "apiVersion", api_version);
  ref.kind = jf::StringOr(object, "kind", kind);
  static const nlohmann::json kNoMetadata = nlohmann::json::object();
  const nlohmann::json* meta = jf::Object(object, "metadata");
  if (meta == nullptr) meta = &kNoMetadata;
  ref.namespace_name = jf::StringOr(*meta, "namespace", "");
  ref.name = jf::StringOr(*meta, "name", "");
  ref.uid = jf::StringOr(*meta, "uid", "");
  ref.resource_version = jf::StringOr(*meta, "resourceVersion", "");
  return ref;
}

nlohmann::json MakeEvent(const ObjectReference& ref, bool warning, const std::string& reason,
                         const std::string& message, const std::string& component,
                         const std::string& host, const std::string& now, int count) {
  std::string ns = ref.namespace_name.empty() ? "default" : ref.namespace_name;
  nlohmann::json involved = {{"apiVersion", ref.api_version},
                             {"kind", ref.kind},
                             {"namespace", ref.namespace_name},
                             {"name", ref.name}};
  if (!ref.uid.empty()) involved["uid"] = ref.uid;
  if (!ref.resource_version.empty()) involved["resourceVersion"] = ref.resource_version;
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", ref.name + "." + RandomSuffix()}, {"namespace", ns}}},
          {"involvedObject", involved},
          {"reason", reason},
          {"message", message},
          {"type", warning ? "Warning" : "Normal"},
          {"source", {{"component", component}, {"host", host}}},
          {"reportingComponent", component},
          {"reportingInstance", host},
          {"firstTimestamp", now},
          {"lastTimestamp", now},
          {"count", count}};
}

namespace {

std::string GroupKey(const RecordedEvent& e) {
  std::string object =
      e.ref.uid.empty() ? e.ref.namespace_name + "/" + e.ref.kind + "/" + e.ref.name : e.ref.uid;
  return object + "/" + (e.warning ? "W" : "N") + "/" + e.reason;
}

// "Created pod: a" -> "Created pod: "; "" when there is no ": ".
std::string_view Prefix(std::string_view message) {
  auto colon = message.find(": ");
  return colon == std::string_view::npos ? std::string_view() : message.substr(0, colon + 2);
}

// `into` extended by `next`'s message; false when the result would exceed `max`.
bool MergeMessage(std::string& into, const std::string& next, std::size_t max) {
  std::string_view prefix = Prefix(next);
  std::string addition;
  if (!prefix.empty() && into.compare(0, prefix.size(), prefix) == 0) {
    addition = ", " + next.substr(prefix.size());
  } else {
    addition = "; " + next;
  }
  if (into.size() + addition.size() > max) return false;
  into += addition;
  return true;
}

}  // namespace

std::vector<RecordedEvent> AggregateEvents(std::vector<RecordedEvent> events,
                                           std::size_t max_message) {
  std::vector<RecordedEvent> out;
  std::map<std::string, std::size_t> open;  // group key -> index in out
  for (auto& e : events) {
    std::string key = GroupKey(e);
    auto it = open.find(key);
    if (it != open.end()) {
      RecordedEvent& group = out[it->second];
      if (group.message == e.message || MergeMessage(group.message, e.message, max_message)) {
        group.count += e.count;
        continue;
      }
    }
    open[key] = out.size();
    out.push_back(std::move(e));
  }
  return out;
}

EventRecorder::EventRecorder(Client* client, std::string component, std::string host, Logger logger,
                             std::chrono::milliseconds linger)
    : client_(client),
      component_(std::move(component)),
      host_(std::move(host)),
      logger_(std::move(logger)),
      linger_(linger),
      thread_([this] { Run(); }) {}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventRecorder::Normal(const ObjectReference& ref, const std::string& reason,
                           const std::string& message) {
  Record(RecordedEvent{ref, false, reason, message, 1});
}

void EventRecorder::Warning(const ObjectReference& ref, const std::string& reason,
                            const std::string& message) {
  Record(RecordedEvent{ref, true, reason, message, 1});
}

std::uint64_t EventRecorder::posted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_;
}

std::uint64_t EventRecorder::recorded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recorded_;
}

void EventRecorder::Record(RecordedEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= 10000) {
    logger_.Warning(
        "event backlog full; dropping event",
        {{"object", event.ref.namespace_name + "/" + event.ref.name}, {"reason", event.reason}});
    return;
  }
  ++recorded_;
  queue_.push_back(std::move(event));
  cv_.notify_one();
}

void EventRecorder::Run() {
  for (;;) {
    std::vector<RecordedEvent> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and flushed
      // Let the rest of a burst arrive (a reconcile records one event per child it creates).
      cv_.wait_for(lock, linger_, [this] { return stopping_; });
      batch.swap(queue_);
    }
    for (const auto& event : AggregateEvents(std::move(batch))) Post(event);
  }
}

void EventRecorder::Post(const RecordedEvent& p) {
  std::string ns = p.ref.namespace_name.empty() ? "default" : p.ref.namespace_name;
  std::string key = ns + "/" + p.ref.kind + "/" + p.ref.name + "/" + p.ref.uid + "/" +
                    (p.warning ? "W" : "N") + "/" + p.reason + "/" + p.message;
  std::string now = NowRfc3339();
  if (auto it = recent_.find(key); it != recent_.end()) {
    int count = it->second.second + p.count;
    auto patched = client_->Patch("/api/v1/namespaces/" + ns + "/events/" + it->second.first,
                                  {{"count", count}, {"lastTimestamp", now}}, PatchType::kMerge);
    if (patched.ok()) {
      it->second.second = count;
      std::lock_guard<std::mutex> lock(mu_);
      ++posted_;
      return;
    }
    recent_.erase(it);  // expired or deleted: post a new one
  }
  auto event = MakeEvent(p.ref, p.warning, p.reason, p.message, component_, host_, now, p.count);
  auto created = client_->Post("/api/v1/namespaces/" + ns + "/events", event);
  if (!created.ok()) {
    logger_.Warning("cannot post event", {{"object", ns + "/" + p.ref.name},
                                          {"reason", p.reason},
                                          {"error", std::string(created.status().message())}});
    return;
  }
  if (recent_.size() > 4096) recent_.clear();
  recent_[key] = {event["metadata"]["name"].get<std::string>(), p.count};
  std::lock_guard<std::mutex> lock(mu_);
  ++posted_;
}

}  // namespace taas::kube
