// Informers: keep a local cache of one resource (LIST, then WATCH from the list's
// resourceVersion with bookmarks), and tell handlers about every change, like client-go's
// SharedInformer.
//
// Recovery: a watch that the server ends normally is resumed from the last resourceVersion seen
// (events or bookmarks); `410 Gone` (an expired resourceVersion) and broken connections cause a
// full relist, with exponential backoff between failures. A relist turns into the adds, updates
// and deletes that the watch missed, so handlers see a consistent stream. Every resync period,
// handlers are called with kSync for every cached object (level-triggered controllers use it to
// look at each object again).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "taas/base/log.h"
#include "taas/kube/client.h"

namespace taas::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// "namespace/name" (or "name" for cluster-scoped objects).
std::string ObjectKey(const nlohmann::json& object);

// Drops metadata.managedFields, often the largest part of an object, which controllers never
// read (an update without the field keeps the server's field ownership).
void StripManagedFields(nlohmann::json& object);

enum class DeltaType { kAdded, kUpdated, kDeleted, kSync };

struct Delta {
  DeltaType type = DeltaType::kAdded;
  ObjectPtr object;      // the new object (the last known one for kDeleted)
  ObjectPtr old_object;  // for kUpdated and kSync
};

// How a Store keeps its objects.
enum class StoreMode {
  kParsed,  // as parsed JSON: every read shares the one copy
  // As MessagePack: about a sixth of the memory parsed JSON takes (a small object's every key,
  // string and map node is its own allocation), for a parse on every read (microseconds for a
  // trimmed pod). For caches read a few objects at a time, such as a controller's.
  kPacked,
};

// The cache behind an informer: objects by key, plus an optional secondary index (e.g. pods by
// "namespace/job-name"). Pure and thread-safe; no I/O, so it is unit tested on its own.
class Store {
 public:
  // Values an object is indexed under (may be empty).
  using IndexFunc = std::function<std::vector<std::string>(const nlohmann::json&)>;

  explicit Store(IndexFunc index = nullptr, StoreMode mode = StoreMode::kParsed);

  // Applies a watch event (ADDED/MODIFIED/DELETED); returns the delta to report, or nothing when
  // the event changes nothing (e.g. an older resourceVersion than the cached one is still
  // applied: the API server's order is authoritative).
  std::optional<Delta> Apply(const std::string& event_type, const nlohmann::json& object);

  // Replaces the whole content with a LIST result; returns what changed: adds for new keys,
  // updates for objects whose resourceVersion differs, deletes for keys no longer present.
  std::vector<Delta> Replace(const std::vector<nlohmann::json>& objects);

  // In kPacked mode, each call returns objects parsed for it, after releasing the lock.
  ObjectPtr Get(const std::string& key) const;
  std::vector<ObjectPtr> List() const;
  std::vector<ObjectPtr> ByIndex(const std::string& value) const;
  std::size_t Size() const;

 private:
  struct Entry {
    ObjectPtr parsed;    // kParsed
    std::string packed;  // kPacked: the object as MessagePack
    std::string resource_version;
    std::vector<std::string> indexed;  // the index values it is filed under
  };

  // What a read takes out of the lock: the shared object, or a copy of the packed bytes, parsed
  // once the lock is released (the watch thread and the other readers wait on it).
  struct Taken {
    ObjectPtr parsed;
    std::string packed;
  };

  Entry MakeEntry(const ObjectPtr& object) const;
  static Taken Take(const Entry& entry) { return {entry.parsed, entry.packed}; }
  static ObjectPtr Read(const Taken& taken);
  static std::vector<ObjectPtr> ReadAll(const std::vector<Taken>& taken);
  void IndexLocked(const std::string& key, const Entry& entry, bool add);

  IndexFunc index_;
  const StoreMode mode_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> items_;                      // guarded by mu_
  std::unordered_map<std::string, std::set<std::string>> index_map_;  // guarded by mu_
};

// What one watch event does to an informer: ADDED/MODIFIED/DELETED change `store` (after
// `transform`, when given) and return the delta to dispatch (nullopt when nothing changed);
// BOOKMARK only moves `resource_version`; ERROR returns kOutOfRange for 410 Gone (relist) and
// kInternal otherwise. `resource_version` follows every event that carries one. Pure apart from
// the store; any JSON in the event is tolerated.
absl::StatusOr<std::optional<Delta>> ApplyWatchEvent(
    const WatchEvent& event, Store& store, const std::function<void(nlohmann::json&)>& transform,
    std::string& resource_version);

class Informer {
 public:
  struct Options {
    // The collection path, e.g. "/api/v1/pods" or "/apis/kubeflow.org/v1/namespaces/ns/tfjobs".
    std::string path;
    std::string label_selector;                                   // optional, unescaped ("a=b,c")
    std::chrono::seconds resync_period{std::chrono::minutes(5)};  // zero: never
    std::chrono::milliseconds min_backoff{500};
    std::chrono::milliseconds max_backoff{std::chrono::seconds(30)};
    int page_size = 500;
    Store::IndexFunc index;
    // Applied to every object before it is cached (e.g. StripManagedFields, to save memory).
    std::function<void(nlohmann::json&)> transform;
    StoreMode store_mode = StoreMode::kParsed;
  };
  using Handler = std::function<void(const Delta&)>;

  Informer(Client* client, Options options, Logger logger);  // client not owned
  ~Informer();                                               // stops
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers run on the informer's thread, in order; they should only enqueue work. Add them
  // before Start.
  void AddHandler(Handler handler);

  void Start();
  void Stop();

  // True once the first LIST has been applied.
  bool HasSynced() const;
  // Waits until HasSynced or `timeout`; false on timeout or Stop.
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  const Store& store() const { return store_; }

  // Counters for metrics/tests.
  int lists() const;
  int watches() const;

 private:
  void Run();
  void ResyncLoop();
  absl::Status ListAll();
  absl::Status WatchOnce();
  void Dispatch(const Delta& delta);
  bool SleepFor(std::chrono::milliseconds duration);  // false when stopped

  Client* client_;
  const Options options_;
  Logger logger_;
  Store store_;
  std::vector<Handler> handlers_;
  Cancellation cancel_;
  std::thread thread_;
  std::thread resync_thread_;
  std::mutex dispatch_mu_;  // handlers never run concurrently (watch vs resync)

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopped_ = false;          // guarded by mu_
  bool synced_ = false;           // guarded by mu_
  std::string resource_version_;  // only the run thread touches it
  int lists_ = 0;                 // guarded by mu_
  int watches_ = 0;               // guarded by mu_
};

}  // namespace taas::kube
