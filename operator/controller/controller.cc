#include "taas/controller/controller.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "internal.h"
#include "progress_tracker.h"
#include "status_write.h"
#include "taas/base/status.h"
#include "taas/http/client.h"
#include "taas/tfjob/labels.h"
#include "taas/tfjob/serialization.h"
#include "taas/tfjob/settings.h"
#include "taas/tfjob/validation.h"
#include "task_pool.h"

namespace taas::controller {

namespace tf = taas::tfjob;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using internal::CorePath;
using internal::HasDeletionTimestamp;
using internal::MetaString;
using internal::ResourceVersion;
using tf::TFJobPath;
using tf::TFJobsPath;

namespace {

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

// The index value of a node's pods. A job's value is "namespace/job" and a node's name holds no
// '/' (a DNS subdomain), so the two never meet.
std::string NodeIndexValue(const std::string& node) { return "node:" + node; }

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

// Children by job (ByJobName) and, for node failure, pods by the node they are bound to.
kube::Store::IndexFunc ByJobNameAndNode() {
  return [by_job = ByJobName()](const json& object) {
    std::vector<std::string> values = by_job(object);
    if (std::string node = PodNodeName(object); !node.empty())
      values.push_back(NodeIndexValue(node));
    return values;
  };
}

// A status and the restart ledger as the TFJob's `status` JSON.
json StatusJson(const tf::JobStatus& status, const RestartLedger& ledger) {
  json out = tf::StatusToJson(status);
  LedgerToStatus(ledger, out);
  return out;
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
    jobs.path = TFJobsPath(ns);
    jobs.resync_period = options_.resync_period;
    jobs.transform = kube::StripManagedFields;
    // Packed: a reconcile reads one job and its few children, and at 500 jobs the parsed caches
    // were nearly half of the operator's heap at its peak (heaptrack: 12.5 of 26.8 MB).
    jobs.store_mode = kube::StoreMode::kPacked;
    w.jobs = std::make_unique<kube::Informer>(client_, jobs, logger_);
    w.jobs->AddHandler([this](const kube::Delta& d) { OnJob(d); });

    kube::Informer::Options pods;
    pods.path = CorePath(ns, "pods");
    pods.label_selector = selector;
    pods.resync_period = std::chrono::seconds(0);
    pods.index = options_.node_failure_after.count() > 0 ? ByJobNameAndNode() : ByJobName();
    pods.transform = TrimCachedPod;
    pods.store_mode = kube::StoreMode::kPacked;
    w.pods = std::make_unique<kube::Informer>(client_, pods, logger_);
    w.pods->AddHandler([this](const kube::Delta& d) { OnChild(d, true); });

    kube::Informer::Options services = pods;
    services.path = CorePath(ns, "services");
    services.transform = TrimCachedService;
    w.services = std::make_unique<kube::Informer>(client_, services, logger_);
    w.services->AddHandler([this](const kube::Delta& d) { OnChild(d, false); });
  }
  if (options_.node_failure_after.count() > 0) {
    kube::Informer::Options nodes;
    nodes.path = CorePath("", "nodes");
    nodes.resync_period = std::chrono::seconds(0);
    nodes.transform = TrimCachedNode;  // a heartbeat then changes nothing cached
    nodes_ = std::make_unique<kube::Informer>(client_, nodes, logger_);
    nodes_->AddHandler([this](const kube::Delta& d) { OnNode(d); });
  }
}

Controller::~Controller() { Stop(); }

bool Controller::Start(std::chrono::milliseconds sync_timeout) {
  for (auto& [ns, w] : watched_) {
    w.pods->Start();
    w.services->Start();
    w.jobs->Start();
  }
  // Not waited for: without the right to list nodes (an older RBAC) jobs still run, and node
  // failures are handled once it syncs.
  if (nodes_) nodes_->Start();
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
  pool_ = std::make_unique<TaskPool>(std::max(1, options_.create_parallelism));
  if (options_.progress.interval.count() > 0) {
    const ProgressOptions& p = options_.progress;
    progress_ = std::make_unique<ProgressTracker>(
        p,
        [timeout = p.timeout](const std::string& address) {
          return http::Get(address, "/metrics", {timeout, kMaxProgressPageBytes});
        },
        [this](const std::string& key) { queue_.Add(key); }, logger_);
    progress_->Start();
  }
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Worker(); });
  return true;
}

