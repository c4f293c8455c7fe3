#include "taas/controller/controller.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "taas/tfjob/defaults.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/restart.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace taas::controller {

namespace tf = taas::tfjob;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::seconds kExpectationTimeout{60};

std::string JobsPath(const std::string& ns) {
  return ns.empty() ? "/apis/kubeflow.org/v1/tfjobs"
                    : "/apis/kubeflow.org/v1/namespaces/" + ns + "/tfjobs";
}

std::string CorePath(const std::string& ns, const std::string& resource) {
  return ns.empty() ? "/api/v1/" + resource : "/api/v1/namespaces/" + ns + "/" + resource;
}

std::string JobPath(const std::string& ns, const std::string& name) {
  return "/apis/kubeflow.org/v1/namespaces/" + ns + "/tfjobs/" + name;
}

std::uint64_t ResourceVersion(const json& object) {
  try {
    return std::stoull(object["metadata"].value("resourceVersion", "0"));
  } catch (const std::exception&) {
    return 0;
  }
}

std::string MetaString(const json& object, const char* field) {
  const auto it = object.find("metadata");
  if (it == object.end() || !it->is_object()) return "";
  return it->value(field, "");
}

bool HasDeletionTimestamp(const json& object) {
  const auto it = object.find("metadata");
  return it != object.end() && it->is_object() && it->contains("deletionTimestamp") &&
         !(*it)["deletionTimestamp"].is_null();
}

// Children of one job: indexed by "namespace/job-name", kept when controlled by the job's UID.
std::vector<kube::ObjectPtr> Owned(const kube::Informer* informer, const std::string& key,
                                   const std::string& uid) {
  std::vector<kube::ObjectPtr> out;
  if (informer == nullptr) return out;
  for (auto& object : informer->store().ByIndex(key)) {
    if (ControllerUid(*object) == uid) out.push_back(std::move(object));
  }
  return out;
}

kube::Store::IndexFunc ByJobName() {
  return [](const json& object) -> std::vector<std::string> {
    const auto meta = object.find("metadata");
    if (meta == object.end() || !meta->is_object()) return {};
    const auto labels = meta->find("labels");
    if (labels == meta->end() || !labels->is_object()) return {};
    std::string job = labels->value(std::string(tf::kLabelJobName), "");
    if (job.empty()) return {};
    return {meta->value("namespace", "") + "/" + job};
  };
}

// What the caches keep of children: the controller reads only their metadata and, for pods, the
// status. Dropping the rest (pod specs carry every container, env and volume) keeps the
// operator's memory small with thousands of pods.
void TrimPod(json& pod) {
  kube::StripManagedFields(pod);
  pod.erase("spec");
}

void TrimService(json& service) {
  kube::StripManagedFields(service);
  service.erase("spec");
  service.erase("status");
}

std::string DeleteMessage(const absl::Status& status) { return std::string(status.message()); }

// Parse, Kubeflow's defaults and the rules' validation of a TFJob object.
absl::StatusOr<tf::TFJob> LoadJob(const json& object) {
  auto parsed = tf::TFJobFromJson(object);
  if (!parsed.ok()) return parsed.status();
  tf::SetDefaults(*parsed);
  auto errors = tf::Validate(*parsed);
  if (!errors.empty()) return tf::ValidationStatus(parsed->metadata, errors);
  return parsed;
}

}  // namespace

