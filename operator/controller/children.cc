// The act step's API calls: creating and deleting a job's pods, services and PodGroup, each with
// its expectation, Event, log line and metric.
#include <atomic>

#include "internal.h"
#include "taas/base/random_token.h"
#include "taas/base/status.h"
#include "taas/contract/job_secret.h"
#include "taas/controller/controller.h"
#include "taas/tfjob/labels.h"

namespace taas::controller {

namespace tf = taas::tfjob;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using internal::CorePath;
using internal::kExpectationTimeout;

std::function<absl::Status()> Controller::CreatePodTask(const JobContext& ctx, const tf::TFJob& job,
                                                        tf::ReplicaRef ref,
                                                        std::uint64_t newest_incarnation,
                                                        std::atomic<bool>& blocked) {
  std::string pod_name = tf::ReplicaName(ctx.name, ref.type, ref.index);
  json pod = BuildPod(job, ref.type, ref.index, options_.build);
  // A new incarnation of the replica: its peers refuse the previous pod, should that still run on
  // a node that was only cut off (taas/base/fence.h).
  SetIncarnation(pod, NextIncarnation(newest_incarnation, std::chrono::system_clock::now()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    expectations_[ctx.key].pods[pod_name] = {ref, SteadyClock::now() + kExpectationTimeout};
  }
  return [this, &ctx, pod = std::move(pod), pod_name, &blocked]() -> absl::Status {
    auto created = client_->Post(CorePath(ctx.ns, "pods"), pod);
    if (!created.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      expectations_[ctx.key].pods.erase(pod_name);
      if (created.status().code() == absl::StatusCode::kAlreadyExists) {
        blocked = true;  // the previous pod is still terminating
        return absl::OkStatus();
      }
      events_.Warning(
          ctx.ref, "FailedCreatePod",
          "Error creating pod " + pod_name + ": " + std::string(created.status().message()));
      return created.status();
    }
    metrics_.pods_created.fetch_add(1);
    ctx.log.Info("created pod", {{"pod", pod_name}});
    events_.Normal(ctx.ref, "SuccessfulCreatePod", "Created pod: " + pod_name);
    return absl::OkStatus();
  };
}

// The service is built when the task runs, from the job as it is then (ServiceForCurrentJob):
// at 500 jobs, the services built up front and waiting held 7.6 of the heap's 26.8 MB at its peak.
std::function<absl::Status()> Controller::CreateServiceTask(std::shared_ptr<const JobContext> ctx,
                                                            tf::ReplicaRef ref) {
  std::string svc_name = tf::ReplicaName(ctx->name, ref.type, ref.index);
  {
    std::lock_guard<std::mutex> lock(mu_);
    expectations_[ctx->key].services[svc_name] = SteadyClock::now() + kExpectationTimeout;
  }
  return [this, ctx = std::move(ctx), ref, svc_name = std::move(svc_name)]() -> absl::Status {
    auto forget = [&] {
      std::lock_guard<std::mutex> lock(mu_);
      expectations_[ctx->key].services.erase(svc_name);
    };
    const kube::ObjectPtr job = CurrentJob(ctx->key);
    std::optional<json> svc =
        ServiceForCurrentJob(job.get(), ctx->uid, ref, options_.limits, options_.build);
    if (!svc) {  // the job is gone, replaced or no longer valid: its next reconcile decides
      forget();
      return absl::OkStatus();
    }
    auto created = client_->Post(CorePath(ctx->ns, "services"), *svc);
    if (created.status().code() == absl::StatusCode::kAlreadyExists) return absl::OkStatus();
    if (!created.ok()) {
      forget();
      events_.Warning(
          ctx->ref, "FailedCreateService",
          "Error creating service " + svc_name + ": " + std::string(created.status().message()));
      queue_.AddRateLimited(ctx->key);  // nobody waits for this task: look again later
      return created.status();
    }
    metrics_.services_created.fetch_add(1);
    ctx->log.Info("created service", {{"service", svc_name}});
    events_.Normal(ctx->ref, "SuccessfulCreateService", "Created service: " + svc_name);
    return absl::OkStatus();
  };
}

std::function<absl::Status()> Controller::DeletePodTask(const JobContext& ctx,
                                                        const PodToDelete& pod) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    expectations_[ctx.key].deleting[pod.uid] = pod.name;
  }
  if (pod.newly_restarted)
    events_.Warning(ctx.ref, "RestartingReplica", "Restarting " + pod.name + " (" + pod.why + ")");
  return [this, &ctx, pod]() -> absl::Status {
    json options = {{"preconditions", {{"uid", pod.uid}}}, {"propagationPolicy", "Background"}};
    // At once: the kubelet of a failed node would never confirm a graceful end, and the pod's
    // name is taken until it is gone.
    if (pod.force) options["gracePeriodSeconds"] = 0;
    auto deleted = client_->Delete(CorePath(ctx.ns, "pods") + "/" + pod.name, options);
    if (!deleted.ok() && deleted.status().code() != absl::StatusCode::kNotFound &&
        deleted.status().code() != absl::StatusCode::kAborted) {
      events_.Warning(
          ctx.ref, "FailedDeletePod",
          "Error deleting pod " + pod.name + ": " + std::string(deleted.status().message()));
      return deleted.status();
    }
    metrics_.pods_deleted.fetch_add(1);
    ctx.log.Info(pod.restart ? "deleted pod to restart it" : "deleted pod",
                 {{"pod", pod.name}, {"why", pod.why}});
    events_.Normal(ctx.ref, "SuccessfulDeletePod",
                   "Deleted pod: " + pod.name + " (" + pod.why + ")");
    return absl::OkStatus();
  };
}