void Controller::Stop() {
  if (progress_) progress_->Stop();  // before the queue: a due read adds to it
  queue_.ShutDown();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  pool_.reset();
  progress_.reset();
  for (auto& [ns, w] : watched_) {
    w.jobs->Stop();
    w.pods->Stop();
    w.services->Stop();
  }
  if (nodes_) nodes_->Stop();
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
    settings_judged_.erase(key);
    secured_.erase(MetaString(*delta.object, "uid"));
    if (progress_) progress_->Untrack(key);
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
  if (delta.type != kube::DeltaType::kSync) queue_.AddAfter(key, options_.child_event_delay);
}

void Controller::OnNode(const kube::Delta& delta) {
  const std::string name = MetaString(*delta.object, "name");
  const NodeHealth health = ObserveNode(*delta.object);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (delta.type == kube::DeltaType::kDeleted || !health.failed) {
      node_failed_seen_.erase(name);
      return;
    }
    node_failed_seen_.try_emplace(
        name, std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
  }
  std::set<std::string> jobs;
  for (const auto& [ns, w] : watched_) {
    for (const auto& pod : w.pods->store().ByIndex(NodeIndexValue(name))) {
      if (std::string job = ControllerName(*pod); !job.empty())
        jobs.insert(MetaString(*pod, "namespace") + "/" + job);
    }
  }
  for (const auto& key : jobs) queue_.Add(key);
}

NodeFailurePlan Controller::PlanLostPods(const tf::TFJob& job, const Observation& seen,
                                         tf::Time now) {
  if (!nodes_ || tf::IsFinished(job.status)) return {};
  std::map<std::string, NodeHealth> nodes;
  for (const auto& pod : seen.pods) {
    if (pod.node.empty() || nodes.count(pod.node) != 0) continue;
    const kube::ObjectPtr node = nodes_->store().Get(pod.node);
    if (node == nullptr) continue;
    NodeHealth health = ObserveNode(*node);
    if (health.failed) {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto seen_at = node_failed_seen_.find(pod.node); seen_at != node_failed_seen_.end())
        health.seen_since = seen_at->second;
    }
    nodes.emplace(pod.node, std::move(health));
  }
  return PlanNodeFailures(nodes, seen.pods, now, options_.node_failure_after);
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

absl::StatusOr<json> Controller::PutStatus(const json& body) {
  auto written = client_->Put(
      TFJobPath(MetaString(body, "namespace"), MetaString(body, "name")) + "/status", body);
  if (written.ok()) metrics_.status_updates.fetch_add(1);
  return written;
}

absl::Status Controller::HandleInvalid(const json& object, const absl::Status& error) {
  std::string key = kube::ObjectKey(object);
  const json previous_json = object.value("status", json::object());
  auto previous = tf::StatusFromJson(previous_json);
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
  auto written = PutStatus(StatusBody(object, StatusJson(status, LedgerFromStatus(previous_json))));
  if (!written.ok() && written.status().code() != absl::StatusCode::kNotFound)
    return written.status();
  return absl::OkStatus();
}

// ---- observe ----

