#include "taas/kube/events.h"

#include <chrono>
#include <ctime>
#include <random>

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
  ref.api_version = object.value("apiVersion", api_version);
  ref.kind = object.value("kind", kind);
  const auto& meta = object.contains("metadata") ? object["metadata"] : nlohmann::json::object();
  ref.namespace_name = meta.value("namespace", "");
  ref.name = meta.value("name", "");
  ref.uid = meta.value("uid", "");
  ref.resource_version = meta.value("resourceVersion", "");
  return ref;
}

nlohmann::json MakeEvent(const ObjectReference& ref, bool warning, const std::string& reason,
                         const std::string& message, const std::string& component,
                         const std::string& host, const std::string& now) {
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
          {"count", 1}};
}

EventRecorder::EventRecorder(Client* client, std::string component, std::string host, Logger logger)
    : client_(client),
      component_(std::move(component)),
      host_(std::move(host)),
      logger_(std::move(logger)),
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
  Record(Pending{ref, false, reason, message});
}

void EventRecorder::Warning(const ObjectReference& ref, const std::string& reason,
                            const std::string& message) {
  Record(Pending{ref, true, reason, message});
}

std::uint64_t EventRecorder::posted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_;
}

void EventRecorder::Record(Pending pending) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= 10000) {
    logger_.Warning("event backlog full; dropping event",
                    {{"object", pending.ref.namespace_name + "/" + pending.ref.name},
                     {"reason", pending.reason}});
    return;
  }
  queue_.push_back(std::move(pending));
  cv_.notify_one();
}

void EventRecorder::Run() {
  for (;;) {
    Pending pending;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and flushed
      pending = std::move(queue_.front());
      queue_.pop_front();
    }
    Post(pending);
  }
}

void EventRecorder::Post(const Pending& p) {
  std::string ns = p.ref.namespace_name.empty() ? "default" : p.ref.namespace_name;
  std::string key = ns + "/" + p.ref.kind + "/" + p.ref.name + "/" + p.ref.uid + "/" +
                    (p.warning ? "W" : "N") + "/" + p.reason + "/" + p.message;
  std::string now = NowRfc3339();
  if (auto it = recent_.find(key); it != recent_.end()) {
    int count = it->second.second + 1;
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
  auto event = MakeEvent(p.ref, p.warning, p.reason, p.message, component_, host_, now);
  auto created = client_->Post("/api/v1/namespaces/" + ns + "/events", event);
  if (!created.ok()) {
    logger_.Warning("cannot post event", {{"object", ns + "/" + p.ref.name},
                                          {"reason", p.reason},
                                          {"error", std::string(created.status().message())}});
    return;
  }
  if (recent_.size() > 4096) recent_.clear();
  recent_[key] = {event["metadata"]["name"].get<std::string>(), 1};
  std::lock_guard<std::mutex> lock(mu_);
  ++posted_;
}

}  // namespace taas::kube
