// Leader election on a coordination.k8s.io/v1 Lease, like client-go's leaderelection: the leader
// renews the Lease every retry period; a candidate takes the Lease over once it has seen the same
// holder record unchanged for a whole lease duration (measured on its own clock, so clock skew
// between machines does not matter). A leader that cannot renew within the renew deadline stops
// leading. Release() after stopping the work hands the Lease over to a standby at once.
//
// Why two operators never lead at once: every lease call ends within call_timeout and within the
// renew deadline (CallOptions), so a leader that cannot renew knows it by the renew deadline,
// counted from the start of its last successful renewal (the write landed no earlier). A standby
// counts the lease duration from when its read of that renewal arrived (no earlier than the
// write), and renew_deadline < lease_duration leaves the margin.
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
  // Deadline of each lease call; zero: half the renew deadline. Never beyond the renew deadline.
  std::chrono::milliseconds call_timeout{0};
};

// Checks the options: positive periods, retry_period < renew_deadline < lease_duration; an error
// names the field and the fix.
absl::Status ValidateLeaderElectionOptions(const LeaderElectionOptions& options);

// The leader's side of the timing, pure (time is passed in, so it is tested with a fake clock).
// The leader leads until renew_deadline after the start of its last successful renewal; each
// lease call gets the smaller of the call timeout and the time left until then.
class LeaseRenewal {
 public:
  using Clock = std::chrono::steady_clock;
  // `acquired_at`: when the call that took the lease started.
  LeaseRenewal(const LeaderElectionOptions& options, Clock::time_point acquired_at);

  bool Leading(Clock::time_point now) const { return now < deadline_; }
  Clock::time_point deadline() const { return deadline_; }
  // The timeout of a lease call made at `now` (at least 1 ms, so a call made just before the
  // deadline still has a deadline of its own).
  std::chrono::milliseconds CallTimeout(Clock::time_point now) const;
  // How long to wait at `now` before the next renewal: the retry period, cut at the deadline.
  std::chrono::milliseconds NextAttemptIn(Clock::time_point now) const;
  // A renewal that started at `attempt_start` succeeded.
  void Renewed(Clock::time_point attempt_start);

 private:
  std::chrono::milliseconds renew_deadline_;
  std::chrono::milliseconds retry_period_;
  std::chrono::milliseconds call_timeout_;
  Clock::time_point deadline_;
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
  // Blocks while leading, renewing the Lease; returns when leadership is lost (false: by the
  // renew deadline after the last successful renewal began, IsLeader() already false) or Stop()
  // is called (true). Call Release() once the work is stopped, so a standby takes over at once.
  bool HoldUntilStopped();
  void Stop();
  // Gives the Lease up if this process holds it (holder cleared, 1 s duration).
  void Release();
  bool IsLeader() const;

 private:
  // One read-and-write of the Lease; `timeout` gives each call its deadline.
  bool TryAcquireOrRenew(const std::function<std::chrono::milliseconds()>& timeout);
  bool Sleep(std::chrono::milliseconds duration);  // false when stopped
  std::string LeasePath() const;

  Client* client_;
  const LeaderElectionOptions options_;
  Logger logger_;
  std::string observed_record_;  // holder + renewTime last seen
  std::chrono::steady_clock::time_point observed_at_;
  std::chrono::steady_clock::time_point acquired_at_;  // start of the call that took the lease
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
  bool leader_ = false;   // guarded by mu_
};

}  // namespace taas::kube