Controller::Controller(kube::Client* client, ControllerOptions options, Logger logger)
    : client_(client),
      options_(std::move(options)),
      logger_(std::move(logger)),
      events_(client, std::string(tf::kOperatorName), options_.host, logger_) {
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) namespaces.push_back("");
  std::string selector = std::string(tf::kLabelOperatorName) + "=" + std::string(tf::kOperatorName);
  for (const auto& ns : namespaces) {
    Watched& w = watched_[ns];
    kube::Informer::Options jobs;
    jobs.path = JobsPath(ns);
    jobs.resync_period = options_.resync_period;
    jobs.transform = kube::StripManagedFields;
    w.jobs = std::make_unique<kube::Informer>(client_, jobs, logger_);
    w.jobs->AddHandler([this](const kube::Delta& d) { OnJob(d); });

    kube::Informer::Options pods;
    pods.path = CorePath(ns, "pods");
    pods.label_selector = selector;
    pods.resync_period = std::chrono::seconds(0);
    pods.index = ByJobName();
    pods.transform = TrimPod;
    w.pods = std::make_unique<kube::Informer>(client_, pods, logger_);
    w.pods->AddHandler([this](const kube::Delta& d) { OnChild(d, true); });

    kube::Informer::Options services = pods;
    services.path = CorePath(ns, "services");
    services.transform = TrimService;
    w.services = std::make_unique<kube::Informer>(client_, services, logger_);
    w.services->AddHandler([this](const kube::Delta& d) { OnChild(d, false); });
  }
}

Controller::~Controller() { Stop(); }

bool Controller::Start(std::chrono::milliseconds sync_timeout) {
  for (auto& [ns, w] : watched_) {
    w.pods->Start();
    w.services->Start();
    w.jobs->Start();
  }
  auto deadline = SteadyClock::now() + sync_timeout;
  for (auto& [ns, w] : watched_) {
    for (kube::Informer* informer : {w.pods.get(), w.services.get(), w.jobs.get()}) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      if (!informer->WaitForSync(std::max(left, std::chrono::milliseconds(1)))) {
        logger_.Error("caches did not sync in time");
        return false;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    synced_ = true;
  }
  logger_.Info("caches synced; starting workers", {{"workers", options_.workers}});
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Worker(); });
  return true;
}

void Controller::Stop() {
  queue_.ShutDown();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  for (auto& [ns, w] : watched_) {
    w.jobs->Stop();
    w.pods->Stop();
    w.services->Stop();
  }
}

bool Controller::Synced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

const Controller::Watched* Controller::WatchedFor(const std::string& namespace_name) const {
  if (auto it = watched_.find(""); it != watched_.end()) return &it->second;
  auto it = watched_.find(namespace_name);
  return it == watched_.end() ? nullptr : &it->second;
}

// ---- event handlers: they only update expectations and enqueue ----

void Controller::OnJob(const kube::Delta& delta) {
  std::string key = kube::ObjectKey(*delta.object);
  if (delta.type == kube::DeltaType::kDeleted) {
    std::lock_guard<std::mutex> lock(mu_);
    expectations_.erase(key);
    written_.erase(key);
    return;
  }
  queue_.Add(key);
}

void Controller::OnChild(const kube::Delta& delta, bool is_pod) {
  const json& object = *delta.object;
  std::string job = ControllerName(object);
  if (job.empty()) return;
  std::string key = MetaString(object, "namespace") + "/" + job;
  std::string name = MetaString(object, "name");
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = expectations_.find(key);
    if (it != expectations_.end()) {
      if (is_pod) {
        it->second.pods.erase(name);
        if (delta.type == kube::DeltaType::kDeleted)
          it->second.deleting.erase(MetaString(object, "uid"));
      } else {
        it->second.services.erase(name);
      }
    }
  }
  if (delta.type != kube::DeltaType::kSync) queue_.Add(key);
}

// ---- workers ----

void Controller::Worker() {
  while (auto key = queue_.Get()) {
    auto start = SteadyClock::now();
    absl::Status status;
    try {
      status = Reconcile(*key);
    } catch (const std::exception& e) {  // a malformed object must not kill the operator
      status = absl::InternalError(std::string("reconcile threw: ") + e.what());
    }
    double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    metrics_.reconcile_latency.Observe(seconds);
    metrics_.reconciles.fetch_add(1);
    if (status.ok()) {
      queue_.Forget(*key);
    } else {
      metrics_.reconcile_errors.fetch_add(1);
      logger_.Warning("reconcile failed; retrying with backoff",
                      {{"job", *key},
                       {"error", std::string(status.message())},
                       {"retries", queue_.NumRequeues(*key)}});
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

absl::Status Controller::RunParallel(std::vector<std::function<absl::Status()>> tasks) {
  if (tasks.empty()) return absl::OkStatus();
  if (tasks.size() == 1) return tasks[0]();
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  absl::Status first_error;
  auto run = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < tasks.size();) {
      absl::Status s = tasks[i]();
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = s;
      }
    }
  };
  std::size_t threads =
      std::min<std::size_t>(tasks.size(), std::max(1, options_.create_parallelism)) - 1;
  std::vector<std::thread> pool;
  for (std::size_t i = 0; i < threads; ++i) pool.emplace_back(run);
  run();
  for (auto& t : pool) t.join();
  return first_error;
}

