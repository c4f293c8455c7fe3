#include "schedule.h"

#include <doctest/doctest.h>

#include <chrono>

namespace taas::runtime {
namespace {

using Clock = StepsOrSecsSchedule::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A fake clock: time points at fixed offsets from an arbitrary origin.
const Clock::time_point t0{};

TEST_CASE("by seconds only: due once the period passed since the last time, whatever the steps") {
  StepsOrSecsSchedule summaries(/*steps=*/0, /*secs=*/30);
  summaries.Happened(0, t0);
  CHECK_FALSE(summaries.Due(1, t0 + seconds(1)));
  CHECK_FALSE(summaries.Due(100000, t0 + milliseconds(29999)));
  CHECK(summaries.Due(7, t0 + seconds(30)));
  summaries.Happened(7, t0 + seconds(31));
  CHECK_FALSE(summaries.Due(8, t0 + seconds(60)));
  CHECK(summaries.Due(8, t0 + seconds(61)));
}

TEST_CASE("by steps only: due every N global steps since the last time, whatever the time") {
  StepsOrSecsSchedule checkpoints(/*steps=*/100, /*secs=*/0);
  checkpoints.Happened(0, t0);
  CHECK_FALSE(checkpoints.Due(99, t0 + seconds(86400)));
  CHECK(checkpoints.Due(100, t0));
  // Asynchronous replicas move the global step by more than one: the count is a difference.
  CHECK(checkpoints.Due(103, t0));
  checkpoints.Happened(103, t0);
  CHECK_FALSE(checkpoints.Due(200, t0));
  CHECK(checkpoints.Due(203, t0));
}

TEST_CASE("both set: whichever comes first, and either restarts both counts") {
  StepsOrSecsSchedule s(/*steps=*/100, /*secs=*/10);
  s.Happened(0, t0);
  // Slow steps: the seconds come first.
  CHECK(s.Due(40, t0 + seconds(10)));
  s.Happened(40, t0 + seconds(10));
  // The step count restarted at 40 too: step 100 is not due, 140 is.
  CHECK_FALSE(s.Due(100, t0 + seconds(11)));
  CHECK(s.Due(140, t0 + seconds(11)));
  // Fast steps: the steps come first, and the seconds restart from there.
  s.Happened(140, t0 + seconds(11));
  CHECK_FALSE(s.Due(239, t0 + seconds(20)));
  CHECK(s.Due(240, t0 + seconds(12)));
  s.Happened(240, t0 + seconds(12));
  CHECK_FALSE(s.Due(241, t0 + seconds(21)));
  CHECK(s.Due(241, t0 + seconds(22)));
}

TEST_CASE("never twice at one global step, never when both are off") {
  StepsOrSecsSchedule s(/*steps=*/1, /*secs=*/1);
  s.Happened(5, t0);
  CHECK_FALSE(s.Due(5, t0 + seconds(3600)));
  CHECK(s.Due(6, t0));
  StepsOrSecsSchedule off(/*steps=*/0, /*secs=*/0);
  CHECK_FALSE(off.Due(0, t0));
  off.Happened(0, t0);
  CHECK_FALSE(off.Due(1000000, t0 + seconds(86400)));
}

TEST_CASE("before it first happened it is due at once (the summary at training's first step)") {
  StepsOrSecsSchedule summaries(/*steps=*/100, /*secs=*/0);
  CHECK(summaries.Due(1, t0));
  StepsOrSecsSchedule by_time(/*steps=*/0, /*secs=*/60);
  CHECK(by_time.Due(1, t0));
}

TEST_CASE("a failed attempt restarts the seconds only") {
  StepsOrSecsSchedule s(/*steps=*/10, /*secs=*/60);
  s.Happened(0, t0);
  REQUIRE(s.Due(3, t0 + seconds(60)));
  s.RestartSeconds(t0 + seconds(60));
  CHECK_FALSE(s.Due(4, t0 + seconds(61)));
  CHECK(s.Due(4, t0 + seconds(120)));
  // The steps still count from the last time it happened.
  CHECK(s.Due(10, t0 + seconds(61)));
}

}  // namespace
}  // namespace taas::runtime
