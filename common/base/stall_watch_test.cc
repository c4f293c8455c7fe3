#include "taas/base/stall_watch.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace taas {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("a stall's lines come at the threshold, then each after twice the last, capped") {
  const StallSchedule schedule{seconds(30), seconds(300)};
  std::vector<long long> due;
  for (int n = 0; n < 7; ++n) {
    due.push_back(std::chrono::duration_cast<seconds>(StallReportDue(schedule, n)).count());
  }
  CHECK(due == std::vector<long long>{30, 60, 120, 240, 480, 780, 1080});
  // A threshold above the cap steps by the cap from the first line on.
  CHECK(StallReportDue({seconds(10), seconds(4)}, 2) == seconds(18));
}

TEST_CASE("a wait counts as stalled seconds in full once it reached the threshold") {
  const StallSchedule schedule{seconds(8), seconds(60)};
  CHECK(StalledSeconds(schedule, seconds(7)) == 0);
  CHECK(StalledSeconds(schedule, seconds(8)) == 8);
  CHECK(StalledSeconds(schedule, seconds(20)) == 20);
}

TEST_CASE("a peer is named by its lower-case type and index") {
  CHECK(PeerName("PS", 0) == "ps-0");
  CHECK(PeerName("worker", 3) == "worker-3");
}

// Reads back what the watch logged.
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof(buf), file)) text.append(buf, n);
  return text;
}

TEST_CASE("a wait past the threshold is logged with whom and since when, reported, then over") {
  std::FILE* log = std::tmpfile();
  REQUIRE(log != nullptr);
  std::mutex mu;
  std::vector<StallState> states;
  const std::atomic<std::int64_t> step{42};
  {
    StallWatch watch(
        Logger(log).With({{"job", "mnist"}}), {milliseconds(100), seconds(60)},
        [&](const StallState& s) {
          std::lock_guard<std::mutex> lock(mu);
          states.push_back(s);
        },
        &step);
    {
      // As the PS client's calls: once the reply came, nobody is awaited any more.
      std::atomic<bool> answered{false};
      StallWatch::Wait wait =
          watch.Begin([&] { return answered ? std::string() : std::string("ps-0"); });
      std::this_thread::sleep_for(milliseconds(1100));
      answered = true;
    }
    std::this_thread::sleep_for(milliseconds(400));
  }
  const std::string text = Contents(log);
  std::fclose(log);
  CHECK(text.find("msg=\"waiting on a peer\" job=mnist peer=ps-0 since=") != std::string::npos);
  CHECK(text.find("global_step=42") != std::string::npos);
  // Lines due at 100, 200, 400 and 800 ms, seen on ticks every 250 ms: again with backoff, not on
  // every tick.
  std::size_t lines = 0;
  for (std::size_t at = text.find("waiting on a peer"); at != std::string::npos;
       at = text.find("waiting on a peer", at + 1)) {
    ++lines;
  }
  CHECK(lines >= 2);
  CHECK(lines <= 4);
  CHECK(text.find("the stall is over\" job=mnist peer=ps-0 waited_secs=") != std::string::npos);
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(!states.empty());
  bool saw_stall = false;
  for (const StallState& s : states) {
    if (s.current) {
      saw_stall = true;
      CHECK(s.current->peer == "ps-0");
      CHECK(s.current->seconds >= 0.1);
    }
  }
  CHECK(saw_stall);
  // After the wait: no stall now, and its whole length counted.
  CHECK(!states.back().current);
  CHECK(states.back().stalled_seconds_total >= 1.1);
  CHECK(states.back().stalled_seconds_total < 2.5);
}

TEST_CASE("a wait shorter than the threshold is no stall") {
  std::FILE* log = std::tmpfile();
  REQUIRE(log != nullptr);
  StallState last;
  {
    StallWatch watch(Logger(log), {seconds(5), seconds(60)},
                     [&](const StallState& s) { last = s; });
    for (int i = 0; i < 3; ++i) {
      StallWatch::Wait wait = watch.Begin([] { return std::string("worker-1"); });
      std::this_thread::sleep_for(milliseconds(150));
      wait.Progressed();  // bytes moved: the wait starts over
      std::this_thread::sleep_for(milliseconds(150));
    }
    std::this_thread::sleep_for(milliseconds(300));
  }
  CHECK(Contents(log).empty());
  std::fclose(log);
  CHECK(!last.current);
  CHECK(last.stalled_seconds_total == 0);
}

}  // namespace
}  // namespace taas
