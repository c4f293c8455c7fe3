// Names, labels and selectors of replica pods and services, as Kubeflow's training-operator sets
// them, so tools and scripts written for Kubeflow keep working.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "taas/tfjob/tfjob.h"

namespace taas::tfjob {

// Every label the operator sets on a job's children starts with this.
inline constexpr std::string_view kLabelPrefix = "training.kubeflow.org/";
inline constexpr std::string_view kLabelOperatorName = "training.kubeflow.org/operator-name";
inline constexpr std::string_view kLabelJobName = "training.kubeflow.org/job-name";
inline constexpr std::string_view kLabelReplicaType = "training.kubeflow.org/replica-type";
inline constexpr std::string_view kLabelReplicaIndex = "training.kubeflow.org/replica-index";
inline constexpr std::string_view kLabelJobRole = "training.kubeflow.org/job-role";
inline constexpr std::string_view kOperatorName = "tfjob-controller";
inline constexpr std::string_view kJobRoleMaster = "master";
// The labels of older Kubeflow releases (tf-operator before training-operator), still on pods that
// older tools made: read when the current ones are missing, never written.
inline constexpr std::string_view kLegacyLabelJobName = "job-name";
inline constexpr std::string_view kLegacyLabelReplicaType = "replica-type";
inline constexpr std::string_view kLegacyLabelTfReplicaType = "tf-replica-type";
inline constexpr std::string_view kLegacyLabelReplicaIndex = "replica-index";
inline constexpr std::string_view kLegacyLabelTfReplicaIndex = "tf-replica-index";

// Queues and gang schedulers that hold TFJobs back; the web UI reads their objects to say why a
// job waits. Kueue: a TFJob labelled with a LocalQueue is created suspended and admitted by Kueue
// (its Workload, ClusterQueue and LocalQueue objects are in kKueueApi).
inline constexpr std::string_view kLabelKueueQueueName = "kueue.x-k8s.io/queue-name";
// Kueue's label on the Workload it made for a job: the job's uid.
inline constexpr std::string_view kLabelKueueJobUid = "kueue.x-k8s.io/job-uid";
inline constexpr std::string_view kKueueApi = "kueue.x-k8s.io/v1beta1";
// PodGroups (named after the job, as Kubeflow names them): scheduler-plugins' coscheduling
// (kSchedulerPluginsApi) and Volcano's (kVolcanoApi). The operator makes them (gang scheduling,
// taas-operator --gang-scheduler-name); the web UI reads them to say why a job waits.
inline constexpr std::string_view kSchedulerPluginsApi = "scheduling.x-k8s.io/v1alpha1";
inline constexpr std::string_view kVolcanoApi = "scheduling.volcano.sh/v1beta1";
// How a pod names its PodGroup: scheduler-plugins' label, Volcano's annotation (and Volcano's
// annotation naming the pod's task, the lower-case replica type, as Kubeflow sets it).
inline constexpr std::string_view kLabelPodGroup = "scheduling.x-k8s.io/pod-group";
inline constexpr std::string_view kAnnotationVolcanoGroupName = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kAnnotationVolcanoTaskSpec = "volcano.sh/task-spec";
// Volcano's name as pods' spec.schedulerName (and as --gang-scheduler-name's value, in any case).
inline constexpr std::string_view kVolcanoSchedulerName = "volcano";

// Which (re)creation of its replica a pod is (taas/base/fence.h), in decimal: the operator sets it
// on every pod it creates, and the pod's TAAS_REPLICA_INCARNATION is read from it (downward API).
inline constexpr std::string_view kAnnotationReplicaIncarnation = "taas.dev/replica-incarnation";

using Labels = std::map<std::string, std::string>;

// operator-name and job-name: selects every pod and service of one job.
Labels JobLabels(std::string_view job_name);

// JobLabels plus replica-type (lower case): selects the pods of one replica type.
Labels ReplicaTypeLabels(std::string_view job_name, ReplicaType type);

// ReplicaTypeLabels plus replica-index: the labels and the selector of one replica's headless
// service. Kubeflow's services carry no job-role, so a service never depends on who is the chief.
Labels ReplicaIndexLabels(std::string_view job_name, ReplicaType type, int index);

// The labels of one replica's pod: ReplicaIndexLabels plus job-role=master when IsMasterRole.
Labels ReplicaLabels(const TFJobSpec& spec, std::string_view job_name, ReplicaType type, int index);

// The chief role: a Chief/Master replica, or worker 0 when the spec has neither.
bool IsMasterRole(const TFJobSpec& spec, ReplicaType type, int index);

// The evaluator whose score of the final checkpoint may be the job's result (job_report::JobResult)
// and whose page the progress reads: Evaluator 0 (TensorFlow runs one).
bool IsResultEvaluator(ReplicaType type, int index);

// "k1=v1,k2=v2" with keys sorted, as labels.Selector.String() prints matchLabels.
std::string SelectorString(const Labels& labels);

// {"matchLabels": {...}}, a metav1.LabelSelector.
nlohmann::json LabelSelectorJson(const Labels& labels);

}  // namespace taas::tfjob
