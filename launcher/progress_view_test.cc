#include "progress_view.h"

#include <doctest/doctest.h>

namespace taas::launcher {
namespace {

using std::chrono::seconds;
using Time = std::chrono::steady_clock::time_point;

ProgressSample At(int secs, std::optional<std::int64_t> step) {
  ProgressSample s;
  s.at = Time(seconds(secs));
  s.global_step = step;
  s.replicas_running = 4;
  s.replicas_total = 4;
  return s;
}

TEST_CASE("progress view: durations read at a glance") {
  CHECK(FormatDuration(seconds(0)) == "0s");
  CHECK(FormatDuration(seconds(42)) == "42s");
  CHECK(FormatDuration(seconds(185)) == "3m05s");
  CHECK(FormatDuration(seconds(3720)) == "1h02m");
  CHECK(FormatDuration(seconds(-5)) == "0s");
}

TEST_CASE("progress view: a line with what the replicas reported, and the time left") {
  ProgressView view(6000);
  CHECK(view.Line() == "waiting for the replicas");
  view.Add(At(0, std::nullopt));
  CHECK(view.Line() == "starting  4/4 replicas running");
  CHECK_FALSE(view.TimeLeft());

  ProgressSample first = At(10, 1000);
  first.loss = 0.5;
  view.Add(first);
  CHECK_FALSE(view.TimeLeft());  // one step sample gives no rate yet

  ProgressSample second = At(20, 2000);  // 100 steps/s: 4000 steps left take 40 s
  second.loss = 0.41204;
  second.examples_per_sec = 3310.4;
  second.eval_accuracy = 0.884;
  view.Add(second);
  REQUIRE(view.TimeLeft());
  CHECK(*view.TimeLeft() == seconds(40));
  CHECK(view.Line() ==
        "step 2000/6000 (33%)  about 40s left  loss 0.4120  3310 examples/s  eval accuracy 0.8840  "
        "4/4 replicas running");

  // An evaluator that stopped, a chief between two processes: their last word stays.
  ProgressSample quiet = At(21, std::nullopt);
  quiet.replicas_running = 3;
  view.Add(quiet);
  CHECK(view.Line().find("step 2000/6000") == 0);
  CHECK(view.Line().find("eval accuracy 0.8840") != std::string::npos);
  CHECK(view.Line().find("3/4 replicas running") != std::string::npos);
}

TEST_CASE("progress view: the rate follows the last minute, and restarts after a restore") {
  ProgressView view(100000);
  view.Add(At(0, 0));
  view.Add(At(100, 100000 / 2));  // fast at first: 500 steps/s
  for (int t = 110; t <= 200; t += 10) view.Add(At(t, 50000 + (t - 100) * 10));  // now 10 steps/s
  // Only the last minute or so counts: about 10 steps/s, 49000 steps left.
  REQUIRE(view.TimeLeft());
  CHECK(view.TimeLeft()->count() == doctest::Approx(4900).epsilon(0.01));

  view.Add(At(210, 100));  // the chief restored an early checkpoint: no rate until it moves again
  CHECK_FALSE(view.TimeLeft());
  view.Add(At(220, 200));
  REQUIRE(view.TimeLeft());
  CHECK(*view.TimeLeft() == seconds(9980));
}

TEST_CASE("progress view: a stall is said instead of the last rate and the time left") {
  ProgressView view(6000);
  ProgressSample first = At(10, 1000);
  first.examples_per_sec = 2668;
  view.Add(first);
  ProgressSample second = At(20, 2000);
  second.examples_per_sec = 2668;
  view.Add(second);
  CHECK(view.Line() ==
        "step 2000/6000 (33%)  about 40s left  2668 examples/s  4/4 replicas running");

  ProgressSample frozen = At(30, 2000);
  frozen.examples_per_sec = 2668;  // the gauge still holds the rate before the stall
  frozen.stall = tfjob::ProgressStall{12, "ps-0"};
  view.Add(frozen);
  CHECK(view.Line() == "step 2000/6000 (33%)  stalled 12s, waiting on ps-0  4/4 replicas running");

  // The PS resumed: a read without a stall brings the rate back.
  ProgressSample resumed = At(40, 2500);
  resumed.examples_per_sec = 2668;
  view.Add(resumed);
  CHECK(view.Line().find("stalled") == std::string::npos);
  CHECK(view.Line().find("2668 examples/s") != std::string::npos);
}

TEST_CASE("progress view: without max steps, no share and no estimate") {
  ProgressView view(std::nullopt);
  view.Add(At(0, 10));
  view.Add(At(10, 20));
  CHECK_FALSE(view.TimeLeft());
  CHECK(view.Line() == "step 20  4/4 replicas running");
  CHECK(view.Bar(0) == "[--------------------] step 20  4/4 replicas running");
}

TEST_CASE("progress view: the bar fills with the share done and fits the terminal") {
  ProgressView view(1000);
  view.Add(At(0, 500));
  CHECK(view.Bar(0).rfind("[##########----------] step 500/1000 (50%)", 0) == 0);
  CHECK(view.Bar(30).size() == 30);
  view.Add(At(1, 5000));  // past max steps (an old checkpoint's max): full, not beyond
  CHECK(view.Bar(0).rfind("[####################] step 5000/1000 (100%)  4/4", 0) == 0);
  CHECK_FALSE(view.TimeLeft());  // done: nothing left to estimate
}

}  // namespace
}  // namespace taas::launcher
