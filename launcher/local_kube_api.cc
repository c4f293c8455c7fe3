#include "local_kube_api.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <thread>
#include <vector>

#include "taas/tfjob/labels.h"
#include "taas/tfjob/rfc3339.h"
#include "taas/tfjob/serialization.h"
#include "taas/ui_server/api.h"

namespace taas::launcher {
namespace {

using nlohmann::json;

struct Request {
  std::vector<std::string> segments;
  std::map<std::string, std::string> query;
};

Request ParsePath(const std::string& path) {
  Request request;
  const std::size_t question = path.find('?');
  const std::string route = path.substr(0, question);
  std::size_t start = 0;
  while (start <= route.size()) {
    std::size_t end = route.find('/', start);
    if (end == std::string::npos) end = route.size();
    if (end > start) {
      request.segments.push_back(
          ui_server::PercentDecode(route.substr(start, end - start), false).value_or(""));
    }
    start = end + 1;
  }
  if (question != std::string::npos) {
    std::string_view query = std::string_view(path).substr(question + 1);
    while (!query.empty()) {
      const std::size_t amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      const std::size_t eq = pair.find('=');
      const auto key = ui_server::PercentDecode(pair.substr(0, eq), true);
      const auto value = ui_server::PercentDecode(
          eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
      if (key && value) request.query[*key] = *value;
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  return request;
}

// The string at a dotted path ("status.phase") of an object, "" when absent.
std::string FieldValue(const json& object, const std::string& dotted) {
  const json* at = &object;
  std::size_t start = 0;
  while (start <= dotted.size()) {
    std::size_t end = dotted.find('.', start);
    if (end == std::string::npos) end = dotted.size();
    const std::string key = dotted.substr(start, end - start);
    if (!at->is_object() || !at->contains(key)) return "";
    at = &(*at)[key];
    start = end + 1;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

// A list filtered by a field selector ("status.phase!=Succeeded,reason=FailedScheduling").
json ListOf(std::string_view kind, std::vector<json> items, const Request& request) {
  if (auto it = request.query.find("fieldSelector"); it != request.query.end()) {
    std::vector<std::pair<std::string, std::string>> equal, not_equal;
    std::size_t start = 0;
    const std::string& selector = it->second;
    while (start < selector.size()) {
      std::size_t end = selector.find(',', start);
      if (end == std::string::npos) end = selector.size();
      const std::string term = selector.substr(start, end - start);
      if (const auto ne = term.find("!="); ne != std::string::npos) {
        not_equal.emplace_back(term.substr(0, ne), term.substr(ne + 2));
      } else if (const auto eq = term.find('='); eq != std::string::npos) {
        const std::size_t value = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
        equal.emplace_back(term.substr(0, eq), term.substr(value));
      }
      start = end + 1;
    }
    items.erase(std::remove_if(items.begin(), items.end(),
                               [&](const json& item) {
                                 for (const auto& [field, value] : equal) {
                                   if (FieldValue(item, field) != value) return true;
                                 }
                                 for (const auto& [field, value] : not_equal) {
                                   if (FieldValue(item, field) == value) return true;
                                 }
                                 return false;
                               }),
                items.end());
  }
  return {{"apiVersion", "v1"},
          {"kind", std::string(kind)},
          {"metadata", json::object()},
          {"items", std::move(items)}};
}

absl::Status NotFound(const std::string& resource, const std::string& name) {
  return absl::NotFoundError(resource + " \"" + name + "\" not found");
}

// The error every write answers: a Kubernetes Status (code 405) the UI shows as it is.
absl::Status NotInLocalRun(const std::string& what) {
  const std::string message =
      what +
      " is not supported in a local run: `taas run` serves only its own job (stop it with "
      "Ctrl-C where it runs; submit other jobs with another `taas run` or to a cluster)";
  absl::Status status = absl::UnimplementedError(message);
  const json kube = {{"kind", "Status"},   {"apiVersion", "v1"},           {"status", "Failure"},
                     {"message", message}, {"reason", "MethodNotAllowed"}, {"code", 405}};
  status.SetPayload(
      absl::string_view(ui_server::kKubeStatusPayload.data(), ui_server::kKubeStatusPayload.size()),
      absl::Cord(kube.dump()));
  return status;
}

std::string Rfc3339(const std::optional<tfjob::Time>& time) {
  return time ? tfjob::FormatRfc3339(*time) : std::string();
}

}  // namespace

LocalMachine LocalMachine::Detect(int gpus) {
  LocalMachine machine;
  machine.cpus = std::max(1u, std::thread::hardware_concurrency());
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) {
    machine.memory_bytes = static_cast<double>(pages) * static_cast<double>(page_size);
  }
  machine.gpus = gpus;
  return machine;
}

json LocalTfJobObject(const LocalJobState::Snapshot& snapshot) {
  return tfjob::TFJobToJson(snapshot.job);
}

json LocalPodObject(const tfjob::TFJob& job, const ReplicaProcess& r, const std::string& node) {
  const std::string ns = job.metadata.namespace_name;
  json labels = json::object();
  for (const auto& [key, value] :
       tfjob::ReplicaLabels(job.spec, job.metadata.name, r.type, r.index)) {
    labels[key] = value;
  }
  json container = {{"name", tfjob::kDefaultContainerName}};
  if (auto spec = job.spec.replica_specs.find(r.type); spec != job.spec.replica_specs.end()) {
    if (const json* declared = tfjob::FindDefaultContainer(spec->second.pod_template)) {
      for (const char* key : {"image", "resources"}) {
        if (declared->contains(key)) container[key] = (*declared)[key];
      }
    }
  }
  container["ports"] = json::array({{{"name", "metrics"}, {"containerPort", r.metrics_port}}});

  auto terminated = [&](bool with_times) {
    const int code = r.exit_code.value_or(0);
    json t = {{"exitCode", code},
              {"reason", r.stopped   ? "Stopped"
                         : code == 0 ? "Completed"
                                     : "Error"}};
    if (r.stopped) t["message"] = "stopped by the launcher";
    if (with_times && r.started_at) t["startedAt"] = Rfc3339(r.started_at);
    if (r.finished_at) t["finishedAt"] = Rfc3339(r.finished_at);
    return t;
  };
  const bool finished =
      r.phase == tfjob::ReplicaPhase::kSucceeded || r.phase == tfjob::ReplicaPhase::kFailed;
  json state, last_state = json::object();
  if (r.running) {
    state = {{"running", {{"startedAt", Rfc3339(r.started_at)}}}};
    if (r.exit_code) last_state = {{"terminated", terminated(false)}};
  } else if (finished && r.exit_code) {
    state = {{"terminated", terminated(true)}};
  } else if (r.restart_pending && r.starts > 0 && r.phase == tfjob::ReplicaPhase::kRunning) {
    // Restarted in place after a delay, as the kubelet does under OnFailure/Always.
    state = {{"waiting",
              {{"reason", "CrashLoopBackOff"},
               {"message", "back-off restarting the exited process (exit code " +
                               std::to_string(r.exit_code.value_or(0)) + ")"}}}};
    if (r.exit_code) last_state = {{"terminated", terminated(false)}};
  } else {
    state = {{"waiting", {{"reason", "ContainerCreating"}}}};
    if (r.exit_code) last_state = {{"terminated", terminated(false)}};
  }
  json status = {{"phase", std::string(tfjob::ToString(r.phase))},
                 {"hostIP", "127.0.0.1"},
                 {"podIP", "127.0.0.1"},
                 {"containerStatuses", json::array({{{"name", tfjob::kDefaultContainerName},
                                                     {"ready", r.running},
                                                     {"restartCount", std::max(0, r.starts - 1)},
                                                     {"state", state},
                                                     {"lastState", last_state}}})}};
  if (r.started_at) status["startTime"] = Rfc3339(r.started_at);
  json metadata = {{"name", r.name},
                   {"namespace", ns},
                   {"labels", labels},
                   {"ownerReferences", json::array({{{"apiVersion", tfjob::kApiVersion},
                                                     {"kind", tfjob::kKind},
                                                     {"name", job.metadata.name},
                                                     {"controller", true}}})}};
  if (job.metadata.creation_timestamp) {
    metadata["creationTimestamp"] = Rfc3339(job.metadata.creation_timestamp);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", metadata},
          {"spec", {{"nodeName", node}, {"containers", json::array({container})}}},
          {"status", status}};
}

json LocalEventObject(const std::string& ns, const LocalEvent& e, int sequence) {
  const std::string time = tfjob::FormatRfc3339(e.time);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata",
           {{"name", e.object_name + "." + std::to_string(sequence)},
            {"namespace", ns},
            {"creationTimestamp", time}}},
          {"involvedObject", {{"kind", e.object_kind}, {"name", e.object_name}, {"namespace", ns}}},
          {"type", e.warning ? "Warning" : "Normal"},
          {"reason", e.reason},
          {"message", e.message},
          {"count", 1},
          {"firstTimestamp", time},
          {"lastTimestamp", time},
          {"source", {{"component", "taas-launcher"}}}};
}

json LocalNodeObject(const LocalMachine& machine) {
  const json resources = {{"cpu", std::to_string(static_cast<long long>(machine.cpus))},
                          {"memory", std::to_string(static_cast<long long>(machine.memory_bytes))},
                          {"nvidia.com/gpu", std::to_string(machine.gpus)},
                          {"pods", "110"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", machine.name}, {"labels", {{"kubernetes.io/hostname", machine.name}}}}},
          {"spec", json::object()},
          {"status",
           {{"capacity", resources},
            {"allocatable", resources},
            {"conditions", json::array({{{"type", "Ready"},
                                         {"status", "True"},
                                         {"reason", "LocalRun"},
                                         {"message", "the machine taas run runs on"}}})}}}};
}

LocalKubeApi::LocalKubeApi(const LocalJobState* state, LocalMachine machine)
    : state_(state), machine_(std::move(machine)) {}

absl::StatusOr<json> LocalKubeApi::Get(const std::string& path) {
  const Request request = ParsePath(path);
  const auto& s = request.segments;
  const LocalJobState::Snapshot snapshot = state_->Get();
  const std::string ns = snapshot.job.metadata.namespace_name;
  auto pods = [&](const std::string& in_namespace) {
    std::vector<json> items;
    if (!snapshot.published || in_namespace != ns) return items;
    for (const ReplicaProcess& r : snapshot.replicas) {
      items.push_back(LocalPodObject(snapshot.job, r, machine_.name));
    }
    return items;
  };
  // /apis/kubeflow.org/v1/namespaces/{ns}/tfjobs[/{name}]
  if (s.size() >= 6 && s[0] == "apis" && s[1] == tfjob::kGroup && s[2] == tfjob::kVersion &&
      s[3] == "namespaces" && s[5] == tfjob::kPlural) {
    const bool ours = snapshot.published && s[4] == ns;
    if (s.size() == 6) {
      std::vector<json> items;
      if (ours) items.push_back(LocalTfJobObject(snapshot));
      json list = ListOf("TFJobList", std::move(items), request);
      list["apiVersion"] = tfjob::kApiVersion;
      return list;
    }
    if (s.size() == 7) {
      if (!ours || s[6] != snapshot.job.metadata.name) {
        return NotFound("tfjobs.kubeflow.org", s[6]);
      }
      return LocalTfJobObject(snapshot);
    }
  }
  if (s.size() >= 3 && s[0] == "api" && s[1] == "v1") {
    if (s[2] == "nodes" && s.size() == 3) {
      return ListOf("NodeList", {LocalNodeObject(machine_)}, request);
    }
    if (s[2] == "nodes" && s.size() == 4) {
      if (s[3] != machine_.name) return NotFound("nodes", s[3]);
      return LocalNodeObject(machine_);
    }
    if (s[2] == "pods" && s.size() == 3) return ListOf("PodList", pods(ns), request);
    if (s[2] == "namespaces" && s.size() == 5 && s[4] == "pods") {
      return ListOf("PodList", pods(s[3]), request);
    }
    if (s[2] == "namespaces" && s.size() == 6 && s[4] == "pods") {
      for (json& pod : pods(s[3])) {
        if (pod["metadata"]["name"] == s[5]) return pod;
      }
      return NotFound("pods", s[5]);
    }
    if (s[2] == "namespaces" && s.size() == 5 && s[4] == "events") {
      std::vector<json> items;
      if (snapshot.published && s[3] == ns) {
        int sequence = 0;
        for (const LocalEvent& e : snapshot.events) {
          items.push_back(LocalEventObject(ns, e, ++sequence));
        }
      }
      return ListOf("EventList", std::move(items), request);
    }
  }
  return absl::NotFoundError("the local run does not serve " + path.substr(0, path.find('?')));
}

absl::StatusOr<json> LocalKubeApi::Post(const std::string&, const json&) {
  return NotInLocalRun("creating a TFJob");  // a clone is a create too
}

absl::StatusOr<json> LocalKubeApi::Delete(const std::string&) {
  return NotInLocalRun("deleting the TFJob");
}

namespace {

// The replica of a `/api/v1/namespaces/{ns}/pods/{pod}/log` path and its tailLines (0: all).
absl::StatusOr<std::pair<std::string, int>> LogRequest(const std::string& path,
                                                       const std::string& job_namespace) {
  const Request request = ParsePath(path);
  const auto& s = request.segments;
  if (!(s.size() == 7 && s[0] == "api" && s[1] == "v1" && s[2] == "namespaces" && s[4] == "pods" &&
        s[6] == "log")) {
    return absl::NotFoundError("the local run does not serve " + path.substr(0, path.find('?')));
  }
  if (s[3] != job_namespace) return NotFound("pods", s[5]);
  int tail = 0;
  if (auto it = request.query.find("tailLines"); it != request.query.end()) {
    tail = std::max(0, std::atoi(it->second.c_str()));
  }
  return std::make_pair(s[5], tail);
}

}  // namespace

absl::StatusOr<std::string> LocalKubeApi::GetText(const std::string& path) {
  TAAS_ASSIGN_OR_RETURN(auto log, LogRequest(path, state_->Get().job.metadata.namespace_name));
  return state_->LogTail(log.first, log.second);
}

absl::Status LocalKubeApi::StreamText(const std::string& path,
                                      const std::function<bool(std::string_view)>& on_chunk,
                                      kube::Cancellation* cancel) {
  TAAS_ASSIGN_OR_RETURN(auto log, LogRequest(path, state_->Get().job.metadata.namespace_name));
  return state_->FollowLog(log.first, log.second, [&](std::string_view chunk) {
    return (cancel == nullptr || !cancel->cancelled()) && on_chunk(chunk);
  });
}

}  // namespace taas::launcher