// The job's children as the caches show them, corrected by the expectations: pods created but
// not yet seen are expected (Pending replicas), pods this controller deletes are marked.
Observation Controller::Observe(const JobContext& job, const Watched& watched) {
  Observation seen;
  // The caches are read under the lock the handlers take to settle expectations, and a store is
  // updated before its handlers run: a child is then either in the snapshot or still expected,
  // never neither.
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<kube::ObjectPtr> pods = Owned(watched.pods.get(), job.key, job.uid);
  const std::vector<kube::ObjectPtr> services = Owned(watched.services.get(), job.key, job.uid);
  Expectations& exp = expectations_[job.key];
  const auto now = SteadyClock::now();

  std::set<std::string> pod_names;
  for (const auto& pod : pods) {
    ObservedPod& seen_pod = seen.pods.emplace_back();
    seen_pod.name = MetaString(*pod, "name");
    seen_pod.uid = MetaString(*pod, "uid");
    seen_pod.replica = ObserveReplica(*pod);
    seen_pod.deleting = exp.deleting.count(seen_pod.uid) != 0;
    seen_pod.termination_message = TerminationMessage(*pod);
    seen_pod.node = PodNodeName(*pod);
    seen_pod.incarnation = PodIncarnation(*pod);
    pod_names.insert(seen_pod.name);
  }
  for (auto it = exp.pods.begin(); it != exp.pods.end();) {
    if (pod_names.count(it->first) != 0 || now > it->second.second) {
      it = exp.pods.erase(it);
    } else {
      seen.expected_pods.push_back(it->second.first);
      ++it;
    }
  }
  // Deletions the informer never confirmed: the pod is gone from the cache.
  std::erase_if(exp.deleting,
                [&](const auto& entry) { return pod_names.count(entry.second) == 0; });

  std::set<std::string> service_names;
  for (const auto& svc : services) {
    seen.services.push_back({MetaString(*svc, "name"), HasDeletionTimestamp(*svc)});
    service_names.insert(seen.services.back().name);
  }
  for (auto it = exp.services.begin(); it != exp.services.end();) {
    if (service_names.count(it->first) != 0 || now > it->second) {
      it = exp.services.erase(it);
    } else {
      seen.expected_services.insert(it->first);
      ++it;
    }
  }
  return seen;
}

// ---- decide (plan.h) and write the status ----

absl::Status Controller::WriteDecidedStatus(const JobContext& ctx, json object, tf::TFJob& job,
                                            const Observation& seen, tf::Time now,
                                            Decision& decision, bool& gone) {
  if (decision.write_status) {
    StatusWriteOps ops;
    ops.put = [&](const json& body) { return PutStatus(body); };
    ops.get = [&] { return client_->Get(TFJobPath(ctx.ns, ctx.name)); };
    ops.redecide = [&](const json& fresh) -> absl::StatusOr<StatusWriteOps::Redecision> {
      auto reloaded = tf::LoadTFJob(fresh, options_.limits);
      if (!reloaded.ok()) {
        // Nothing more to do for an invalid job than to say so; the job counts as gone, so the
        // reconcile ends here whatever this write returns.
        (void)HandleInvalid(fresh, reloaded.status());
        return StatusWriteOps::Redecision{true, std::nullopt};
      }
      job = std::move(*reloaded);
      decision =
          DecideAll(ctx, job, LedgerFromStatus(fresh.value("status", json::object())), seen, now);
      if (!decision.write_status) return StatusWriteOps::Redecision{};
      return StatusWriteOps::Redecision{false, StatusJson(decision.update.status, decision.ledger)};
    };
    TAAS_ASSIGN_OR_RETURN(
        StatusWrite result,
        WriteStatusRetryingConflicts(std::move(object),
                                     StatusJson(decision.update.status, decision.ledger), ops,
                                     ctx.log, metrics_.status_conflicts));
    gone = result.gone;
    if (result.written) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        written_[ctx.key] = std::make_shared<const json>(std::move(*result.written));
      }
      if (const auto& progress = decision.update.status.progress;
          progress && tf::ProgressChanged(job.status.progress, progress)) {
        metrics_.progress_writes.fetch_add(1);
        if (progress_) progress_->Written(ctx.key, *progress, SteadyClock::now());
      }
      for (const auto& event : decision.update.events) {  // once, with the status that says it
        ctx.log.Info("job condition changed",
                     {{"reason", event.reason}, {"message", event.message}});
        if (event.warning) {
          events_.Warning(ctx.ref, event.reason, event.message);
        } else {
          events_.Normal(ctx.ref, event.reason, event.message);
        }
      }
    }
  }
  if (!gone) job.status = decision.update.status;
  return absl::OkStatus();
}

