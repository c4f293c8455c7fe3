// SIGTERM and SIGINT as a request to stop that a process's loops read between steps, instead of
// the default end that loses the work in flight. Kubernetes ends a pod (preemption, eviction,
// `kubectl drain`) with SIGTERM, then SIGKILL once the pod's terminationGracePeriodSeconds have
// passed; TerminationDeadline counts that time from the signal.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>

#include "taas/base/status.h"

namespace taas {

// A termination signal as it arrived: which one, and when (on the steady clock).
struct TerminationRequest {
  int signal = 0;
  std::chrono::steady_clock::time_point at;
};

// "SIGTERM" or "SIGINT" (the signals TerminationSignals handles), for log lines.
std::string_view TerminationSignalName(int signal);

// The moment a terminating process must be done by: the signal's time plus its grace. Pure.
class TerminationDeadline {
 public:
  TerminationDeadline(const TerminationRequest& request, std::chrono::duration<double> grace)
      : request_(request),
        at_(request.at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(grace)) {}

  const TerminationRequest& request() const { return request_; }
  std::chrono::steady_clock::time_point at() const { return at_; }
  // Seconds left at `now`; 0 once the deadline passed.
  double SecondsLeft(std::chrono::steady_clock::time_point now) const;
  bool Passed(std::chrono::steady_clock::time_point now) const { return now >= at_; }
  // Seconds from the signal to `now`.
  double SecondsSinceSignal(std::chrono::steady_clock::time_point now) const;

 private:
  TerminationRequest request_;
  std::chrono::steady_clock::time_point at_;
};

// Handles SIGTERM and SIGINT while it lives. The handler is async-signal-safe: it only stores the
// first signal and its CLOCK_MONOTONIC time (steady_clock's clock on Linux) into lock-free
// atomics, which Requested() reads; a second signal ends the process at once with 128 + its
// number (_exit), as the signal would have, so a person pressing Ctrl-C twice is never kept
// waiting. The destructor restores the previous handlers. One per process at a time: Install
// fails with FailedPrecondition while another lives. Requested() is thread-safe and cheap.
class TerminationSignals {
 public:
  static absl::StatusOr<std::unique_ptr<TerminationSignals>> Install();
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // The first signal received since Install, if any.
  std::optional<TerminationRequest> Requested() const;

 private:
  TerminationSignals() = default;
};

}  // namespace taas
