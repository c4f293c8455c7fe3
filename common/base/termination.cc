#include "taas/base/termination.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace taas {
namespace {

// What the handler writes: the only state a signal handler may touch is lock-free atomics.
std::atomic<int> g_signal{0};
std::atomic<std::int64_t> g_signal_at_ns{0};
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free &&
                  std::atomic<std::int64_t>::is_always_lock_free,
              "a signal handler may only use lock-free atomics");

struct sigaction g_previous_term {};
struct sigaction g_previous_int {};

void OnTerminationSignal(int sig) {
  if (g_signal.load() != 0) _exit(128 + sig);  // the second one: end now
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe (POSIX)
  g_signal_at_ns.store(static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec);
  g_signal.store(sig);
}

}  // namespace

std::string_view TerminationSignalName(int signal) {
  return signal == SIGINT ? "SIGINT" : "SIGTERM";
}

double TerminationDeadline::SecondsLeft(std::chrono::steady_clock::time_point now) const {
  return std::max(0.0, std::chrono::duration<double>(at_ - now).count());
}

double TerminationDeadline::SecondsSinceSignal(std::chrono::steady_clock::time_point now) const {
  return std::chrono::duration<double>(now - request_.at).count();
}

absl::StatusOr<std::unique_ptr<TerminationSignals>> TerminationSignals::Install() {
  if (g_installed.exchange(true)) {
    return absl::FailedPreconditionError("termination signals are already handled here");
  }
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = OnTerminationSignal;
  ::sigemptyset(&sa.sa_mask);
  // Neither interrupts the handler of the other: the first one's time is stored whole.
  ::sigaddset(&sa.sa_mask, SIGTERM);
  ::sigaddset(&sa.sa_mask, SIGINT);
  sa.sa_flags = SA_RESTART;  // blocking calls go on; the loops read the request between steps
  if (::sigaction(SIGTERM, &sa, &g_previous_term) != 0 ||
      ::sigaction(SIGINT, &sa, &g_previous_int) != 0) {
    const std::string error = std::strerror(errno);
    ::sigaction(SIGTERM, &g_previous_term, nullptr);
    g_installed.store(false);
    return absl::InternalError("cannot handle SIGTERM and SIGINT: " + error);
  }
  return std::unique_ptr<TerminationSignals>(new TerminationSignals());
}

TerminationSignals::~TerminationSignals() {
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  g_installed.store(false);
}

std::optional<TerminationRequest> TerminationSignals::Requested() const {
  const int sig = g_signal.load();
  if (sig == 0) return std::nullopt;
  return TerminationRequest{
      sig, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(g_signal_at_ns.load()))};
}

}  // namespace taas