// Writes the status and acts on the children. Restarts must be counted (the status written)
// before their pods are deleted; with no pod to delete, the status write goes out together with
// the pod creations. Services are created last, behind every pod creation of every job (Decide
// already waits until the job has no pod left to create).
absl::Status Controller::Act(const JobContext& ctx, const json& object, tf::TFJob& job,
                             const Observation& seen, tf::Time now, Decision& decision, bool& gone,
                             bool& blocked) {
  if (!tf::IsFinished(job.status) && !decision.create_pods.empty()) {
    if (const Gang gang = GangOf(options_.build); gang.scheduler != GangScheduler::kNone)
      EnsurePodGroup(ctx, job, gang);
  }
  if (decision.ensure_job_access) TAAS_RETURN_IF_ERROR(EnsureJobAccess(ctx, job));
  std::atomic<bool> create_blocked{false};
  std::vector<TaskPool::Task> tasks;
  absl::Status acted;
  if (decision.delete_pods.empty() && decision.create_pods.empty() &&
      decision.delete_services.empty()) {
    // The status alone (a running job's progress, a condition): written here, so it never waits
    // in the shared pool ahead of other jobs' creations, nor holds a thread of it.
    acted = WriteDecidedStatus(ctx, object, job, seen, now, decision, gone);
  } else if (decision.delete_pods.empty()) {
    for (const auto& ref : decision.create_pods)
      tasks.push_back(CreatePodTask(
          ctx, job, ref, NewestIncarnation(seen, tf::ReplicaName(ctx.name, ref.type, ref.index)),
          create_blocked));
    for (const auto& svc : decision.delete_services) tasks.push_back(DeleteServiceTask(ctx, svc));
    tf::TFJob decided_job = job;
    Decision decided = decision;
    tasks.push_back([&]() -> absl::Status {
      return WriteDecidedStatus(ctx, object, decided_job, seen, now, decided, gone);
    });
    acted = pool_->RunAll(std::move(tasks));
    job = std::move(decided_job);
    decision = std::move(decided);
  } else {
    TAAS_RETURN_IF_ERROR(WriteDecidedStatus(ctx, object, job, seen, now, decision, gone));
    if (gone) return absl::OkStatus();
    for (const auto& pod : decision.delete_pods) tasks.push_back(DeletePodTask(ctx, pod));
    for (const auto& svc : decision.delete_services) tasks.push_back(DeleteServiceTask(ctx, svc));
    for (const auto& ref : decision.create_pods)
      tasks.push_back(CreatePodTask(
          ctx, job, ref, NewestIncarnation(seen, tf::ReplicaName(ctx.name, ref.type, ref.index)),
          create_blocked));
    acted = pool_->RunAll(std::move(tasks));
  }
  if (gone) return absl::OkStatus();
  if (!decision.create_services.empty()) {
    auto shared_ctx = std::make_shared<const JobContext>(ctx);  // one copy for the job's tasks
    std::vector<TaskPool::Task> later;
    for (const auto& ref : decision.create_services)
      later.push_back(CreateServiceTask(shared_ctx, ref));
    pool_->RunLater(std::move(later));
  }
  blocked = decision.blocked || create_blocked;
  return acted;
}

