#include "taas/kube/leader_election.h"

#include <algorithm>
#include <random>

#include "taas/base/json_fields.h"
#include "taas/kube/events.h"

namespace taas::kube {

namespace jf = taas::json_fields;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

milliseconds EffectiveCallTimeout(const LeaderElectionOptions& options) {
  const milliseconds renew = options.renew_deadline;
  if (options.call_timeout.count() > 0) return std::min(options.call_timeout, renew);
  return renew / 2;
}

milliseconds Remaining(SteadyClock::time_point until, SteadyClock::time_point now) {
  return std::chrono::duration_cast<milliseconds>(until - now);
}

}  // namespace

absl::Status ValidateLeaderElectionOptions(const LeaderElectionOptions& options) {
  if (options.retry_period.count() <= 0)
    return absl::InvalidArgumentError("leader election: retry_period must be positive");
  if (options.renew_deadline <= options.retry_period) {
    return absl::InvalidArgumentError("leader election: renew_deadline (" +
                                      std::to_string(options.renew_deadline.count()) +
                                      " s) must be longer than retry_period (" +
                                      std::to_string(options.retry_period.count()) + " s)");
  }
  if (options.lease_duration <= options.renew_deadline) {
    return absl::InvalidArgumentError(
        "leader election: lease_duration (" + std::to_string(options.lease_duration.count()) +
        " s) must be longer than renew_deadline (" +
        std::to_string(options.renew_deadline.count()) +
        " s), or a leader could still work after a standby took over");
  }
  if (options.call_timeout.count() < 0)
    return absl::InvalidArgumentError("leader election: call_timeout must not be negative");
  return absl::OkStatus();
}

LeaseRenewal::LeaseRenewal(const LeaderElectionOptions& options, Clock::time_point acquired_at)
    : renew_deadline_(options.renew_deadline),
      retry_period_(options.retry_period),
      call_timeout_(EffectiveCallTimeout(options)),
      deadline_(acquired_at + renew_deadline_) {}

milliseconds LeaseRenewal::CallTimeout(Clock::time_point now) const {
  return std::max(milliseconds(1), std::min(call_timeout_, Remaining(deadline_, now)));
}

milliseconds LeaseRenewal::NextAttemptIn(Clock::time_point now) const {
  return std::max(milliseconds(0), std::min(retry_period_, Remaining(deadline_, now)));
}

void LeaseRenewal::Renewed(Clock::time_point attempt_start) {
  deadline_ = std::max(deadline_, attempt_start + renew_deadline_);
}

bool LeaseTakeable(const nlohmann::json& lease_spec, const std::string& identity,
                   std::chrono::steady_clock::time_point observed_at,
                   std::chrono::steady_clock::time_point now, std::chrono::seconds lease_duration) {
  std::string holder = jf::StringOr(lease_spec, "holderIdentity", "");
  if (holder.empty() || holder == identity) return true;
  auto duration = lease_duration;
  // A lease's own duration within a day is honoured (a released lease has 1 s); anything else
  // is not trusted.
  if (auto seconds = jf::Int(lease_spec, "leaseDurationSeconds");
      seconds && *seconds > 0 && *seconds <= 86400)
    duration = std::chrono::seconds(*seconds);
  return now >= observed_at + duration;
}

LeaderElector::LeaderElector(Client* client, LeaderElectionOptions options, Logger logger)
    : client_(client),
      options_(std::move(options)),
      logger_(logger.With({{"lease", options_.namespace_name + "/" + options_.name},
                           {"identity", options_.identity}})) {}

std::string LeaderElector::LeasePath() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.namespace_name + "/leases/" +
         options_.name;
}

