// The Kubernetes objects the operator creates for a TFJob, and how it reads pods back. Pure
// functions of the job (no I/O), so the exact pods, services and TF_CONFIG are unit tested.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "taas/tfjob/status.h"
#include "taas/tfjob/tf_config.h"
#include "taas/tfjob/tfjob.h"

namespace taas::controller {

struct BuildOptions {
  taas::tfjob::ServiceAddressing addressing;  // port fallback and custom cluster domain
  // schedulerName given to pods of jobs with a schedulingPolicy (gang scheduling).
  std::string gang_scheduler_name = "scheduler-plugins-scheduler";
};

// The owner reference every child carries: controller=true, blockOwnerDeletion=true.
nlohmann::json OwnerReference(const taas::tfjob::TFJob& job);

// The pod of replica (type, index): the replica template plus name, namespace, Kubeflow's labels,
// the owner reference, the pod restartPolicy for the replica's policy (ExitCode -> Never), and
// TF_CONFIG on the `tensorflow` container when the job has more than one replica. With a
// schedulingPolicy, also the pod-group label and the gang scheduler's name. `job` must be
// defaulted (tfjob::SetDefaults).
nlohmann::json BuildPod(const taas::tfjob::TFJob& job, taas::tfjob::ReplicaType type, int index,
                        const BuildOptions& options);

// The headless service of replica (type, index): same name and labels as the pod, selecting it,
// exposing every port of the `tensorflow` container (the `tfjob-port` at least).
nlohmann::json BuildService(const taas::tfjob::TFJob& job, taas::tfjob::ReplicaType type, int index,
                            const BuildOptions& options);

// The scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1) of a job with a
// schedulingPolicy: minMember = minAvailable or every replica.
nlohmann::json BuildPodGroup(const taas::tfjob::TFJob& job);

// What a pod says about its replica, for tfjob::ComputeJobStatus; std::nullopt when the pod lacks
// the replica-type/replica-index labels.
std::optional<taas::tfjob::ObservedReplica> ObserveReplica(const nlohmann::json& pod);

// What the operator's caches keep of a pod or service: exactly what ObserveReplica,
// ControllerUid/ControllerName and the informers read (name, namespace, uid, resourceVersion,
// timestamps, the training.kubeflow.org labels, the TFJob controller reference; for pods the
// phase, reason, message, a False PodScheduled condition and the `tensorflow` container's
// restartCount/state/lastState). Everything else is dropped: with thousands of pods the cache is
// most of the operator's memory. ObserveReplica(Trim(pod)) == ObserveReplica(pod).
void TrimCachedPod(nlohmann::json& pod);
void TrimCachedService(nlohmann::json& service);

// The TFJob UID a child is controlled by (its controller owner reference of kind TFJob), or "".
std::string ControllerUid(const nlohmann::json& object);
// The TFJob name a child is controlled by, or "".
std::string ControllerName(const nlohmann::json& object);

}  // namespace taas::controller
