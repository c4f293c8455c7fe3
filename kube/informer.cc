#include "taas/kube/informer.h"

#include <algorithm>
#include <random>

#include "taas/base/json_fields.h"

namespace taas::kube {
namespace {

namespace jf = taas::json_fields;

std::string ResourceVersionOf(const nlohmann::json& object) {
  const nlohmann::json* meta = jf::Object(object, "metadata");
  return meta == nullptr ? "" : jf::StringOr(*meta, "resourceVersion", "");
}

std::string WithQuery(const std::string& path, const std::string& query) {
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

}  // namespace

std::string ObjectKey(const nlohmann::json& object) {
  const nlohmann::json* meta = jf::Object(object, "metadata");
  if (meta == nullptr) return "";
  std::string name = jf::StringOr(*meta, "name", "");
  if (name.empty()) return "";
  std::string ns = jf::StringOr(*meta, "namespace", "");
  return ns.empty() ? name : ns + "/" + name;
}

void StripManagedFields(nlohmann::json& object) {
  if (!object.is_object()) return;
  auto it = object.find("metadata");
  if (it != object.end() && it->is_object()) it->erase("managedFields");
}

absl::StatusOr<std::optional<Delta>> ApplyWatchEvent(
    const WatchEvent& event, Store& store, const std::function<void(nlohmann::json&)>& transform,
    std::string& resource_version) {
  if (event.type == "ERROR") {
    const std::int64_t code = jf::Int(event.object, "code").value_or(0);
    const std::string message = jf::StringOr(event.object, "message", "");
    if (code == 410) return absl::OutOfRangeError(message);
    return absl::InternalError("watch error event (code " + std::to_string(code) + "): " + message);
  }
  const std::string rv = ResourceVersionOf(event.object);
  std::optional<Delta> delta;
  if (event.type != "BOOKMARK") {
    if (transform) {
      nlohmann::json object = event.object;
      transform(object);
      delta = store.Apply(event.type, object);
    } else {
      delta = store.Apply(event.type, event.object);
    }
  }
  if (!rv.empty()) resource_version = rv;
  return delta;
}

// ---- Store ----

Store::Store(IndexFunc index, StoreMode mode) : index_(std::move(index)), mode_(mode) {}

Store::Entry Store::MakeEntry(const ObjectPtr& object) const {
  Entry entry;
  entry.resource_version = ResourceVersionOf(*object);
  if (index_) entry.indexed = index_(*object);
  if (mode_ == StoreMode::kPacked) {
    const std::vector<std::uint8_t> bytes = nlohmann::json::to_msgpack(*object);
    entry.packed.assign(bytes.begin(), bytes.end());  // exactly its size, unlike the vector
  } else {
    entry.parsed = object;
  }
  return entry;
}

ObjectPtr Store::Read(const Taken& taken) {
  if (taken.parsed != nullptr) return taken.parsed;
  // Packed by MakeEntry from valid JSON, so it parses; a discarded value would only mean a bug.
  return std::make_shared<const nlohmann::json>(
      nlohmann::json::from_msgpack(taken.packed, /*strict=*/true, /*allow_exceptions=*/false));
}

std::vector<ObjectPtr> Store::ReadAll(const std::vector<Taken>& taken) {
  std::vector<ObjectPtr> out;
  out.reserve(taken.size());
  for (const auto& t : taken) out.push_back(Read(t));
  return out;
}

void Store::IndexLocked(const std::string& key, const Entry& entry, bool add) {
  for (const auto& value : entry.indexed) {
    if (add) {
      index_map_[value].insert(key);
    } else if (auto it = index_map_.find(value); it != index_map_.end()) {
      it->second.erase(key);
      if (it->second.empty()) index_map_.erase(it);
    }
  }
}

std::optional<Delta> Store::Apply(const std::string& event_type, const nlohmann::json& object) {
  std::string key = ObjectKey(object);
  if (key.empty()) return std::nullopt;
  const bool deleted = event_type == "DELETED";
  if (!deleted && event_type != "ADDED" && event_type != "MODIFIED") return std::nullopt;
  auto ptr = std::make_shared<const nlohmann::json>(object);
  Entry entry = deleted ? Entry{} : MakeEntry(ptr);  // outside the lock: packing takes the time
  Taken old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(key);
    if (deleted) {
      if (it != items_.end()) {
        IndexLocked(key, it->second, false);
        items_.erase(it);
      }
      return Delta{DeltaType::kDeleted, ptr, nullptr};
    }
    if (it == items_.end()) {
      IndexLocked(key, entry, true);
      items_.emplace(std::move(key), std::move(entry));
      return Delta{DeltaType::kAdded, ptr, nullptr};
    }
    old = Take(it->second);
    IndexLocked(key, it->second, false);
    it->second = std::move(entry);
    IndexLocked(key, it->second, true);
  }
  return Delta{DeltaType::kUpdated, ptr, Read(old)};
}

std::vector<Delta> Store::Replace(const std::vector<nlohmann::json>& objects) {
  std::vector<Delta> deltas;
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_map<std::string, Entry> next;
  next.reserve(objects.size());
  for (const auto& object : objects) {
    std::string key = ObjectKey(object);
    if (key.empty()) continue;
    auto it = items_.find(key);
    if (it != items_.end() && it->second.resource_version == ResourceVersionOf(object)) {
      next[key] = it->second;  // unchanged: keep the cached copy
      continue;
    }
    auto ptr = std::make_shared<const nlohmann::json>(object);
    if (it == items_.end()) {
      deltas.push_back(Delta{DeltaType::kAdded, ptr, nullptr});
    } else {
      deltas.push_back(Delta{DeltaType::kUpdated, ptr, Read(Take(it->second))});
    }
    next[key] = MakeEntry(ptr);
  }
  for (const auto& [key, old] : items_) {
    if (next.count(key) == 0)
      deltas.push_back(Delta{DeltaType::kDeleted, Read(Take(old)), nullptr});
  }
  items_ = std::move(next);
  index_map_.clear();
  for (const auto& [key, entry] : items_) IndexLocked(key, entry, true);
  return deltas;
}

ObjectPtr Store::Get(const std::string& key) const {
  Taken taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    taken = Take(it->second);
  }
  return Read(taken);
}