bool LeaderElector::TryAcquireOrRenew(const std::function<milliseconds()>& timeout) {
  const auto attempt_start = SteadyClock::now();
  std::string now = NowRfc3339Micro();
  auto lease = client_->Get(LeasePath(), CallOptions{timeout()});
  // Measured after the read arrived: the record shown was written no later than this.
  const auto read_at = SteadyClock::now();
  if (!lease.ok()) {
    if (lease.status().code() != absl::StatusCode::kNotFound) {
      logger_.Warning("cannot read lease", {{"error", std::string(lease.status().message())}});
      return false;
    }
    nlohmann::json object = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", options_.name}, {"namespace", options_.namespace_name}}},
        {"spec",
         {{"holderIdentity", options_.identity},
          {"leaseDurationSeconds", options_.lease_duration.count()},
          {"acquireTime", now},
          {"renewTime", now},
          {"leaseTransitions", 0}}}};
    auto created = client_->Post(
        "/apis/coordination.k8s.io/v1/namespaces/" + options_.namespace_name + "/leases", object,
        CallOptions{timeout()});
    if (created.ok()) acquired_at_ = attempt_start;
    return created.ok();
  }
  const nlohmann::json* found_spec = jf::Object(*lease, "spec");
  nlohmann::json spec = found_spec == nullptr ? nlohmann::json::object() : *found_spec;
  const std::string holder = jf::StringOr(spec, "holderIdentity", "");
  std::string record = holder + "|" + jf::StringOr(spec, "renewTime", "");
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = read_at;
  }
  if (!LeaseTakeable(spec, options_.identity, observed_at_, read_at, options_.lease_duration))
    return false;
  if (holder != options_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = jf::Int(spec, "leaseTransitions").value_or(0) + 1;
    spec["holderIdentity"] = options_.identity;
  }
  spec["renewTime"] = now;
  spec["leaseDurationSeconds"] = options_.lease_duration.count();
  (*lease)["spec"] = spec;
  auto updated = client_->Put(LeasePath(), *lease, CallOptions{timeout()});
  if (!updated.ok()) {  // 409: somebody else wrote first; or the call ran out of time
    logger_.Debug("cannot write lease", {{"error", std::string(updated.status().message())}});
    return false;
  }
  observed_record_ = options_.identity + "|" + now;
  observed_at_ = SteadyClock::now();
  acquired_at_ = attempt_start;
  return true;
}

bool LeaderElector::Sleep(milliseconds duration) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, duration, [this] { return stopped_; });
  return !stopped_;
}

bool LeaderElector::Acquire() {
  std::minstd_rand rng(std::random_device{}());
  logger_.Info("waiting for leadership");
  const milliseconds call_timeout = EffectiveCallTimeout(options_);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return false;
    }
    if (TryAcquireOrRenew([&] { return call_timeout; })) {
      std::lock_guard<std::mutex> lock(mu_);
      leader_ = true;
      logger_.Info("became leader");
      return true;
    }
    auto base = std::chrono::duration_cast<milliseconds>(options_.retry_period);
    auto jitter = milliseconds(rng() % (base.count() / 5 + 1));
    if (!Sleep(base + jitter)) return false;
  }
}

bool LeaderElector::HoldUntilStopped() {
  LeaseRenewal renewal(options_, acquired_at_);
  for (;;) {
    if (!Sleep(renewal.NextAttemptIn(SteadyClock::now()))) return true;
    if (renewal.Leading(SteadyClock::now())) {
      const auto attempt_start = SteadyClock::now();
      if (TryAcquireOrRenew([&] { return renewal.CallTimeout(SteadyClock::now()); })) {
        renewal.Renewed(attempt_start);
        continue;
      }
    }
    if (!renewal.Leading(SteadyClock::now())) {
      std::lock_guard<std::mutex> lock(mu_);
      leader_ = false;
      logger_.Error(
          "lost leadership: could not renew the lease within the renew deadline",
          {{"renew_deadline_s", static_cast<std::int64_t>(options_.renew_deadline.count())}});
      return false;
    }
  }
}

void LeaderElector::Release() {
  bool was_leader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_leader = leader_;
    leader_ = false;
  }
  if (!was_leader) return;
  const CallOptions call{EffectiveCallTimeout(options_)};
  auto lease = client_->Get(LeasePath(), call);
  if (!lease.ok()) return;
  const nlohmann::json* spec = jf::Object(*lease, "spec");
  if (spec == nullptr || jf::StringOr(*spec, "holderIdentity", "") != options_.identity) return;
  (*lease)["spec"]["holderIdentity"] = "";
  (*lease)["spec"]["leaseDurationSeconds"] = 1;
  if (client_->Put(LeasePath(), *lease, call).ok()) logger_.Info("released the lease");
}

void LeaderElector::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool LeaderElector::IsLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return leader_;
}

}  // namespace taas::kube
