#include "processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace taas::launcher {

int ExitCodeOf(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so the fields start
  // after the last ')'.
  const std::size_t comm_end = text.rfind(')');
  if (comm_end == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(comm_end + 1);
  const auto next_field = [&rest]() -> std::string_view {
    const std::size_t start = rest.find_first_not_of(' ');
    if (start == std::string_view::npos) return {};
    rest.remove_prefix(start);
    const std::size_t end = std::min(rest.find(' '), rest.size());
    const std::string_view field = rest.substr(0, end);
    rest.remove_prefix(end);
    return field;
  };
  const std::string_view state = next_field();
  next_field();  // ppid
  const std::string_view group = next_field();
  ProcStat stat;
  if (state.size() != 1) return std::nullopt;
  stat.state = state[0];
  const auto [end, error] = std::from_chars(group.data(), group.data() + group.size(), stat.group);
  if (error != std::errc() || end != group.data() + group.size()) return std::nullopt;
  return stat;
}

namespace {

using SteadyClock = std::chrono::steady_clock;

std::int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

// Reads the pipe until every writer closed it or, once `drain_until` is set, that time passed,
// handing each whole line to `on_line`.
void ReadLines(int fd, const std::function<void(std::string_view)>& on_line,
               const std::shared_ptr<std::atomic<std::int64_t>>& drain_until) {
  // Polled in slices so that a deadline set while the pipe is quiet is noticed.
  constexpr int kPollMs = 100;
  std::string pending;
  char buf[8192];
  for (;;) {
    const std::int64_t until = drain_until->load();
    if (until != 0 && SteadyNanos() >= until) break;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, kPollMs);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0, nl;
    while ((nl = pending.find('\n', start)) != std::string::npos) {
      on_line(std::string_view(pending.data() + start, nl - start));
      start = nl + 1;
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) on_line(pending);
  ::close(fd);
}

// Whether a process of group `group` runs: one that is not a zombie (or dead). Looks through
// /proc, since kill(-group, 0) also reaches zombies (the group's ended leader, which the table
// keeps until the group is gone, and orphans that no one reaps); without /proc, none is seen.
bool GroupRuns(pid_t group) {
  if (::kill(-group, 0) != 0 && errno == ESRCH) return false;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return false;
  // A stat line is well under this (comm is at most 16 bytes); the fields we read come first.
  char buf[512];
  bool runs = false;
  while (const dirent* entry = ::readdir(proc)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + entry->d_name + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    ::close(fd);
    if (n <= 0) continue;
    const std::optional<ProcStat> stat =
        ParseProcStat(std::string_view(buf, static_cast<std::size_t>(n)));
    if (stat && stat->group == group && stat->state != 'Z' && stat->state != 'X') {
      runs = true;
      break;
    }
  }
  ::closedir(proc);
  return runs;
}

// Whether the child `pid` has ended, leaving it a zombie (not reaped).
bool Ended(pid_t pid, bool block) {
  siginfo_t info{};
  int result;
  while ((result = ::waitid(P_PID, static_cast<id_t>(pid), &info,
                            WEXITED | WNOWAIT | (block ? 0 : WNOHANG))) < 0 &&
         errno == EINTR) {
  }
  return result == 0 && info.si_pid == pid;
}

}  // namespace

LocalProcesses::~LocalProcesses() {
  while (!known_.empty()) Kill(known_.begin()->first);
}

absl::StatusOr<int> LocalProcesses::Start(ProcessSpec spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("no command to run");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<char*> envp, argv;
  for (auto& s : spec.env) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : spec.argv) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return absl::InternalError(std::string("fork: ") + std::strerror(error));
  }
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::setpgid(0, 0);  // Its own group: the launcher stops it (and its children) explicitly.
    ::close_range(3, ~0U, 0);  // No launcher descriptors (the UI's sockets) in the replica.
    ::execve(argv[0], argv.data(), envp.data());
    if (std::strchr(argv[0], '/') == nullptr) ::execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed: command not found or not executable\n";
    (void)!::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    ::_exit(127);
  }
  // The child does the same; doing it here too closes the window in which a signal sent to the
  // group right after Start would find no group yet (after the child's exec it fails, harmlessly).
  ::setpgid(pid, pid);
  ::close(pipe_fds[1]);
  auto drain_until = std::make_shared<std::atomic<std::int64_t>>(0);
  known_[pid] = Known{std::thread(ReadLines, pipe_fds[0], std::move(spec.on_line), drain_until),
                      drain_until, std::nullopt};
  return pid;
}

int LocalProcesses::Forget(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  auto it = known_.find(pid);
  it->second.drain_until->store(SteadyNanos() + std::chrono::nanoseconds(kOutputDrain).count());
  if (it->second.reader.joinable()) it->second.reader.join();
  known_.erase(it);
  return ExitCodeOf(status);
}

std::optional<int> LocalProcesses::Reap(int id) {
  auto it = known_.find(id);
  if (it == known_.end()) return std::nullopt;
  Known& known = it->second;
  if (!known.group_kill_at) {
    if (!Ended(id, /*block=*/false)) return std::nullopt;
    // A container's end takes all its processes with it: what the process left in its group is
    // asked to stop, as a stopped replica is.
    known.group_kill_at = SteadyClock::now() + grace_;
    ::kill(-id, SIGTERM);
  }
  if (GroupRuns(id)) {
    if (SteadyClock::now() >= *known.group_kill_at) ::kill(-id, SIGKILL);
    return std::nullopt;
  }
  return Forget(id);
}

void LocalProcesses::Terminate(int id) {
  if (known_.contains(id)) ::kill(-id, SIGTERM);
}

std::optional<int> LocalProcesses::Kill(int id) {
  if (!known_.contains(id)) return std::nullopt;
  ::kill(-id, SIGKILL);
  Ended(id, /*block=*/true);
  const SteadyClock::time_point deadline = SteadyClock::now() + kKilledGroupWait;
  while (GroupRuns(id) && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Forget(id);
}

}  // namespace taas::launcher