std::vector<ObjectPtr> Store::List() const {
  std::vector<Taken> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.reserve(items_.size());
    for (const auto& [key, entry] : items_) taken.push_back(Take(entry));
  }
  return ReadAll(taken);
}

std::vector<ObjectPtr> Store::ByIndex(const std::string& value) const {
  std::vector<Taken> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_map_.find(value);
    if (it == index_map_.end()) return {};
    for (const auto& key : it->second) {
      if (auto item = items_.find(key); item != items_.end()) taken.push_back(Take(item->second));
    }
  }
  return ReadAll(taken);
}

std::size_t Store::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

// ---- Informer ----

Informer::Informer(Client* client, Options options, Logger logger)
    : client_(client),
      options_(std::move(options)),
      logger_(logger.With({{"informer", options_.path}})),
      store_(options_.index, options_.store_mode) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(Handler handler) { handlers_.push_back(std::move(handler)); }

void Informer::Start() {
  thread_ = std::thread([this] { Run(); });
  if (options_.resync_period.count() > 0) resync_thread_ = std::thread([this] { ResyncLoop(); });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ && !thread_.joinable()) return;
    stopped_ = true;
  }
  cv_.notify_all();
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
  if (resync_thread_.joinable()) resync_thread_.join();
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return synced_ || stopped_; });
  return synced_;
}

int Informer::lists() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lists_;
}

int Informer::watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watches_;
}

bool Informer::SleepFor(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, duration, [this] { return stopped_; });
  return !stopped_;
}

void Informer::Dispatch(const Delta& delta) {
  std::lock_guard<std::mutex> lock(dispatch_mu_);
  for (const auto& handler : handlers_) handler(delta);
}

