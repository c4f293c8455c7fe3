// LocalProcesses over real, short-lived /bin/sh processes.
#include "processes.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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

TEST_CASE("destroying the table kills what still runs") {
  Lines lines;
  int id = 0;
  {
    LocalProcesses table;
    auto started = table.Start(Shell("echo up; sleep 30", lines));
    REQUIRE(started.ok());
    id = *started;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (lines.Get().empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
  }
  CHECK(lines.Get() == std::vector<std::string>{"up"});
  CHECK(::kill(id, 0) != 0);  // reaped: no such process any more
}

}  // namespace
}  // namespace taas::launcher