// Time-based follow-ups: the deadline or Stuck timeout, a blocked replica, the TTL. After a failed
// act step (`acted_ok` false) the queue's per-key backoff decides when to look again: a pod the
// API server refuses (an invalid template) would otherwise be retried every second, forever.
absl::Status Controller::FollowUp(const JobContext& ctx, const tf::TFJob& job,
                                  const Decision& decision, bool blocked, bool acted_ok,
                                  tf::Time now) {
  if (decision.update.requeue_at) {
    auto delay = *decision.update.requeue_at - now;
    queue_.AddAfter(ctx.key,
                    std::max<std::chrono::steady_clock::duration>(delay, std::chrono::seconds(1)));
  }
  // Services wait for the pods (Decide): look again once the pods are created.
  if (acted_ok && (blocked || (!decision.create_pods.empty() && decision.create_services.empty())))
    queue_.AddAfter(ctx.key, std::chrono::seconds(1));
  if (!tf::IsFinished(job.status)) return absl::OkStatus();
  auto expiry = tf::TtlExpiry(job);
  if (!expiry) return absl::OkStatus();
  if (now < *expiry) {
    queue_.AddAfter(ctx.key, *expiry - now);
    return absl::OkStatus();
  }
  auto deleted =
      client_->Delete(TFJobPath(ctx.ns, ctx.name),
                      {{"preconditions", {{"uid", ctx.uid}}}, {"propagationPolicy", "Background"}});
  if (!deleted.ok() && deleted.status().code() != absl::StatusCode::kNotFound)
    return deleted.status();
  metrics_.jobs_deleted_ttl.fetch_add(1);
  ctx.log.Info("deleted finished job: ttlSecondsAfterFinished expired");
  events_.Normal(ctx.ref, "TFJobDeleted",
                 "Deleted TFJob " + ctx.key + ": ttlSecondsAfterFinished expired");
  return absl::OkStatus();
}

namespace {

// A replica's termination message as a job report (job_report::Parse). A message that is no
// report is logged and ignored: the job's status never depends on it.
std::optional<job_report::JobReport> ParseMessage(const Logger& log,
                                                  const std::optional<ReplicaMessage>& message) {
  if (!message) return std::nullopt;
  absl::StatusOr<job_report::JobReport> report = job_report::Parse(message->text);
  if (!report.ok()) {
    log.Warning("ignoring a termination message: not a job report",
                {{"pod", message->pod}, {"error", std::string(report.status().message())}});
    return std::nullopt;
  }
  return *std::move(report);
}

// The job's result as its chief and its evaluator left it (job_report::JobResult), for a job not
// finished yet.
std::optional<ReportedResult> ReadJobResult(const Logger& log, const tf::TFJob& job,
                                            const Observation& seen, tf::Time now) {
  if (tf::IsFinished(job.status)) return std::nullopt;
  const ResultMessages messages = FindResultMessages(job.spec, seen);
  return PickResult(messages, ParseMessage(log, messages.chief),
                    ParseMessage(log, messages.evaluator), now);
}

}  // namespace

Decision Controller::DecideAll(const JobContext& ctx, const tf::TFJob& job,
                               const RestartLedger& ledger, const Observation& seen, tf::Time now) {
  Decision decision = Decide(job, ledger, seen, now, options_.status);
  ProgressTracker::Snapshot snapshot;
  if (progress_) snapshot = progress_->Get(ctx.key);
  const bool due = snapshot.latest &&
                   ProgressWriteDue(job.status.progress, *snapshot.latest, snapshot.last_write,
                                    SteadyClock::now(), options_.progress.interval);
  // The chief's result is taken with progress reading off too (--progress-seconds 0): it costs
  // no scrape.
  DecideProgress(job.status, snapshot.latest, due, ReadJobResult(ctx.log, job, seen, now),
                 decision);
  return decision;
}