absl::Status Informer::ListAll() {
  std::vector<nlohmann::json> items;
  std::string continue_token;
  std::string resource_version;
  do {
    std::string query = "limit=" + std::to_string(options_.page_size);
    if (!options_.label_selector.empty())
      query += "&labelSelector=" + QueryEscape(options_.label_selector);
    if (!continue_token.empty()) query += "&continue=" + QueryEscape(continue_token);
    auto page = client_->Get(WithQuery(options_.path, query));
    if (!page.ok()) return page.status();
    if (jf::Array(*page, "items") != nullptr) {
      for (auto& item : (*page)["items"]) {
        if (options_.transform) options_.transform(item);
        items.push_back(std::move(item));
      }
    }
    const nlohmann::json* meta = jf::Object(*page, "metadata");
    continue_token = meta == nullptr ? "" : jf::StringOr(*meta, "continue", "");
    if (meta != nullptr) resource_version = jf::StringOr(*meta, "resourceVersion", "");
  } while (!continue_token.empty());
  auto deltas = store_.Replace(items);
  resource_version_ = resource_version;
  for (const auto& delta : deltas) Dispatch(delta);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++lists_;
    synced_ = true;
  }
  cv_.notify_all();
  logger_.Debug("listed", {{"objects", static_cast<std::int64_t>(items.size())},
                           {"resourceVersion", resource_version}});
  return absl::OkStatus();
}

absl::Status Informer::WatchOnce() {
  // Random server-side timeouts spread the re-watches of many informers (client-go does so too).
  static thread_local std::minstd_rand rng(std::random_device{}());
  int timeout_seconds = 300 + static_cast<int>(rng() % 300);
  std::string query =
      "watch=1&allowWatchBookmarks=true&resourceVersion=" + QueryEscape(resource_version_) +
      "&timeoutSeconds=" + std::to_string(timeout_seconds);
  if (!options_.label_selector.empty())
    query += "&labelSelector=" + QueryEscape(options_.label_selector);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++watches_;
  }
  absl::Status event_error;
  StreamOptions stream_options;
  stream_options.cancel = &cancel_;
  stream_options.idle_timeout = std::chrono::seconds(timeout_seconds + 60);
  absl::Status status = client_->Watch(
      WithQuery(options_.path, query),
      [&](const WatchEvent& event) {
        auto delta = ApplyWatchEvent(event, store_, options_.transform, resource_version_);
        if (!delta.ok()) {
          event_error = delta.status();
          return false;
        }
        if (*delta) Dispatch(**delta);
        return true;
      },
      stream_options);
  if (!event_error.ok()) return event_error;
  return status;
}

void Informer::Run() {
  std::chrono::milliseconds backoff = options_.min_backoff;
  bool need_list = true;
  auto stopped = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  };
  while (!stopped()) {
    if (need_list) {
      absl::Status status = ListAll();
      if (!status.ok()) {
        if (stopped()) break;
        logger_.Warning("list failed; retrying", {{"error", std::string(status.message())},
                                                  {"backoff_ms", backoff.count()}});
        if (!SleepFor(backoff)) break;
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      need_list = false;
    }
    auto started = std::chrono::steady_clock::now();
    absl::Status status = WatchOnce();
    if (stopped()) break;
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(10))
      backoff = options_.min_backoff;
    if (status.ok()) continue;  // the server ended the watch: resume from resource_version_
    need_list = true;
    if (status.code() == absl::StatusCode::kOutOfRange) {
      logger_.Info("resourceVersion expired (410 Gone); relisting",
                   {{"resourceVersion", resource_version_}});
      continue;
    }
    logger_.Warning("watch failed; relisting",
                    {{"error", std::string(status.message())}, {"backoff_ms", backoff.count()}});
    if (!SleepFor(backoff)) break;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void Informer::ResyncLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, options_.resync_period, [this] { return stopped_; });
      if (stopped_) return;
      if (!synced_) continue;
    }
    for (const auto& object : store_.List()) Dispatch(Delta{DeltaType::kSync, object, object});
  }
}

}  // namespace taas::kube
