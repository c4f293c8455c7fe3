// The web UI's view of Kubernetes (taas::ui_server::KubeApi) over a local run: the launcher's one
// job appears as a TFJob (its spec, and the status the launcher computed with the shared
// taas::tfjob rules), each replica process as a pod `{job}-{type}-{index}` on the node
// "localhost", the launcher's happenings as Events, the captured output as pod logs, and this
// machine as the only node. It only answers what the UI server asks (the paths in
// web-ui/server/api.cc and metrics.cc); creating, cloning and deleting jobs answers a 405
// Status "not supported in a local run", which the UI shows as the request's error.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "local_job_state.h"
#include "taas/ui_server/kube_api.h"

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

class LocalKubeApi : public ui_server::KubeApi {
 public:
  // `state` is not owned and must outlive this object. Thread-safe (state is).
  LocalKubeApi(const LocalJobState* state, LocalMachine machine);

  absl::StatusOr<nlohmann::json> Get(const std::string& path) override;
  absl::StatusOr<nlohmann::json> Post(const std::string& path, const nlohmann::json& body) override;
  absl::StatusOr<nlohmann::json> Delete(const std::string& path) override;
  absl::StatusOr<std::string> GetText(const std::string& path) override;
  // Ends at the next chunk once `cancel` is cancelled.
  absl::Status StreamText(const std::string& path,
                          const std::function<bool(std::string_view)>& on_chunk,
                          kube::Cancellation* cancel) override;

 private:
  const LocalJobState* state_;
  const LocalMachine machine_;
};

// The Kubernetes objects, from a snapshot (pure; exposed for tests).
nlohmann::json LocalTfJobObject(const LocalJobState::Snapshot& snapshot);
nlohmann::json LocalPodObject(const tfjob::TFJob& job, const ReplicaProcess& replica,
                              const std::string& node);
nlohmann::json LocalEventObject(const std::string& namespace_name, const LocalEvent& event,
                                int sequence);
nlohmann::json LocalNodeObject(const LocalMachine& machine);

}  // namespace taas::launcher