void Controller::WarnOnSettings(const JobContext& ctx, const tf::TFJob& job) {
  if (tf::IsFinished(job.status)) return;
  const std::pair<std::string, std::int64_t> judged{ctx.uid, job.metadata.generation};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, first] = settings_judged_.try_emplace(ctx.key, judged);
    if (!first && it->second == judged) return;
    it->second = judged;
  }
  const std::vector<tf::SettingDisagreement> disagreements = tf::DisagreeingSettings(job.spec);
  if (disagreements.empty()) return;
  const std::string message = tf::DisagreementMessage(disagreements);
  ctx.log.Warning("replica specs disagree on shared settings", {{"message", message}});
  events_.Warning(ctx.ref, std::string(tf::kSettingsDisagreeReason), message);
}

// `job` carries the status just decided (and written).
void Controller::FollowProgress(const JobContext& ctx, const tf::TFJob& job) {
  if (!progress_) return;
  if (tf::IsFinished(job.status) || tf::IsSuspended(job.status)) {
    progress_->Untrack(ctx.key);
  } else if (tf::IsRunning(job.status)) {
    progress_->Track(ctx.key, ctx.uid,
                     ProgressTargets(job, options_.build.addressing, options_.progress.targets),
                     MaxStepsFromSpec(job.spec));
  }
}

absl::Status Controller::Reconcile(const std::string& key) {
  kube::ObjectPtr object = CurrentJob(key);
  if (object == nullptr) {
    if (progress_) progress_->Untrack(key);
    std::lock_guard<std::mutex> lock(mu_);
    expectations_.erase(key);
    settings_judged_.erase(key);
    return absl::OkStatus();
  }
  if (HasDeletionTimestamp(*object)) return absl::OkStatus();  // children go with the job (GC)

  const JobContext ctx{
      key,
      MetaString(*object, "namespace"),
      MetaString(*object, "name"),
      MetaString(*object, "uid"),
      kube::ObjectReference::Of(*object, std::string(tf::kApiVersion), std::string(tf::kKind)),
      logger_.With({{"job", key}})};
  const Watched* watched = WatchedFor(ctx.ns);
  if (watched == nullptr) return absl::OkStatus();
  // As Kubeflow: a job another controller manages (Kueue's MultiKueue runs it on another cluster
  // and writes its status here) gets no child and no status write, valid or not.
  if (auto manager = tf::ManagedByOtherController(*object)) {
    ctx.log.Debug("skipping TFJob managed by another controller",
                  {{"managedBy", manager->substr(0, 63)}});
    return absl::OkStatus();
  }
  auto loaded = tf::LoadTFJob(*object, options_.limits);
  if (!loaded.ok()) return HandleInvalid(*object, loaded.status());
  tf::TFJob job = std::move(*loaded);
  WarnOnSettings(ctx, job);

  // observe -> decide -> act
  Observation observed = Observe(ctx, *watched);
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  const NodeFailurePlan lost = PlanLostPods(job, observed, now);
  observed.lost_pods = lost.lost_pods;
  const Observation& seen = observed;
  Decision decision =
      DecideAll(ctx, job, LedgerFromStatus(object->value("status", json::object())), seen, now);
  for (const auto& message : lost.events) {  // with the forced deletions Act makes
    ctx.log.Warning("replacing replicas of a failed node", {{"message", message}});
    events_.Warning(ctx.ref, std::string(kReasonNodeFailure), message);
  }
  if (lost.requeue_at) {  // a failing node reaches the threshold then, with no other event
    queue_.AddAfter(
        key, std::max<SteadyClock::duration>(*lost.requeue_at - now, std::chrono::seconds(1)));
  }
  bool gone = false;
  bool blocked = false;
  absl::Status acted = Act(ctx, *object, job, seen, now, decision, gone, blocked);
  if (gone) return absl::OkStatus();
  FollowProgress(ctx, job);
  absl::Status followed = FollowUp(ctx, job, decision, blocked, acted.ok(), now);
  return acted.ok() ? followed : acted;
}

}  // namespace taas::controller
