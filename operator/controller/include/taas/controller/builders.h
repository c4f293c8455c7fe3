// The Kubernetes objects the operator creates for a TFJob, and how it reads pods back. Pure
// functions of the job (no I/O), so the exact pods, services and TF_CONFIG are unit tested.
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "taas/job_report/job_report.h"
#include "taas/tfjob/status.h"
#include "taas/tfjob/tf_config.h"
#include "taas/tfjob/tfjob.h"
#include "taas/tfjob/validation.h"

namespace taas::controller {

// Which gang scheduler places a job's pods together, from its PodGroup.
enum class GangScheduler {
  kNone,              // no PodGroup
  kSchedulerPlugins,  // scheduler-plugins' coscheduling: scheduling.x-k8s.io/v1alpha1 PodGroup
  kVolcano,           // Volcano: scheduling.volcano.sh/v1beta1 PodGroup
};

struct BuildOptions {
  taas::tfjob::ServiceAddressing addressing;  // port fallback and custom cluster domain
  // taas-operator --gang-scheduler-name (docs/operator.md, "Gang scheduling"), Kubeflow's rule:
  // empty (the default) or "none": no job, even one with a runPolicy.schedulingPolicy (Kubeflow
  // without the flag); "volcano" (any letter case): every job, by Volcano; any other name: every
  // job, by scheduler-plugins under that scheduler name.
  std::string gang_scheduler_name;
  // The namespace of the operator and the UI server, whose pods may reach a job's metrics port
  // through the job's NetworkPolicy; empty: no pod outside the job may.
  std::string metrics_scraper_namespace;
};

// InvalidArgument unless `name` is a valid --gang-scheduler-name: empty, or a scheduler name as
// the API server accepts it in a pod's spec.schedulerName (a DNS-1123 subdomain).
absl::Status ValidateGangSchedulerName(std::string_view name);

// How jobs are gang scheduled under `options` (see BuildOptions::gang_scheduler_name) and the
// schedulerName their pods get when their template names none. As in Kubeflow, the flag alone
// decides: a job's runPolicy.schedulingPolicy shapes its PodGroup, never whether it has one.
struct Gang {
  GangScheduler scheduler = GangScheduler::kNone;
  std::string scheduler_name;
};
Gang GangOf(const BuildOptions& options);

// The two tokens of a job's Secret (taas/contract/job_secret.h), hex-encoded.
struct JobTokens {
  std::string job;
  std::string chief;
};

// The owner reference every child carries: controller=true, blockOwnerDeletion=true.
nlohmann::json OwnerReference(const taas::tfjob::TFJob& job);

// The pod of replica (type, index): the replica template plus name, namespace, Kubeflow's labels,
// the owner reference, the pod restartPolicy for the replica's policy (ExitCode -> Never), and
// TF_CONFIG on the `tensorflow` container when the job has more than one replica. When the job is
// gang scheduled (GangOf), also what names its PodGroup, as Kubeflow sets it: scheduler-plugins'
// pod-group label, or Volcano's group-name and task-spec annotations; and the gang scheduler's
// name unless the template names a scheduler. `job` must be defaulted (tfjob::SetDefaults).
nlohmann::json BuildPod(const taas::tfjob::TFJob& job, taas::tfjob::ReplicaType type, int index,
                        const BuildOptions& options);

// Also, on every pod: the job's Secret as a read-only volume at contract::kJobSecretMountPath
// holding the job token, plus the chief token for the master-role replica (tfjob::IsMasterRole)
// and the parameter servers; on the `tensorflow` container the token-file variables for what is
// mounted and the pod's IP (downward API status.podIP).

// Numbers a pod built by BuildPod as incarnation `incarnation` of its replica
// (taas/base/fence.h): the annotation tfjob::kAnnotationReplicaIncarnation, and on the
// `tensorflow` container contract::kReplicaIncarnationEnv read from it (downward API), so that the
// number is written once in the pod and the runtime names it in every connection.
void SetIncarnation(nlohmann::json& pod, std::uint64_t incarnation);
// The incarnation a pod's annotation names; 0 when absent or no decimal number.
std::uint64_t PodIncarnation(const nlohmann::json& pod);
// The incarnation of a replica's next pod: above `newest_seen` (the highest of the replica's pods
// still observed) and at least the milliseconds since the epoch at `now`. The clock is what keeps
// it growing across pods long deleted and across operator restarts without a write of its own: a
// replica is recreated only after its previous pod is gone, seconds at least (a failed node's
// pods after --node-failure-seconds), far more than the clocks of an operator and its successor
// differ. Pure.
std::uint64_t NextIncarnation(std::uint64_t newest_seen, std::chrono::system_clock::time_point now);

// The headless service of replica (type, index): same name and labels as the pod, selecting it,
// exposing every port of the `tensorflow` container (the `tfjob-port` at least).
nlohmann::json BuildService(const taas::tfjob::TFJob& job, taas::tfjob::ReplicaType type, int index,
                            const BuildOptions& options);

// The replica's service for the job object as it is now (the informer cache's), or nothing when
// that is not the job a decision was made for: gone (null), replaced (another `uid`), being
// deleted, or no longer valid. Service creations wait behind every pod creation, so the service
// is built when its turn comes rather than held, built, in the queue.
std::optional<nlohmann::json> ServiceForCurrentJob(const nlohmann::json* object,
                                                   std::string_view uid,
                                                   taas::tfjob::ReplicaRef ref,
                                                   const taas::tfjob::Limits& limits,
                                                   const BuildOptions& options);

// The PodGroup of a gang scheduled job (`gang` from GangOf, not kNone), as Kubeflow v1.8 fills
// it: named after the job, with the job's annotations, owned by it. minMember: schedulingPolicy's
// minAvailable, else every replica. minResources: schedulingPolicy's, else what the first
// minMember pods request (PodGroupMinResources). scheduler-plugins' also gets
// scheduleTimeoutSeconds when the policy sets it; Volcano's the policy's queue ("default" when
// unset) and priorityClassName.
nlohmann::json BuildPodGroup(const taas::tfjob::TFJob& job, const Gang& gang);

// Kubeflow's computed minResources: the requests of the first `min_member` pods, replica types in
// kStatusOrder (Kubeflow sorts them by their PriorityClass's value, and leaves equal ones in map
// order, so taas's fixed order is one of Kubeflow's), each container's requests or, when it has
// none, its limits; init containers do not count. Quantities are added exactly (to the
// nanounit); a quantity that does not parse is left out.
nlohmann::json PodGroupMinResources(const taas::tfjob::TFJob& job, int min_member);

// The API path of the job's namespace's PodGroups for `scheduler` (not kNone).
std::string PodGroupsPath(GangScheduler scheduler, std::string_view ns);

// The job's Secret: "<job>" + contract::kJobSecretSuffix in the job's namespace, owned by the
// TFJob (deleted with it), holding both tokens.
nlohmann::json BuildJobSecret(const taas::tfjob::TFJob& job, const JobTokens& tokens);

// The name of a job's Secret.
std::string JobSecretName(std::string_view job_name);

// The job's NetworkPolicy (networking.k8s.io/v1, named after the job, owned by it): it selects
// the job's pods (tfjob::JobLabels) and admits ingress only from pods of the same job, plus, when
// options.metrics_scraper_namespace is set, from that namespace to the metrics port (the
// container port named contract::kMetricsPortName, or contract::kDefaultMetricsPort).
nlohmann::json BuildNetworkPolicy(const taas::tfjob::TFJob& job, const BuildOptions& options);

// What a pod says about its replica, for tfjob::ComputeJobStatus; std::nullopt when the pod lacks
// the replica-type/replica-index labels.
std::optional<taas::tfjob::ObservedReplica> ObserveReplica(const nlohmann::json& pod);

// The most of a termination message TerminationMessage returns and the caches keep: one byte
// more than a job report may hold (job_report::kMaxReportBytes), enough to tell a longer one is
// too long. The kubelet keeps up to 4096 bytes of it; a hostile API server may send any length.
inline constexpr std::size_t kMaxKeptTerminationMessage = job_report::kMaxReportBytes + 1;

// The `tensorflow` container's termination message (state.terminated.message, which the kubelet
// copies from the file terminationMessagePath names: the chief's job report, taas/job_report),
// cut to kMaxKeptTerminationMessage bytes; std::nullopt unless that container's current state is
// terminated with an integer exit code (0, or a failure whose report names it) and a non-empty
// message string (any other JSON anywhere on the way is no message, never an error).
std::optional<std::string> TerminationMessage(const nlohmann::json& pod);

// What the operator's caches keep of a pod or service: exactly what ObserveReplica,
// ControllerUid/ControllerName and the informers read (name, namespace, uid, resourceVersion,
// timestamps, the training.kubeflow.org labels, the replica-incarnation annotation, the TFJob
// controller reference; for pods the
// phase, reason, message, a False PodScheduled condition and the `tensorflow` container's
// restartCount/state/lastState, with TerminationMessage's text; spec.nodeName). Everything else
// is dropped: with thousands of pods the cache is most of the operator's memory.
// ObserveReplica(Trim(pod)) == ObserveReplica(pod), TerminationMessage(Trim(pod)) ==
// TerminationMessage(pod), PodNodeName(Trim(pod)) == PodNodeName(pod) and PodIncarnation(Trim(pod))
// == PodIncarnation(pod).
void TrimCachedPod(nlohmann::json& pod);
void TrimCachedService(nlohmann::json& service);

// The node a pod is bound to (spec.nodeName); "" while unscheduled or not a string.
std::string PodNodeName(const nlohmann::json& pod);

// The TFJob UID a child is controlled by (its controller owner reference of kind TFJob), or "".
std::string ControllerUid(const nlohmann::json& object);
// The TFJob name a child is controlled by, or "".
std::string ControllerName(const nlohmann::json& object);

}  // namespace taas::controller
