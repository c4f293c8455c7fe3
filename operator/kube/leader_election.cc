#include "taas/kube/leader_election.h"

#include <random>

#include "taas/kube/events.h"

namespace taas::kube {

bool LeaseTakeable(const nlohmann::json& lease_spec, const std::string& identity,
                   std::chrono::steady_clock::time_point observed_at,
                   std::chrono::steady_clock::time_point now, std::chrono::seconds lease_duration) {
  std::string holder = lease_spec.is_object() ? lease_spec.value("holderIdentity", "") : "";
  if (holder.empty() || holder == identity) return true;
  auto duration = lease_duration;
  if (lease_spec.contains("leaseDurationSeconds") && lease_spec["leaseDurationSeconds"].is_number())
    duration = std::chrono::seconds(lease_spec["leaseDurationSeconds"].get<int>());
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

bool LeaderElector::TryAcquireOrRenew() {
  auto now_steady = std::chrono::steady_clock::now();
  std::string now = NowRfc3339Micro();
  auto lease = client_->Get(LeasePath());
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
        "/apis/coordination.k8s.io/v1/namespaces/" + options_.namespace_name + "/leases", object);
    return created.ok();
  }
  nlohmann::json spec = lease->value("spec", nlohmann::json::object());
  std::string record = spec.value("holderIdentity", "") + "|" + spec.value("renewTime", "");
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = now_steady;
  }
  if (!LeaseTakeable(spec, options_.identity, observed_at_, now_steady, options_.lease_duration))
    return false;
  std::string holder = spec.value("holderIdentity", "");
  if (holder != options_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
    spec["holderIdentity"] = options_.identity;
  }
  spec["renewTime"] = now;
  spec["leaseDurationSeconds"] = options_.lease_duration.count();
  (*lease)["spec"] = spec;
  auto updated = client_->Put(LeasePath(), *lease);
  if (!updated.ok()) return false;  // 409: somebody else wrote first
  observed_record_ = options_.identity + "|" + now;
  observed_at_ = now_steady;
  return true;
}

bool LeaderElector::Sleep(std::chrono::milliseconds duration) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, duration, [this] { return stopped_; });
  return !stopped_;
}

bool LeaderElector::Acquire() {
  std::minstd_rand rng(std::random_device{}());
  logger_.Info("waiting for leadership");
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return false;
    }
    if (TryAcquireOrRenew()) {
      std::lock_guard<std::mutex> lock(mu_);
      leader_ = true;
      logger_.Info("became leader");
      return true;
    }
    auto base = std::chrono::duration_cast<std::chrono::milliseconds>(options_.retry_period);
    auto jitter = std::chrono::milliseconds(rng() % (base.count() / 5 + 1));
    if (!Sleep(base + jitter)) return false;
  }
}

bool LeaderElector::HoldUntilStopped() {
  auto last_renew = std::chrono::steady_clock::now();
  for (;;) {
    if (!Sleep(std::chrono::duration_cast<std::chrono::milliseconds>(options_.retry_period)))
      return true;
    if (TryAcquireOrRenew()) {
      last_renew = std::chrono::steady_clock::now();
      continue;
    }
    if (std::chrono::steady_clock::now() - last_renew > options_.renew_deadline) {
      std::lock_guard<std::mutex> lock(mu_);
      leader_ = false;
      logger_.Error("lost leadership: could not renew the lease in time");
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
  auto lease = client_->Get(LeasePath());
  if (!lease.ok() || (*lease)["spec"].value("holderIdentity", "") != options_.identity) return;
  (*lease)["spec"]["holderIdentity"] = "";
  (*lease)["spec"]["leaseDurationSeconds"] = 1;
  if (client_->Put(LeasePath(), *lease).ok()) logger_.Info("released the lease");
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
