// LocalProcesses over real, short-lived /bin/sh processes.
#include "processes.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

namespace taas::launcher {
namespace {

using namespace std::chrono_literals;

// Output lines, written by the table's reader threads.
struct Lines {
  std::function<void(std::string_view)> Sink() {
    return [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mu);
      got.emplace_back(line);
    };
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return got;
  }
  std::mutex mu;
  std::vector<std::string> got;
};

// Polls Reap as the job loop does, for at most 10 s.
std::optional<int> ReapWithin(ProcessTable& table, int id) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto code = table.Reap(id)) return code;
    std::this_thread::sleep_for(10ms);
  }
  return std::nullopt;
}

ProcessSpec Shell(const std::string& script, Lines& lines, std::vector<std::string> env = {}) {
  return {{"/bin/sh", "-c", script}, std::move(env), lines.Sink()};
}

// Whether `pid` names a process that runs (a zombie has ended: it holds nothing).
bool Runs(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  const std::optional<ProcStat> stat = ParseProcStat(text);
  return stat && stat->state != 'Z' && stat->state != 'X';
}

// The first line of output, a pid the script printed; 0 when none came within 10 s.
pid_t FirstLinePid(Lines& lines) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (lines.Get().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  return lines.Get().empty() ? 0 : std::stoi(lines.Get()[0]);
}

// A process running `script`, which starts a background child and prints its pid first.
struct WithChild {
  int id = 0;
  pid_t child = 0;
};
WithChild StartWithChild(LocalProcesses& table, const std::string& script, Lines& lines) {
  auto id = table.Start(Shell(script, lines));
  REQUIRE(id.ok());
  const pid_t child = FirstLinePid(lines);
  REQUIRE(child > 0);
  return {*id, child};
}

TEST_CASE("exit decoding: the process's own code, or 128 + the signal") {
  for (int code : {0, 3, 150}) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(code);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(ExitCodeOf(status) == code);
  }
  for (int sig : {SIGKILL, SIGTERM}) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // exec: the signal's default action, not this test's handlers
      const std::string script = "kill -" + std::to_string(sig) + " $$";
      ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(ExitCodeOf(status) == 128 + sig);
  }
}

TEST_CASE("a process's output arrives line by line, all of it before its exit code") {
  LocalProcesses table;
  Lines lines;
  auto id = table.Start(Shell("echo one; echo \"$GREETING\" >&2; printf 'no newline'; exit 3",
                              lines, {"GREETING=two"}));
  REQUIRE(id.ok());
  CHECK(ReapWithin(table, *id) == 3);
  CHECK(lines.Get() == std::vector<std::string>{"one", "two", "no newline"});
  CHECK_FALSE(table.Reap(*id));  // reported once: the id is gone
  CHECK_FALSE(table.Kill(*id));
}

TEST_CASE("Terminate sends SIGTERM to the process's group, Kill SIGKILL and waits") {
  LocalProcesses table;
  Lines lines;
  // The shell waits for a child of its own: stopping the group stops both.
  auto term = table.Start(Shell("sleep 30 & wait", lines));
  auto kill = table.Start(Shell("trap '' TERM; sleep 30 & wait", lines));
  REQUIRE(term.ok());
  REQUIRE(kill.ok());
  CHECK_FALSE(table.Reap(*term));      // still running
  std::this_thread::sleep_for(100ms);  // let the shells set their traps
  const auto started = std::chrono::steady_clock::now();
  table.Terminate(*term);
  CHECK(ReapWithin(table, *term) == 128 + SIGTERM);
  CHECK(table.Kill(*kill) == 128 + SIGKILL);
  // The reader threads ended too: the sleeps, which held the pipes, are gone with their groups.
  CHECK(std::chrono::steady_clock::now() - started < 10s);
}

