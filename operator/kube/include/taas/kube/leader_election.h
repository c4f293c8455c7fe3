// Leader election on a coordination.k8s.io/v1 Lease, like client-go's leaderelection: the leader
// renews the Lease every retry period; a candidate takes the Lease over once it has seen the same
// holder record unchanged for a whole lease duration (measured on its own clock, so clock skew
// between machines does not matter). A leader that cannot renew within the renew deadline stops
// leading. Release() after stopping the work hands the Lease over to a standby at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "taas/base/log.h"
#include "taas/kube/client.h"

namespace taas::kube {

struct LeaderElectionOptions {
  std::string namespace_name = "default";
  std::string name = "taas-operator";
  std::string identity;  // unique per process, e.g. "<host>_<pid>"
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
};

// Whether a candidate may take a Lease whose spec it observed: true when it holds it already, when
// nobody holds it, or when the holder's record has not changed for lease_duration since
// `observed_at` (the local time the candidate first saw this record).
bool LeaseTakeable(const nlohmann::json& lease_spec, const std::string& identity,
                   std::chrono::steady_clock::time_point observed_at,
                   std::chrono::steady_clock::time_point now, std::chrono::seconds lease_duration);

class LeaderElector {
 public:
  LeaderElector(Client* client, LeaderElectionOptions options, Logger logger);
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Blocks until this process leads (true), or Stop() is called (false).
  bool Acquire();
  // Blocks while leading, renewing the Lease; returns when leadership is lost (false) or Stop()
  // is called (true). Call Release() once the work is stopped, so a standby takes over at once.
  bool HoldUntilStopped();
  void Stop();
  // Gives the Lease up if this process holds it (holder cleared, 1 s duration).
  void Release();
  bool IsLeader() const;

 private:
  bool TryAcquireOrRenew();
  bool Sleep(std::chrono::milliseconds duration);  // false when stopped
  std::string LeasePath() const;

  Client* client_;
  const LeaderElectionOptions options_;
  Logger logger_;
  std::string observed_record_;  // holder + renewTime last seen
  std::chrono::steady_clock::time_point observed_at_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
  bool leader_ = false;   // guarded by mu_
};

}  // namespace taas::kube