kube::ObjectPtr Controller::CurrentJob(const std::string& key) {
  std::string ns = key.substr(0, key.find('/'));
  const Watched* w = WatchedFor(ns);
  kube::ObjectPtr cached = w == nullptr ? nullptr : w->jobs->store().Get(key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = written_.find(key);
  if (it == written_.end()) return cached;
  if (cached == nullptr) return nullptr;  // deleted
  if (MetaString(*cached, "uid") != MetaString(*it->second, "uid") ||
      ResourceVersion(*cached) >= ResourceVersion(*it->second)) {
    written_.erase(it);  // the cache caught up (or the job was recreated)
    return cached;
  }
  return it->second;
}

absl::StatusOr<json> Controller::WriteStatus(const json& object, const tf::JobStatus& status) {
  json body = object;
  body["apiVersion"] = std::string(tf::kApiVersion);
  body["kind"] = std::string(tf::kKind);
  body["status"] = tf::StatusToJson(status);
  auto written = client_->Put(
      JobPath(MetaString(object, "namespace"), MetaString(object, "name")) + "/status", body);
  if (written.ok()) metrics_.status_updates.fetch_add(1);
  return written;
}

absl::Status Controller::HandleInvalid(const json& object, const absl::Status& error) {
  std::string key = kube::ObjectKey(object);
  auto previous = tf::StatusFromJson(object.value("status", json::object()));
  tf::JobStatus status = previous.ok() ? *previous : tf::JobStatus{};
  tf::JobStatus before = status;
  auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  std::string message = "TFJob " + key + " is invalid: " + std::string(error.message());
  tf::SetCondition(status, tf::ConditionType::kFailed, tf::ConditionStatus::kTrue,
                   tf::kReasonFailed, message, now);
  if (!tf::StatusChanged(before, status)) return absl::OkStatus();
  logger_.Warning("invalid TFJob", {{"job", key}, {"error", std::string(error.message())}});
  events_.Warning(
      kube::ObjectReference::Of(object, std::string(tf::kApiVersion), std::string(tf::kKind)),
      "InvalidSpec", message);
  auto written = WriteStatus(object, status);
  if (!written.ok() && written.status().code() != absl::StatusCode::kNotFound)
    return written.status();
  return absl::OkStatus();
}

// The job's children as the caches show them, corrected by the expectations: pods created but
// not yet seen count as Pending replicas, pods being deleted for a restart as terminating.
Controller::Observation Controller::Observe(const std::string& key, const std::string& uid,
                                            const Watched& watched) {
  Observation o;
  auto& [pods, services, observed, pod_by_ref, pod_names, service_names, redelete] = o;
  {
    // The caches are read under the lock the handlers take to settle expectations, and a store
    // is updated before its handlers run: a child is then either in the snapshot or still
    // expected, never neither.
    std::lock_guard<std::mutex> lock(mu_);
    pods = Owned(watched.pods.get(), key, uid);
    services = Owned(watched.services.get(), key, uid);
    Expectations& exp = expectations_[key];
    auto now = SteadyClock::now();
    for (const auto& pod : pods) {
      std::string pod_name = MetaString(*pod, "name");
      pod_names.insert(pod_name);
      auto replica = ObserveReplica(*pod);
      if (!replica) continue;
      std::string pod_uid = MetaString(*pod, "uid");
      if (exp.deleting.count(pod_uid) != 0) {
        if (!replica->terminating) redelete.emplace_back(pod_uid, pod_name);
        replica->terminating = true;
      }
      pod_by_ref[tf::ReplicaRef{replica->type, replica->index}] = pod;
      observed.push_back(*replica);
    }
    for (auto it = exp.pods.begin(); it != exp.pods.end();) {
      if (pod_names.count(it->first) != 0 || now > it->second.second) {
        it = exp.pods.erase(it);
        continue;
      }
      tf::ObservedReplica pending;
      pending.type = it->second.first.type;
      pending.index = it->second.first.index;
      pending.phase = tf::ReplicaPhase::kPending;
      observed.push_back(pending);
      ++it;
    }
    // Deletions the informer never confirmed: the pod is gone from the cache.
    for (auto it = exp.deleting.begin(); it != exp.deleting.end();) {
      if (pod_names.count(it->second) == 0) {
        it = exp.deleting.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& svc : services) service_names.insert(MetaString(*svc, "name"));
    for (auto it = exp.services.begin(); it != exp.services.end();) {
      if (service_names.count(it->first) != 0 || now > it->second) {
        it = exp.services.erase(it);
      } else {
        service_names.insert(it->first);
        ++it;
      }
    }
  }

  return o;
}

absl::Status Controller::Reconcile(const std::string& key) {
  Logger log = logger_.With({{"job", key}});
  kube::ObjectPtr object = CurrentJob(key);
  if (object == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    expectations_.erase(key);
    return absl::OkStatus();
  }
  if (HasDeletionTimestamp(*object)) return absl::OkStatus();  // children go with the job (GC)

  const std::string ns = MetaString(*object, "namespace");
  const std::string name = MetaString(*object, "name");
  const std::string uid = MetaString(*object, "uid");
  const kube::ObjectReference job_ref =
      kube::ObjectReference::Of(*object, std::string(tf::kApiVersion), std::string(tf::kKind));
  const Watched* watched = WatchedFor(ns);
  if (watched == nullptr) return absl::OkStatus();

  auto loaded = LoadJob(*object);
  if (!loaded.ok()) return HandleInvalid(*object, loaded.status());
  tf::TFJob job = std::move(*loaded);

  // ---- observe ----
  Observation seen = Observe(key, uid, *watched);
  const auto& [pods, services, observed, pod_by_ref, pod_names, service_names, redelete] = seen;

  // ---- status (before acting, so a 409 can be recomputed from a fresh read) ----
  auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  tf::StatusUpdate update;
  json current = *object;
  for (int attempt = 0;; ++attempt) {
    update = tf::ComputeJobStatus(job, observed, now, options_.status);
    if (!tf::StatusChanged(job.status, update.status)) break;
    auto written = WriteStatus(current, update.status);
    if (written.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      written_[key] = std::make_shared<const json>(std::move(*written));
      break;
    }
    if (written.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    if (written.status().code() != absl::StatusCode::kAborted || attempt >= 4)
      return written.status();
    metrics_.status_conflicts.fetch_add(1);
    auto fresh = client_->Get(JobPath(ns, name));
    if (!fresh.ok()) {
      return fresh.status().code() == absl::StatusCode::kNotFound ? absl::OkStatus()
                                                                  : fresh.status();
    }
    if (MetaString(*fresh, "uid") != uid) return absl::OkStatus();
    auto reloaded = LoadJob(*fresh);
    if (!reloaded.ok()) return HandleInvalid(*fresh, reloaded.status());
    job = std::move(*reloaded);
    current = std::move(*fresh);
  }
  job.status = update.status;
  for (const auto& event : update.events) {
    log.Info("job condition changed", {{"reason", event.reason}, {"message", event.message}});
    if (event.warning) {
      events_.Warning(job_ref, event.reason, event.message);
    } else {
      events_.Normal(job_ref, event.reason, event.message);
    }
  }

  // ---- act ----
  std::vector<std::function<absl::Status()>> tasks;
  auto delete_pod = [&](const std::string& pod_uid, const std::string& pod_name,
                        const std::string& why, bool restart) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      expectations_[key].deleting[pod_uid] = pod_name;
    }
    tasks.push_back([this, ns, pod_uid, pod_name, why, restart, job_ref, log]() -> absl::Status {
      auto deleted = client_->Delete(
          CorePath(ns, "pods") + "/" + pod_name,
          {{"preconditions", {{"uid", pod_uid}}}, {"propagationPolicy", "Background"}});
      if (!deleted.ok() && deleted.status().code() != absl::StatusCode::kNotFound &&
          deleted.status().code() != absl::StatusCode::kAborted) {
        events_.Warning(job_ref, "FailedDeletePod",
                        "Error deleting pod " + pod_name + ": " + DeleteMessage(deleted.status()));
        return deleted.status();
      }
      metrics_.pods_deleted.fetch_add(1);
      log.Info(restart ? "deleted pod to restart it" : "deleted pod",
               {{"pod", pod_name}, {"why", why}});
      events_.Normal(job_ref, "SuccessfulDeletePod", "Deleted pod: " + pod_name + " (" + why + ")");
      return absl::OkStatus();
    });
  };
  auto delete_service = [&](const std::string& svc_name, const std::string& why) {
    tasks.push_back([this, ns, svc_name, why, job_ref, log]() -> absl::Status {
      auto deleted = client_->Delete(CorePath(ns, "services") + "/" + svc_name);
      if (!deleted.ok() && deleted.status().code() != absl::StatusCode::kNotFound) {
        events_.Warning(
            job_ref, "FailedDeleteService",
            "Error deleting service " + svc_name + ": " + DeleteMessage(deleted.status()));
        return deleted.status();
      }
      metrics_.services_deleted.fetch_add(1);
      log.Info("deleted service", {{"service", svc_name}, {"why", why}});
      events_.Normal(job_ref, "SuccessfulDeleteService", "Deleted service: " + svc_name);
      return absl::OkStatus();
    });
  };

  // Restarts decided by the rules (already counted in the status written above).
  std::set<std::string> deleting_now;
  for (const auto& ref : update.restart) {
    auto it = pod_by_ref.find(ref);
    if (it == pod_by_ref.end()) continue;
    std::string pod_name = MetaString(*it->second, "name");
    std::string pod_uid = MetaString(*it->second, "uid");
    if (!deleting_now.insert(pod_uid).second) continue;
    auto replica = ObserveReplica(*it->second);
    std::string why = "restart";
    if (replica && replica->exit_code)
      why += " after exit code " + std::to_string(*replica->exit_code);
    events_.Warning(job_ref, "RestartingReplica",
                    "Restarting " + pod_name + " (" + why.substr(8) + ")");
    delete_pod(pod_uid, pod_name, why, true);
  }
  for (const auto& [pod_uid, pod_name] : redelete) {
    if (deleting_now.insert(pod_uid).second) delete_pod(pod_uid, pod_name, "restart (retry)", true);
  }
  const bool finished = tf::IsFinished(job.status);
  const bool suspended = job.spec.run_policy.suspend && !finished;
  for (const auto& ref : tf::ReplicasToDelete(job, observed)) {
    auto it = pod_by_ref.find(ref);
    if (it == pod_by_ref.end()) continue;
    std::string pod_uid = MetaString(*it->second, "uid");
    if (!deleting_now.insert(pod_uid).second) continue;
    std::string why = suspended ? "job suspended" : finished ? "cleanPodPolicy" : "not in spec";
    delete_pod(pod_uid, MetaString(*it->second, "name"), why, false);
    if (finished) {
      std::string svc = tf::ReplicaName(name, ref.type, ref.index);
      if (service_names.count(svc) != 0) delete_service(svc, "cleanPodPolicy");
    }
  }

  // Services: one per replica of the spec while the job runs; none while suspended. They are
  // created after the pods, as Kubeflow does: the pods are what the job waits for.
  std::vector<std::function<absl::Status()>> service_tasks;
  std::set<std::string> wanted_services;
  if (!finished && !suspended) {
    for (const auto& [type, spec] : job.spec.replica_specs) {
      for (int i = 0; i < spec.replicas; ++i) {
        std::string svc_name = tf::ReplicaName(name, type, i);
        wanted_services.insert(svc_name);
        if (service_names.count(svc_name) != 0) continue;
        json svc = BuildService(job, type, i, options_.build);
        {
          std::lock_guard<std::mutex> lock(mu_);
          expectations_[key].services[svc_name] = SteadyClock::now() + kExpectationTimeout;
        }
        service_tasks.push_back([this, ns, key, svc, svc_name, job_ref, log]() -> absl::Status {
          auto created = client_->Post(CorePath(ns, "services"), svc);
          if (created.status().code() == absl::StatusCode::kAlreadyExists) return absl::OkStatus();
          if (!created.ok()) {
            std::lock_guard<std::mutex> lock(mu_);
            expectations_[key].services.erase(svc_name);
            events_.Warning(job_ref, "FailedCreateService",
                            "Error creating service " + svc_name + ": " +
                                std::string(created.status().message()));
            return created.status();
          }
          metrics_.services_created.fetch_add(1);
          log.Info("created service", {{"service", svc_name}});
          events_.Normal(job_ref, "SuccessfulCreateService", "Created service: " + svc_name);
          return absl::OkStatus();
        });
      }
    }
  }
  if (!finished) {
    for (const auto& svc : services) {
      std::string svc_name = MetaString(*svc, "name");
      if (wanted_services.count(svc_name) == 0 && !HasDeletionTimestamp(*svc))
        delete_service(svc_name, suspended ? "job suspended" : "not in spec");
    }
  }

  // Pods: every missing replica (expectations count pods created but not yet seen).
  std::atomic<bool> recreate_pending{false};
  for (const auto& ref : tf::ReplicasToCreate(job, observed)) {
    std::string pod_name = tf::ReplicaName(name, ref.type, ref.index);
    if (pod_names.count(pod_name) != 0) {
      recreate_pending = true;  // an old incarnation (another owner, or terminating) is in the way
      continue;
    }
    json pod = BuildPod(job, ref.type, ref.index, options_.build);
    {
      std::lock_guard<std::mutex> lock(mu_);
      expectations_[key].pods[pod_name] = {ref, SteadyClock::now() + kExpectationTimeout};
    }
    tasks.push_back(
        [this, ns, key, pod, pod_name, job_ref, log, &recreate_pending]() -> absl::Status {
          auto created = client_->Post(CorePath(ns, "pods"), pod);
          if (!created.ok()) {
            std::lock_guard<std::mutex> lock(mu_);
            expectations_[key].pods.erase(pod_name);
            if (created.status().code() == absl::StatusCode::kAlreadyExists) {
              recreate_pending = true;  // the previous pod is still terminating
              return absl::OkStatus();
            }
            events_.Warning(
                job_ref, "FailedCreatePod",
                "Error creating pod " + pod_name + ": " + std::string(created.status().message()));
            return created.status();
          }
          metrics_.pods_created.fetch_add(1);
          log.Info("created pod", {{"pod", pod_name}});
          events_.Normal(job_ref, "SuccessfulCreatePod", "Created pod: " + pod_name);
          return absl::OkStatus();
        });
  }

  // Gang scheduling: the PodGroup exists before the pods are scheduled.
  if (job.spec.run_policy.scheduling_policy.has_value() && !finished) {
    json group = BuildPodGroup(job);
    auto existing =
        client_->Get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/" + ns + "/podgroups/" + name);
    if (!existing.ok() && existing.status().code() == absl::StatusCode::kNotFound) {
      auto created = client_->Post(
          "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/" + ns + "/podgroups", group);
      if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists)
        log.Warning("cannot create PodGroup (is the scheduler-plugins CRD installed?)",
                    {{"error", std::string(created.status().message())}});
    }
  }

  for (auto& task : service_tasks) tasks.push_back(std::move(task));
  absl::Status acted = RunParallel(std::move(tasks));

  // ---- time-based follow-ups ----
  if (update.requeue_at) {
    auto delay = *update.requeue_at - now;
    queue_.AddAfter(key,
                    std::max<std::chrono::steady_clock::duration>(delay, std::chrono::seconds(1)));
  }
  if (recreate_pending) queue_.AddAfter(key, std::chrono::seconds(1));
  if (finished) {
    if (auto expiry = tf::TtlExpiry(job)) {
      if (now >= *expiry) {
        auto deleted = client_->Delete(JobPath(ns, name), {{"preconditions", {{"uid", uid}}},
                                                           {"propagationPolicy", "Background"}});
        if (!deleted.ok() && deleted.status().code() != absl::StatusCode::kNotFound)
          return deleted.status();
        metrics_.jobs_deleted_ttl.fetch_add(1);
        log.Info("deleted finished job: ttlSecondsAfterFinished expired");
        events_.Normal(job_ref, "TFJobDeleted",
                       "Deleted TFJob " + key + ": ttlSecondsAfterFinished expired");
      } else {
        queue_.AddAfter(key, *expiry - now);
      }
    }
  }
  return acted;
}

