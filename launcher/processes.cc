#include "processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace taas::launcher {

int ExitCodeOf(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

namespace {

std::int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
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

}  // namespace

LocalProcesses::~LocalProcesses() {
  while (!readers_.empty()) Kill(readers_.begin()->first);
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
  readers_[pid] = Reader{std::thread(ReadLines, pipe_fds[0], std::move(spec.on_line), drain_until),
                         drain_until};
  return pid;
}

void LocalProcesses::Forget(pid_t pid) {
  auto it = readers_.find(pid);
  if (it == readers_.end()) return;
  it->second.drain_until->store(SteadyNanos() + std::chrono::nanoseconds(kOutputDrain).count());
  if (it->second.thread.joinable()) it->second.thread.join();
  readers_.erase(it);
}

std::optional<int> LocalProcesses::Reap(int id) {
  if (!readers_.contains(id)) return std::nullopt;
  int status = 0;
  if (::waitpid(id, &status, WNOHANG) != id) return std::nullopt;
  Forget(id);
  return ExitCodeOf(status);
}

void LocalProcesses::Terminate(int id) {
  if (readers_.contains(id)) ::kill(-id, SIGTERM);
}

std::optional<int> LocalProcesses::Kill(int id) {
  if (!readers_.contains(id)) return std::nullopt;
  ::kill(-id, SIGKILL);
  int status = 0;
  while (::waitpid(id, &status, 0) < 0 && errno == EINTR) {
  }
  Forget(id);
  return ExitCodeOf(status);
}

}  // namespace taas::launcher
