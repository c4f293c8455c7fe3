// The web UI's JobSource (taas::ui_server) over a local run: the launcher's one job, read from
// LocalJobState. The job is the TFJob the launcher runs (its spec, and the status it computed
// with the shared taas::tfjob rules); each replica process is a replica row on this machine; the
// launcher's happenings are the job's events; the captured output is each replica's log; this
// machine is the cluster's only node. Creating, cloning and deleting jobs answer Unimplemented
// ("not supported in a local run"), which the UI shows as the request's error (405).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local_job_state.h"
#include "taas/ui_server/job_source.h"

namespace taas::launcher {

// The local machine as a node: CPU cores, memory bytes, and GPUs (0 unless told otherwise).
struct LocalMachine {
  std::string name = "localhost";
  double cpus = 1;
  double memory_bytes = 0;
  int gpus = 0;

  // Cores and physical memory of this machine.
  static LocalMachine Detect(int gpus);
};

class LocalJobSource : public ui_server::JobSource {
 public:
  // `state` is not owned and must outlive this object. Thread-safe (state is). `files_dir`: the
  // folder of the replicas' files (ReplicaFilesDir, job_result.h), where the chief leaves its
  // report: once the chief has finished, the job's status.progress carries the report's final
  // metrics and step (WithReport).
  LocalJobSource(const LocalJobState* state, LocalMachine machine, std::string files_dir);

  absl::StatusOr<std::vector<nlohmann::json>> ListJobObjects(
      const std::string& namespace_name) override;
  absl::StatusOr<std::vector<ui_server::JobRecord>> ListJobs(
      const std::string& namespace_name) override;
  absl::StatusOr<ui_server::JobDetail> GetJob(const std::string& namespace_name,
                                              const std::string& name) override;
  absl::StatusOr<nlohmann::json> CreateJob(const std::string& namespace_name,
                                           const nlohmann::json& tfjob, bool dry_run) override;
  absl::Status DeleteJob(const std::string& namespace_name, const std::string& name) override;
  absl::Status FindReplica(const std::string& namespace_name, const std::string& job,
                           const std::string& replica) override;
  // The last `tail_lines` lines kept of the replica's output within `window_bytes` (the newest;
  // the oldest shown cut behind the marker when it does not fit). `previous` has no meaning
  // here: a restarted replica's output is one log.
  absl::StatusOr<std::string> Logs(const ui_server::LogRequest& request) override;
  // Ends when the replica has no process and none coming, the state is closed, or at the next
  // line once `cancel` is cancelled.
  absl::Status FollowLogs(const ui_server::LogRequest& request,
                          const std::function<bool(std::string_view)>& on_chunk,
                          Cancellation* cancel) override;
  absl::StatusOr<std::vector<ui_server::NodeUsage>> Nodes() override;
  // This machine, with what the job's live replicas ask of it; nothing is ever pending.
  absl::StatusOr<ui_server::ClusterPage> Cluster(
      const std::vector<std::string>& namespaces) override;

 private:
  // The published job with its chief's report (WithReport), as the UI serves it.
  nlohmann::json JobObject(const LocalJobState::Snapshot& snapshot) const;

  const LocalJobState* state_;
  const LocalMachine machine_;
  const std::string files_dir_;
};

// The rows of a snapshot (pure; exposed for tests).
ui_server::ReplicaRow LocalReplicaRow(const tfjob::TFJob& job, const ReplicaProcess& replica,
                                      const std::string& node);
ui_server::EventRow LocalEventRow(const LocalEvent& event);

// `job` with the chief's report in its status.progress (global step and final metrics) once the
// chief (tfjob::IsMasterRole) has finished and left a report that ReadJobReport accepts in
// `files_dir`; else `job` as it is (no report yet, or a bad one: the console says why at the end).
tfjob::TFJob WithReport(tfjob::TFJob job, const std::vector<ReplicaProcess>& replicas,
                        const std::string& files_dir);

}  // namespace taas::launcher