// ---- metrics ----

std::string Controller::RenderMetrics() const {
  std::string out;
  auto counter = [&out](const char* name, const char* help, std::uint64_t value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name +
           " " + std::to_string(value) + "\n";
  };
  auto gauge = [&out](const char* name, const char* help, double value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name +
           " " + std::to_string(value) + "\n";
  };
  counter("taas_operator_reconcile_total", "Reconciles run.", metrics_.reconciles.load());
  counter("taas_operator_reconcile_errors_total", "Reconciles that failed and were requeued.",
          metrics_.reconcile_errors.load());
  out +=
      "# HELP taas_operator_reconcile_duration_seconds Reconcile latency.\n"
      "# TYPE taas_operator_reconcile_duration_seconds histogram\n";
  metrics_.reconcile_latency.Render("taas_operator_reconcile_duration_seconds", out);
  gauge("taas_operator_workqueue_depth", "Job keys ready to be reconciled.",
        static_cast<double>(queue_.Len()));
  gauge("taas_operator_workqueue_waiting", "Job keys waiting for a delay or backoff.",
        static_cast<double>(queue_.NumWaiting()));
  kube::ClientStats stats = client_->stats();
  counter("taas_operator_api_requests_total", "Kubernetes API requests.", stats.requests);
  counter("taas_operator_api_errors_total", "Kubernetes API requests that failed.", stats.errors);
  counter("taas_operator_pods_created_total", "Pods created.", metrics_.pods_created.load());
  counter("taas_operator_pods_deleted_total", "Pods deleted.", metrics_.pods_deleted.load());
  counter("taas_operator_services_created_total", "Services created.",
          metrics_.services_created.load());
  counter("taas_operator_services_deleted_total", "Services deleted.",
          metrics_.services_deleted.load());
  counter("taas_operator_status_updates_total", "TFJob status writes.",
          metrics_.status_updates.load());
  counter("taas_operator_status_conflicts_total", "TFJob status writes that hit a 409.",
          metrics_.status_conflicts.load());
  counter("taas_operator_jobs_ttl_deleted_total", "TFJobs deleted after ttlSecondsAfterFinished.",
          metrics_.jobs_deleted_ttl.load());

  std::map<std::string, int> by_state = {{"Created", 0},   {"Running", 0}, {"Restarting", 0},
                                         {"Succeeded", 0}, {"Failed", 0},  {"Suspended", 0},
                                         {"Unknown", 0}};
  for (const auto& [ns, w] : watched_) {
    for (const auto& job : w.jobs->store().List()) {
      std::string state = "Unknown";
      const json status = job->value("status", json::object());
      if (status.contains("conditions") && status["conditions"].is_array()) {
        for (const auto& c : status["conditions"]) {
          if (c.value("status", "") != "True") continue;
          std::string type = c.value("type", "");
          if (by_state.count(type) != 0) state = type;  // the last true condition wins
        }
      }
      ++by_state[state];
    }
  }
  out +=
      "# HELP taas_operator_jobs TFJobs by state (last true condition).\n"
      "# TYPE taas_operator_jobs gauge\n";
  for (const auto& [state, n] : by_state)
    out += "taas_operator_jobs{state=\"" + state + "\"} " + std::to_string(n) + "\n";
  return out;
}

}  // namespace taas::controller
