// Records core/v1 Events about objects (what `kubectl describe` shows), like client-go's
// EventRecorder. Events are posted by a background thread so that reconcilers never wait for
// them; repeated events (same object, type, reason and message) within the coalescing window are
// counted on the existing Event (PATCH count/lastTimestamp) instead of creating new ones.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "taas/base/log.h"
#include "taas/kube/client.h"

namespace taas::kube {

struct ObjectReference {
  std::string api_version;  // "kubeflow.org/v1"
  std::string kind;         // "TFJob"
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string resource_version;

  // From an object's JSON (apiVersion/kind may be given when the object lacks them, as LIST
  // items do).
  static ObjectReference Of(const nlohmann::json& object, const std::string& api_version,
                            const std::string& kind);
};

// The Event object that would be posted (exposed for tests). `now` is RFC 3339.
nlohmann::json MakeEvent(const ObjectReference& ref, bool warning, const std::string& reason,
                         const std::string& message, const std::string& component,
                         const std::string& host, const std::string& now);

class EventRecorder {
 public:
  // client is not owned; `component` is source.component (e.g. "tfjob-controller").
  EventRecorder(Client* client, std::string component, std::string host, Logger logger);
  ~EventRecorder();  // flushes what is queued, then stops
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Never blocks on the network; drops events beyond a bounded backlog (logging them).
  void Normal(const ObjectReference& ref, const std::string& reason, const std::string& message);
  void Warning(const ObjectReference& ref, const std::string& reason, const std::string& message);

  std::uint64_t posted() const;

 private:
  struct Pending {
    ObjectReference ref;
    bool warning;
    std::string reason;
    std::string message;
  };
  void Record(Pending pending);
  void Run();
  void Post(const Pending& pending);

  Client* client_;
  const std::string component_;
  const std::string host_;
  Logger logger_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::uint64_t posted_ = 0;   // guarded by mu_
  // Coalescing: key -> (event name in namespace, count), only touched by the thread.
  std::map<std::string, std::pair<std::string, int>> recent_;
  std::thread thread_;
};

// Current time as RFC 3339 with microseconds ("2024-05-01T12:30:00.123456Z"), for MicroTime
// fields (Lease renewTime, Event eventTime), and with whole seconds for metav1.Time fields.
std::string NowRfc3339Micro();
std::string NowRfc3339();

}  // namespace taas::kube
