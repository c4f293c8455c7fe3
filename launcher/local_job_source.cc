#include "local_job_source.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "job_result.h"
#include "taas/base/ascii.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/progress.h"
#include "taas/tfjob/rfc3339.h"
#include "taas/tfjob/serialization.h"
#include "taas/ui_server/views.h"

namespace taas::launcher {
namespace {

using nlohmann::json;

std::string Rfc3339(const std::optional<tfjob::Time>& time) {
  return time ? tfjob::FormatRfc3339(*time) : std::string();
}

// Whether `ns`/`name` (any name when empty) is the published job.
bool IsOurs(const LocalJobState::Snapshot& snapshot, const std::string& ns,
            const std::string& name = "") {
  return snapshot.published && ns == snapshot.job.metadata.namespace_name &&
         (name.empty() || name == snapshot.job.metadata.name);
}

absl::Status JobNotFound(const LocalJobState::Snapshot& snapshot, const std::string& ns,
                         const std::string& name) {
  return absl::NotFoundError("tfjob " + ns + "/" + name + " not found: this local run serves " +
                             snapshot.job.metadata.namespace_name + "/" +
                             snapshot.job.metadata.name + " only");
}

// The error every write answers, shown by the UI as it is.
absl::Status NotInLocalRun(const std::string& what) {
  return absl::UnimplementedError(
      what +
      " is not supported in a local run: `taas run` serves only its own job (stop it with "
      "Ctrl-C where it runs; submit other jobs with another `taas run` or to a cluster)");
}

// The exit a replica's process made, as a container's termination reason.
std::string ExitReason(const ReplicaProcess& r) {
  if (r.stopped) return "Stopped";
  return r.exit_code.value_or(0) == 0 ? "Completed" : "Error";
}

// The replica's reason and message, as the UI names a pod's most telling state: the exit of a
// finished replica, the back-off of one restarting in place, a restart behind a running one.
std::pair<std::string, std::string> ReasonOf(const ReplicaProcess& r) {
  const bool finished =
      r.phase == tfjob::ReplicaPhase::kSucceeded || r.phase == tfjob::ReplicaPhase::kFailed;
  if (r.running) {
    if (r.exit_code) return {"Restarted (last: " + ExitReason(r) + ")", ""};
    return {"", ""};
  }
  if (finished && r.exit_code) {
    return {ExitReason(r), r.stopped ? "stopped by the launcher" : ""};
  }
  if (r.restart_pending && r.starts > 0 && r.phase == tfjob::ReplicaPhase::kRunning) {
    // Restarted in place after a delay, as the kubelet does under OnFailure/Always.
    std::string reason = "CrashLoopBackOff";
    if (r.exit_code) reason += " (last: " + ExitReason(r) + ")";
    return {reason, "back-off restarting the exited process (exit code " +
                        std::to_string(r.exit_code.value_or(0)) + ")"};
  }
  return {"ContainerCreating", ""};
}

// What a replica of `type` asks of the machine: its template's default container's requests.
ui_server::Resources RequestsOf(const tfjob::TFJob& job, tfjob::ReplicaType type) {
  auto spec = job.spec.replica_specs.find(type);
  if (spec == job.spec.replica_specs.end()) return {};
  const json* container = tfjob::FindDefaultContainer(spec->second.pod_template);
  if (container == nullptr) return {};
  return ui_server::PodRequests({{"spec", {{"containers", json::array({*container})}}}});
}

bool Active(const ReplicaProcess& r) {
  return r.phase != tfjob::ReplicaPhase::kSucceeded && r.phase != tfjob::ReplicaPhase::kFailed;
}

ui_server::NodeUsage MachineNode(const LocalMachine& machine) {
  ui_server::NodeUsage node;
  node.name = machine.name;
  node.ready = true;
  node.capacity = {std::floor(machine.cpus), std::floor(machine.memory_bytes),
                   static_cast<double>(machine.gpus)};
  node.allocatable = node.capacity;
  return node;
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

ui_server::ReplicaRow LocalReplicaRow(const tfjob::TFJob& job, const ReplicaProcess& r,
                                      const std::string& node) {
  const auto [reason, message] = ReasonOf(r);
  ui_server::ReplicaRow row;
  row.name = r.name;
  row.replica_type = std::string(tfjob::ReplicaTypeKey(r.type));
  row.index = r.index;
  row.node = node;
  row.phase = std::string(tfjob::ToString(r.phase));
  row.reason = reason;
  row.message = message;
  row.ready = r.running && r.phase == tfjob::ReplicaPhase::kRunning;
  row.restarts = std::max(0, r.starts - 1);
  row.exit_code = r.exit_code;
  row.gpus = std::llround(RequestsOf(job, r.type).gpu);
  row.start_time = Rfc3339(r.started_at);
  return row;
}

ui_server::EventRow LocalEventRow(const LocalEvent& e) {
  return {e.warning ? "Warning" : "Normal",    e.reason, e.message,
          e.object_kind + "/" + e.object_name, 1,        tfjob::FormatRfc3339(e.time)};
}

tfjob::TFJob WithReport(tfjob::TFJob job, const std::vector<ReplicaProcess>& replicas,
                        const std::string& files_dir) {
  // A running replica may be writing its report: read one only once its process is gone. A
  // failed chief's counts only when it names its failure (its evaluation's error).
  std::string chief, evaluator;
  bool chief_failed = false;
  for (const ReplicaProcess& r : replicas) {
    if (r.running) continue;
    if (tfjob::IsMasterRole(job.spec, r.type, r.index) &&
        (r.phase == tfjob::ReplicaPhase::kSucceeded || r.phase == tfjob::ReplicaPhase::kFailed)) {
      chief = r.name;
      chief_failed = r.phase == tfjob::ReplicaPhase::kFailed;
    }
    if (tfjob::IsResultEvaluator(r.type, r.index)) evaluator = r.name;
  }
  if (chief.empty()) return job;
  const absl::StatusOr<job_report::JobReport> report = ReadJobResult(files_dir, chief, evaluator);
  if (!report.ok() || (chief_failed && report->error.empty())) return job;
  tfjob::JobProgress& progress = job.status.progress.emplace();
  progress.global_step = report->global_step;
  progress.final_metrics = report->final_metrics;
  progress.final_error = Utf8Prefix(report->error, tfjob::kMaxProgressErrorBytes);
  return job;
}

LocalJobSource::LocalJobSource(const LocalJobState* state, LocalMachine machine,
                               std::string files_dir)
    : state_(state), machine_(std::move(machine)), files_dir_(std::move(files_dir)) {}

json LocalJobSource::JobObject(const LocalJobState::Snapshot& snapshot) const {
  return tfjob::TFJobToJson(WithReport(snapshot.job, snapshot.replicas, files_dir_));
}

absl::StatusOr<std::vector<json>> LocalJobSource::ListJobObjects(const std::string& ns) {
  const LocalJobState::Snapshot snapshot = state_->Get();
  if (!IsOurs(snapshot, ns)) return std::vector<json>{};
  return std::vector<json>{JobObject(snapshot)};
}

absl::StatusOr<std::vector<ui_server::JobRecord>> LocalJobSource::ListJobs(const std::string& ns) {
  const LocalJobState::Snapshot snapshot = state_->Get();
  if (!IsOurs(snapshot, ns)) return std::vector<ui_server::JobRecord>{};
  ui_server::JobRecord record{JobObject(snapshot), {}};
  for (const ReplicaProcess& r : snapshot.replicas) {
    record.replicas.push_back(LocalReplicaRow(snapshot.job, r, machine_.name));
  }
  return std::vector<ui_server::JobRecord>{std::move(record)};
}

absl::StatusOr<ui_server::JobDetail> LocalJobSource::GetJob(const std::string& ns,
                                                            const std::string& name) {
  const LocalJobState::Snapshot snapshot = state_->Get();
  if (!IsOurs(snapshot, ns, name)) return JobNotFound(snapshot, ns, name);
  ui_server::JobDetail detail;
  detail.record.tfjob = JobObject(snapshot);
  for (const ReplicaProcess& r : snapshot.replicas) {
    detail.record.replicas.push_back(LocalReplicaRow(snapshot.job, r, machine_.name));
  }
  // Oldest first: the launcher adds an event when it notices a happening, not always in order.
  std::vector<LocalEvent> events = snapshot.events;
  std::stable_sort(events.begin(), events.end(),
                   [](const LocalEvent& a, const LocalEvent& b) { return a.time < b.time; });
  for (const LocalEvent& e : events) detail.events.push_back(LocalEventRow(e));
  return detail;
}

absl::StatusOr<json> LocalJobSource::CreateJob(const std::string&, const json&, bool) {
  return NotInLocalRun("creating a TFJob");  // a clone is a create too
}

absl::Status LocalJobSource::DeleteJob(const std::string&, const std::string&) {
  return NotInLocalRun("deleting the TFJob");
}

absl::Status LocalJobSource::FindReplica(const std::string& ns, const std::string& job,
                                         const std::string& replica) {
  const LocalJobState::Snapshot snapshot = state_->Get();
  if (!IsOurs(snapshot, ns, job)) return JobNotFound(snapshot, ns, job);
  for (const ReplicaProcess& r : snapshot.replicas) {
    if (r.name == replica) return absl::OkStatus();
  }
  return absl::NotFoundError("replica " + replica + " is not one of the job's");
}

absl::StatusOr<std::string> LocalJobSource::Logs(const ui_server::LogRequest& request) {
  TAAS_RETURN_IF_ERROR(FindReplica(request.namespace_name, request.job, request.replica));
  return state_->LogTail(
      request.replica,
      static_cast<int>(std::min<std::int64_t>(request.tail_lines, std::numeric_limits<int>::max())),
      static_cast<std::size_t>(request.window_bytes));
}

absl::Status LocalJobSource::FollowLogs(const ui_server::LogRequest& request,
                                        const std::function<bool(std::string_view)>& on_chunk,
                                        Cancellation* cancel) {
  TAAS_RETURN_IF_ERROR(FindReplica(request.namespace_name, request.job, request.replica));
  const int tail =
      static_cast<int>(std::min<std::int64_t>(request.tail_lines, std::numeric_limits<int>::max()));
  return state_->FollowLog(
      request.replica, tail,
      [&](std::string_view chunk) {
        return (cancel == nullptr || !cancel->cancelled()) && on_chunk(chunk);
      },
      static_cast<std::size_t>(request.window_bytes));
}

absl::StatusOr<std::vector<ui_server::NodeUsage>> LocalJobSource::Nodes() {
  return std::vector<ui_server::NodeUsage>{MachineNode(machine_)};
}

absl::StatusOr<ui_server::ClusterPage> LocalJobSource::Cluster(
    const std::vector<std::string>& namespaces) {
  const LocalJobState::Snapshot snapshot = state_->Get();
  ui_server::NodeUsage node = MachineNode(machine_);
  const bool shown = std::find(namespaces.begin(), namespaces.end(),
                               snapshot.job.metadata.namespace_name) != namespaces.end();
  for (const ReplicaProcess& r : snapshot.replicas) {
    if (!snapshot.published || !shown || !Active(r)) continue;
    const ui_server::Resources asked = RequestsOf(snapshot.job, r.type);
    node.in_use.cpu += asked.cpu;
    node.in_use.memory += asked.memory;
    node.in_use.gpu += asked.gpu;
    ++node.pods;
  }
  ui_server::ClusterPage page;  // no pending replicas here: every replica runs or waits to restart
  page.nodes = {node};
  return page;
}

}  // namespace taas::launcher