std::function<absl::Status()> Controller::DeleteServiceTask(const JobContext& ctx,
                                                            const ServiceToDelete& svc) {
  return [this, &ctx, svc]() -> absl::Status {
    auto deleted = client_->Delete(CorePath(ctx.ns, "services") + "/" + svc.name);
    if (!deleted.ok() && deleted.status().code() != absl::StatusCode::kNotFound) {
      events_.Warning(
          ctx.ref, "FailedDeleteService",
          "Error deleting service " + svc.name + ": " + std::string(deleted.status().message()));
      return deleted.status();
    }
    metrics_.services_deleted.fetch_add(1);
    ctx.log.Info("deleted service", {{"service", svc.name}, {"why", svc.why}});
    events_.Normal(ctx.ref, "SuccessfulDeleteService", "Deleted service: " + svc.name);
    return absl::OkStatus();
  };
}

// Gang scheduling: the PodGroup exists before the pods are scheduled. Asked for once per job.
void Controller::EnsurePodGroup(const JobContext& ctx, const tf::TFJob& job, const Gang& gang) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pod_groups_.count(ctx.uid) != 0) return;
  }
  const std::string groups = PodGroupsPath(gang.scheduler, ctx.ns);
  auto existing = client_->Get(groups + "/" + ctx.name);
  bool exists = existing.ok();
  if (!existing.ok() && existing.status().code() == absl::StatusCode::kNotFound) {
    auto created = client_->Post(groups, BuildPodGroup(job, gang));
    exists = created.ok() || created.status().code() == absl::StatusCode::kAlreadyExists;
    if (!exists)
      ctx.log.Warning("cannot create PodGroup (is the gang scheduler's PodGroup CRD installed?)",
                      {{"path", groups}, {"error", std::string(created.status().message())}});
  }
  if (exists) {
    std::lock_guard<std::mutex> lock(mu_);
    pod_groups_.insert(ctx.uid);
  }
}

absl::Status Controller::EnsureJobAccess(const JobContext& ctx, const tf::TFJob& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (secured_.count(ctx.uid) != 0) return absl::OkStatus();
  }
  TAAS_RETURN_IF_ERROR(EnsureJobSecret(ctx, job));
  TAAS_RETURN_IF_ERROR(EnsureNetworkPolicy(ctx, job));
  std::lock_guard<std::mutex> lock(mu_);
  secured_.insert(ctx.uid);
  return absl::OkStatus();
}

// Created once: when it exists (an earlier reconcile, another operator, a restart), it is kept,
// because running pods already hold its tokens. It is not read back: that would need `get` on
// every Secret of the namespace (the UI token among them), a wider right than what a check of
// its owner would guard against (a Secret planted under the job's name by someone who may create
// Secrets there; the job's NetworkPolicy still admits only its own pods).
absl::Status Controller::EnsureJobSecret(const JobContext& ctx, const tf::TFJob& job) {
  const std::string name = JobSecretName(ctx.name);
  TAAS_ASSIGN_OR_RETURN(std::string job_token, RandomHexToken(contract::kTokenBytes));
  TAAS_ASSIGN_OR_RETURN(std::string chief_token, RandomHexToken(contract::kTokenBytes));
  auto created =
      client_->Post(CorePath(ctx.ns, "secrets"), BuildJobSecret(job, {job_token, chief_token}));
  absl::Status status = created.status();
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    status = absl::OkStatus();
  } else if (status.ok()) {
    ctx.log.Info("created the job's secret", {{"secret", name}});
    events_.Normal(ctx.ref, "SuccessfulCreateSecret", "Created secret: " + name);
  }
  if (!status.ok()) {
    events_.Warning(ctx.ref, "FailedCreateSecret",
                    "Error creating secret " + name + ": " + std::string(status.message()));
  }
  return status;
}

absl::Status Controller::EnsureNetworkPolicy(const JobContext& ctx, const tf::TFJob& job) {
  const std::string path = "/apis/networking.k8s.io/v1/namespaces/" + ctx.ns + "/networkpolicies";
  auto created = client_->Post(path, BuildNetworkPolicy(job, options_.build));
  if (created.ok()) {
    ctx.log.Info("created the job's network policy", {{"networkpolicy", ctx.name}});
    events_.Normal(ctx.ref, "SuccessfulCreateNetworkPolicy", "Created network policy: " + ctx.name);
    return absl::OkStatus();
  }
  if (created.status().code() == absl::StatusCode::kAlreadyExists) return absl::OkStatus();
  events_.Warning(
      ctx.ref, "FailedCreateNetworkPolicy",
      "Error creating network policy " + ctx.name + ": " + std::string(created.status().message()));
  return created.status();
}

}  // namespace taas::controller
