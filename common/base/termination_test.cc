#include "taas/base/termination.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace taas {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

TEST_CASE("a termination deadline counts the grace from the signal") {
  const steady_clock::time_point signalled = steady_clock::time_point(seconds(100));
  const TerminationDeadline deadline({SIGTERM, signalled}, std::chrono::duration<double>(25));
  CHECK(deadline.at() == signalled + seconds(25));
  CHECK(deadline.SecondsLeft(signalled + seconds(5)) == doctest::Approx(20));
  CHECK(deadline.SecondsSinceSignal(signalled + seconds(5)) == doctest::Approx(5));
  CHECK_FALSE(deadline.Passed(signalled + seconds(24)));
  CHECK(deadline.Passed(signalled + seconds(25)));
  CHECK(deadline.SecondsLeft(signalled + seconds(40)) == 0);  // never negative
}

TEST_CASE("SIGTERM is a request the process reads, with its time; it does not end the process") {
  auto signals = TerminationSignals::Install();
  REQUIRE(signals.ok());
  CHECK_FALSE((*signals)->Requested().has_value());
  CHECK(TerminationSignals::Install().status().code() == absl::StatusCode::kFailedPrecondition);
  const auto before = steady_clock::now();
  REQUIRE(::raise(SIGTERM) == 0);  // the handler runs before raise returns
  const auto requested = (*signals)->Requested();
  REQUIRE(requested.has_value());
  CHECK(requested->signal == SIGTERM);
  CHECK(TerminationSignalName(requested->signal) == "SIGTERM");
  // The handler's CLOCK_MONOTONIC is the steady clock.
  CHECK(requested->at >= before);
  CHECK(requested->at <= steady_clock::now());
  signals->reset();
  // Once uninstalled, another may be installed, and it starts with no request.
  auto again = TerminationSignals::Install();
  REQUIRE(again.ok());
  CHECK_FALSE((*again)->Requested().has_value());
}

TEST_CASE("a second signal ends the process at once with 128 + its number") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto signals = TerminationSignals::Install();
    if (!signals.ok()) _exit(1);
    ::raise(SIGINT);
    if (!(*signals)->Requested()) _exit(2);
    ::raise(SIGTERM);
    _exit(3);  // not reached
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
}

}  // namespace
}  // namespace taas
