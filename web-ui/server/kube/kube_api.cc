#include "taas/ui_kube/kube_api.h"

#include "taas/base/json_fields.h"
#include "taas/ui_kube/views.h"

namespace taas::ui_kube {

absl::StatusOr<ClusterObjects> KubeApi::ListClusterObjects(
    const std::vector<std::string>& namespaces) {
  ClusterObjects out;
  TAAS_ASSIGN_OR_RETURN(out.nodes, Get("/api/v1/nodes"));
  TAAS_ASSIGN_OR_RETURN(
      out.active_pods,
      Get("/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed"));
  for (const std::string& ns : namespaces) {
    TAAS_ASSIGN_OR_RETURN(const nlohmann::json pods, Get("/api/v1/namespaces/" + ns + "/pods"));
    if (const nlohmann::json* items = json_fields::Array(pods, "items")) {
      for (const nlohmann::json& pod : *items) {
        if (!JobNameOfPod(pod).empty()) out.job_pods.push_back(pod);
      }
    }
    TAAS_ASSIGN_OR_RETURN(
        const nlohmann::json events,
        Get("/api/v1/namespaces/" + ns + "/events?fieldSelector=reason%3DFailedScheduling"));
    if (const nlohmann::json* items = json_fields::Array(events, "items")) {
      for (const nlohmann::json& e : *items) out.events["items"].push_back(e);
    }
  }
  return out;
}

}  // namespace taas::ui_kube