TEST_CASE(
    "a descendant that keeps the output pipe open delays the exit code by the drain at most") {
  LocalProcesses table;
  Lines lines;
  // setsid: the sleeper leaves the replica's process group, so stopping the group misses it, and
  // it holds the pipe open for 30 s. It prints its pid so that the test can end it.
  auto id = table.Start(Shell("setsid sleep 30 & echo $!", lines));
  REQUIRE(id.ok());
  const auto started = std::chrono::steady_clock::now();
  const std::optional<int> code = ReapWithin(table, *id);
  REQUIRE(code.has_value());
  CHECK(*code == 0);
  CHECK(std::chrono::steady_clock::now() - started < LocalProcesses::kOutputDrain + 3s);
  REQUIRE(lines.Get().size() == 1);
  ::kill(std::stoi(lines.Get()[0]), SIGKILL);
}

TEST_CASE("/proc/<pid>/stat: the state and the process group, whatever the command's name") {
  const std::optional<ProcStat> stat =
      ParseProcStat("4242 (a) b (c)) S 1 4240 4240 0 -1 4194560 95 0 0 0\n");
  REQUIRE(stat.has_value());
  CHECK(stat->state == 'S');
  CHECK(stat->group == 4240);
  CHECK(ParseProcStat("7 (sleep) Z 1 7 7")->state == 'Z');
  for (const char* bad : {"", "7 sleep S 1 7", "7 (sleep)", "7 (sleep) S 1", "7 (sleep) S 1 x",
                          "7 (sleep) SS 1 7", "7 (sleep) S 1 7x"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseProcStat(bad).has_value());
  }
}

TEST_CASE("a process's end ends what it left in its group: SIGTERM, SIGKILL after the grace") {
  Lines lines;
  SUBCASE("a background child that stops on SIGTERM") {
    LocalProcesses table;
    const WithChild p = StartWithChild(table, "sleep 120 & echo $!; exit 0", lines);
    const auto started = std::chrono::steady_clock::now();
    CHECK(ReapWithin(table, p.id) == 0);
    CHECK_FALSE(Runs(p.child));
    CHECK(std::chrono::steady_clock::now() - started < kStopGrace);
  }
  SUBCASE("a background child that ignores SIGTERM") {
    constexpr auto kGrace = 300ms;
    LocalProcesses table(kGrace);
    const WithChild p = StartWithChild(table, "trap '' TERM; sleep 120 & echo $!; exit 3", lines);
    const auto started = std::chrono::steady_clock::now();
    CHECK(ReapWithin(table, p.id) == 3);  // the process's own code, not its child's
    CHECK(std::chrono::steady_clock::now() - started >= kGrace - 50ms);
    CHECK_FALSE(Runs(p.child));
  }
  SUBCASE("Kill once the process ended and its child lingers") {
    LocalProcesses table;
    const WithChild p = StartWithChild(table, "trap '' TERM; sleep 120 & echo $!; exit 3", lines);
    std::this_thread::sleep_for(200ms);  // the shell has exited: its child holds the group
    CHECK_FALSE(table.Reap(p.id));
    CHECK(Runs(p.child));
    CHECK(table.Kill(p.id) == 3);
    CHECK_FALSE(Runs(p.child));
  }
}

TEST_CASE("a command that cannot be executed exits 127 and says so") {
  LocalProcesses table;
  Lines lines;
  auto id = table.Start({{"/nonexistent/model"}, {}, lines.Sink()});
  REQUIRE(id.ok());
  CHECK(ReapWithin(table, *id) == 127);
  CHECK(lines.Get() ==
        std::vector<std::string>{"exec failed: command not found or not executable"});
  CHECK(table.Start({{}, {}, lines.Sink()}).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("destroying the table kills what still runs, in each process's group") {
  Lines lines;
  WithChild p;
  {
    LocalProcesses table;
    p = StartWithChild(table, "sleep 120 & echo $!; sleep 30", lines);
  }
  CHECK(::kill(p.id, 0) != 0);  // reaped: no such process any more
  CHECK_FALSE(Runs(p.child));
}

}  // namespace
}  // namespace taas::launcher
