// Records core/v1 Events about objects (what `kubectl describe` shows), like client-go's
// EventRecorder and EventCorrelator. Events are posted by a background thread so that reconcilers
// never wait for them, and cost the API server as few writes as possible:
//   - aggregation: events recorded close together (within the linger time, or while the previous
//     post was in flight) about the same object with the same type and reason become one Event
//     whose `count` is their number and whose message lists them ("Created pod: a, b, c");
//   - repeats: an event equal to one posted before (object, type, reason, message) is counted on
//     the existing Event (PATCH count/lastTimestamp) instead of creating a new one.
// The sum of `count` over a reason's Events is therefore the number of times it was recorded.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

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
                         const std::string& host, const std::string& now, int count = 1);

// One recorded event, and how many were aggregated into it.
struct RecordedEvent {
  ObjectReference ref;
  bool warning = false;
  std::string reason;
  std::string message;
  int count = 1;
};

// Aggregates events in arrival order: those about the same object (uid, or namespace/kind/name)
// with the same type and reason merge into the first of them, adding their counts; messages
// "P: x" and "P: y" with the same prefix P become "P: x, y", other messages are joined with "; ".
// A merged message never grows beyond `max_message` bytes: the next event starts a new group.
std::vector<RecordedEvent> AggregateEvents(std::vector<RecordedEvent> events,
                                           std::size_t max_message = 1024);

class EventRecorder {
 public:
  // client is not owned; `component` is source.component (e.g. "tfjob-controller"). The
  // background thread waits `linger` after the first of a burst of events before posting them,
  // so that the burst aggregates.
  EventRecorder(Client* client, std::string component, std::string host, Logger logger,
                std::chrono::milliseconds linger = std::chrono::milliseconds(200));
  ~EventRecorder();  // flushes what is queued, then stops
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Never blocks on the network; drops events beyond a bounded backlog (logging them).
  void Normal(const ObjectReference& ref, const std::string& reason, const std::string& message);
  void Warning(const ObjectReference& ref, const std::string& reason, const std::string& message);

  // Events posted or counted on an existing Event (an aggregate counts once), and events
  // recorded (each counts).
  std::uint64_t posted() const;
  std::uint64_t recorded() const;

 private:
  void Record(RecordedEvent event);
  void Run();
  void Post(const RecordedEvent& event);

  Client* client_;
  const std::string component_;
  const std::string host_;
  Logger logger_;
  const std::chrono::milliseconds linger_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RecordedEvent> queue_;  // guarded by mu_
  bool stopping_ = false;             // guarded by mu_
  std::uint64_t posted_ = 0;          // guarded by mu_
  std::uint64_t recorded_ = 0;        // guarded by mu_
  // Coalescing: key -> (event name in namespace, count), only touched by the thread.
  std::map<std::string, std::pair<std::string, int>> recent_;
  std::thread thread_;
};

// Current time as RFC 3339 with microseconds ("2024-05-01T12:30:00.123456Z"), for MicroTime
// fields (Lease renewTime, Event eventTime), and with whole seconds for metav1.Time fields.
std::string NowRfc3339Micro();
std::string NowRfc3339();

}  // namespace taas::kube
