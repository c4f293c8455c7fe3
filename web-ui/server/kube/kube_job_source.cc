#include "taas/ui_kube/kube_job_source.h"

#include <algorithm>
#include <map>

#include "taas/base/json_fields.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/tfjob.h"
#include "taas/ui_kube/views.h"
#include "taas/ui_server/job_form.h"
#include "taas/ui_server/log_window.h"

namespace taas::ui_kube {
namespace {

using nlohmann::json;
namespace jf = taas::json_fields;

// The items of a Kubernetes list; empty when it has none (or they are not an array).
const json& ItemsOf(const json& list) {
  static const json kEmpty = json::array();  // NOLINT: an immutable empty value, not state.
  const json* items = jf::Array(list, "items");
  return items ? *items : kEmpty;
}

std::string NameOf(const json& object) {
  const json* metadata = jf::Object(object, "metadata");
  return metadata ? jf::StringOr(*metadata, "name", "") : "";
}

std::string PodsPath(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/pods"; }

// A path of Kueue's API: `rest` is "/clusterqueues" or "/namespaces/{ns}/{resource}".
std::string KueuePath(const std::string& rest) {
  return "/apis/" + std::string(tfjob::kKueueApi) + rest;
}

// The container whose log is shown: `tensorflow` (the TFJob's), else the pod's first.
std::string LogContainer(const json& pod) {
  std::string container;
  const json* spec = jf::Object(pod, "spec");
  const json* containers = spec ? jf::Array(*spec, "containers") : nullptr;
  for (const json& c : containers ? *containers : json::array()) {
    const std::string name = jf::StringOr(c, "name", "");
    if (container.empty() || name == tfjob::kDefaultContainerName) container = name;
  }
  return container;
}

}  // namespace

KubeJobSource::KubeJobSource(KubeApi* kube) : kube_(kube) {}

absl::StatusOr<std::vector<json>> KubeJobSource::ListJobObjects(const std::string& ns) {
  TAAS_ASSIGN_OR_RETURN(const json jobs, kube_->Get(tfjob::TFJobsPath(ns)));
  const json& items = ItemsOf(jobs);
  return std::vector<json>(items.begin(), items.end());
}

absl::StatusOr<std::vector<ui_server::JobRecord>> KubeJobSource::ListJobs(const std::string& ns) {
  TAAS_ASSIGN_OR_RETURN(const std::vector<json> jobs, ListJobObjects(ns));
  TAAS_ASSIGN_OR_RETURN(const json pods, kube_->Get(PodsPath(ns)));
  std::map<std::string, std::vector<ui_server::ReplicaRow>> by_job;
  for (const json& pod : ItemsOf(pods)) {
    const std::string job = JobNameOfPod(pod);
    if (!job.empty()) by_job[job].push_back(PodView(pod));
  }
  std::vector<ui_server::JobRecord> records;
  for (const json& job : jobs) records.push_back({job, by_job[NameOf(job)]});
  return records;
}

absl::StatusOr<ui_server::JobDetail> KubeJobSource::GetJob(const std::string& ns,
                                                           const std::string& name) {
  ui_server::JobDetail detail;
  TAAS_ASSIGN_OR_RETURN(detail.record.tfjob, kube_->Get(tfjob::TFJobPath(ns, name)));
  TAAS_ASSIGN_OR_RETURN(const json pods, kube_->Get(PodsPath(ns)));
  std::vector<std::string> pod_names;
  for (const json& pod : ItemsOf(pods)) {
    if (PodBelongsToJob(pod, name)) {
      detail.record.replicas.push_back(PodView(pod));
      pod_names.push_back(NameOf(pod));
    }
  }
  TAAS_ASSIGN_OR_RETURN(const json events, kube_->Get("/api/v1/namespaces/" + ns + "/events"));
  detail.events = EventsView(events, name, pod_names);
  detail.waiting = Waiting(ns, name, detail.record);
  return detail;
}

std::optional<ui_server::Waiting> KubeJobSource::Waiting(const std::string& ns,
                                                         const std::string& name,
                                                         const ui_server::JobRecord& record) {
  // A job the TFJob rules cannot read waits for nothing: no operator runs it (its row says so).
  const auto job = tfjob::TFJobFromJson(record.tfjob);
  if (!job.ok()) return std::nullopt;
  // The queue's and the gang scheduler's objects are read only when they can tell something (a
  // queued job, a replica without a node), and only where their API is served: any error (the
  // API or the object absent, no permission) leaves them out.
  json workloads = nullptr;
  if (auto queue = job->metadata.labels.find(std::string(tfjob::kLabelKueueQueueName));
      queue != job->metadata.labels.end() && !queue->second.empty()) {
    // Only the job's own Workload (Kueue labels it with the job's uid), not the namespace's
    // every Workload on each poll of the page; a uid that is not one cannot be a query.
    const std::string& uid = job->metadata.uid;
    std::string path = KueuePath("/namespaces/" + ns + "/workloads");
    if (!uid.empty() && uid.size() <= 64 &&
        uid.find_first_not_of("0123456789abcdefABCDEF-") == std::string::npos) {
      // '/' and '.' may stand in a query as they are; '=' is escaped as in a field selector.
      path += "?labelSelector=" + std::string(tfjob::kLabelKueueJobUid) + "%3D" + uid;
    }
    auto listed = kube_->Get(path);
    if (listed.ok()) workloads = *std::move(listed);
  }
  json pod_group = nullptr;
  if (std::any_of(record.replicas.begin(), record.replicas.end(), ReplicaUnplaced)) {
    for (const std::string& api :
         {std::string(tfjob::kSchedulerPluginsApi), std::string(tfjob::kVolcanoApi)}) {
      auto group = kube_->Get("/apis/" + api + "/namespaces/" + ns + "/podgroups/" + name);
      if (group.ok()) {
        pod_group = *std::move(group);
        break;
      }
    }
  }
  return WaitingOf(*job, record.replicas, workloads, pod_group);
}

absl::StatusOr<json> KubeJobSource::CreateJob(const std::string& ns, const json& tfjob,
                                              bool dry_run) {
  return kube_->Post(tfjob::TFJobsPath(ns) + (dry_run ? "?dryRun=All" : ""), tfjob);
}

absl::Status KubeJobSource::DeleteJob(const std::string& ns, const std::string& name) {
  return kube_->Delete(tfjob::TFJobPath(ns, name)).status();
}

absl::StatusOr<json> KubeJobSource::ReplicaPod(const std::string& ns, const std::string& job,
                                               const std::string& replica) {
  TAAS_ASSIGN_OR_RETURN(json pod, kube_->Get(PodsPath(ns) + "/" + replica));
  if (!PodBelongsToJob(pod, job)) {
    return absl::NotFoundError("pod " + replica + " is not a replica of TFJob " + job);
  }
  return pod;
}

absl::Status KubeJobSource::FindReplica(const std::string& ns, const std::string& job,
                                        const std::string& replica) {
  return ReplicaPod(ns, job, replica).status();
}

absl::StatusOr<std::string> KubeJobSource::LogPath(const ui_server::LogRequest& request,
                                                   bool follow) {
  TAAS_ASSIGN_OR_RETURN(const json pod,
                        ReplicaPod(request.namespace_name, request.job, request.replica));
  const std::string container = LogContainer(pod);
  std::string path = PodsPath(request.namespace_name) + "/" + request.replica +
                     "/log?tailLines=" + std::to_string(request.tail_lines);
  // Not for an answer: the API server's limitBytes keeps the first bytes, and the end is what a
  // reader looks for (Logs keeps it, in the window). A followed stream ends after them, as asked.
  if (follow && request.limit_bytes) {
    path += "&limitBytes=" + std::to_string(*request.limit_bytes);
  }
  // The name goes into the query as it is: only a name Kubernetes could have.
  if (ui_server::IsDns1123Subdomain(container)) path += "&container=" + container;
  if (request.previous) path += "&previous=true";
  if (follow) path += "&follow=true";
  return path;
}

absl::StatusOr<std::string> KubeJobSource::Logs(const ui_server::LogRequest& request) {
  TAAS_ASSIGN_OR_RETURN(const std::string path, LogPath(request, /*follow=*/false));
  // Streamed through the window, which holds at most about twice its size whatever the lines;
  // the kubelet's tail of one log file bounds what is read.
  ui_server::LogWindow window(static_cast<std::size_t>(request.window_bytes),
                              static_cast<std::size_t>(request.tail_lines));
  TAAS_RETURN_IF_ERROR(kube_->StreamText(
      path,
      [&](std::string_view chunk) {
        window.Feed(chunk);
        return true;
      },
      nullptr, /*follow=*/false));
  return window.Text();
}

absl::Status KubeJobSource::FollowLogs(const ui_server::LogRequest& request,
                                       const std::function<bool(std::string_view)>& on_chunk,
                                       Cancellation* cancel) {
  TAAS_ASSIGN_OR_RETURN(const std::string path, LogPath(request, /*follow=*/true));
  ui_server::LineCutter cutter(static_cast<std::size_t>(request.window_bytes));
  bool stopped = false;
  TAAS_RETURN_IF_ERROR(kube_->StreamText(
      path,
      [&](std::string_view chunk) {
        const std::string lines = cutter.Feed(chunk);
        stopped = !lines.empty() && !on_chunk(lines);
        return !stopped;
      },
      cancel, /*follow=*/true));
  if (stopped || (cancel != nullptr && cancel->cancelled())) return absl::OkStatus();
  // The stream ended: its last line, if it had no newline.
  if (const std::string rest = cutter.Finish(); !rest.empty()) on_chunk(rest);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ui_server::NodeUsage>> KubeJobSource::Nodes() {
  TAAS_ASSIGN_OR_RETURN(const json nodes, kube_->Get("/api/v1/nodes"));
  return NodesOf(nodes);
}

absl::StatusOr<ui_server::ClusterPage> KubeJobSource::Cluster(
    const std::vector<std::string>& namespaces) {
  TAAS_ASSIGN_OR_RETURN(const ClusterObjects objects, kube_->ListClusterObjects(namespaces));
  ui_server::ClusterPage page =
      ClusterPageOf(objects.nodes, objects.active_pods, objects.job_pods, objects.events);
  page.queues = Queues(namespaces);
  return page;
}

std::optional<ui_server::QueuesView> KubeJobSource::Queues(
    const std::vector<std::string>& namespaces) {
  // Whether Kueue is installed, from discovery (which every authenticated user may read): a
  // list refused for want of permission would not tell an absent API from a forbidden one.
  auto served = kube_->Get(KueuePath(""));
  if (absl::IsNotFound(served.status())) return std::nullopt;  // Kueue is not installed
  ui_server::QueuesView page;
  if (!served.ok()) {
    page.error = "cannot tell whether Kueue is installed: " + served.status().ToString();
    return page;
  }
  // A handful of objects, read at most once per cluster-page period: plain lists, no informers.
  auto cluster_queues = kube_->Get(KueuePath("/clusterqueues"));
  if (absl::IsNotFound(cluster_queues.status())) return std::nullopt;  // no ClusterQueue resource
  if (!cluster_queues.ok()) {
    page.error = "cannot list Kueue's ClusterQueues: " + cluster_queues.status().ToString();
    return page;
  }
  json local_queues = {{"items", json::array()}};
  for (const std::string& ns : namespaces) {
    auto listed = kube_->Get(KueuePath("/namespaces/" + ns + "/localqueues"));
    if (!listed.ok()) {
      page.error = "cannot list Kueue's LocalQueues in " + ns + ": " + listed.status().ToString();
      continue;
    }
    for (const json& q : ItemsOf(*listed)) local_queues["items"].push_back(q);
  }
  ui_server::QueuesView read = QueuesOf(*cluster_queues, local_queues);
  read.error = std::move(page.error);
  return read;
}

}  // namespace taas::ui_kube
