#include "taas/base/isolated_call.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

namespace taas {
namespace {

// The child's exit code when its memory watchdog stopped it (any other non-zero code or a signal
// is a crash).
constexpr int kExitOverMemory = 86;
// How often the child's watchdog reads its resident size: at a few GB/s of allocation the child
// overshoots the limit by tens of MiB at most.
constexpr auto kWatchdogPeriod = std::chrono::milliseconds(2);

// The first byte of the child's output: the value follows, or an error (code byte, message).
constexpr char kValueTag = 'V';
constexpr char kErrorTag = 'E';

std::size_t ResidentBytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long size_pages = 0, resident_pages = 0;
  const int read = std::fscanf(statm, "%lu %lu", &size_pages, &resident_pages);
  std::fclose(statm);
  if (read != 2) return 0;
  return static_cast<std::size_t>(resident_pages) *
         static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

struct Watchdog {
  std::size_t max_resident_bytes;
};

void* WatchMemory(void* arg) {
  const auto* watchdog = static_cast<const Watchdog*>(arg);
  const timespec period{0, std::chrono::nanoseconds(kWatchdogPeriod).count()};
  for (;;) {
    if (ResidentBytes() > watchdog->max_resident_bytes) ::_exit(kExitOverMemory);
    ::nanosleep(&period, nullptr);
  }
  return nullptr;
}

bool WriteAll(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string EncodeError(const absl::Status& status) {
  std::string out(1, kErrorTag);
  out.push_back(static_cast<char>(status.code()));
  out.append(status.message().data(), status.message().size());
  return out;
}

[[noreturn]] void ChildMain(const std::function<absl::StatusOr<std::string>()>& work,
                            const IsolationLimits& limits, int out_fd) {
  // Memory is counted from what the child inherited, so the limit is the work's own.
  static Watchdog watchdog;
  watchdog.max_resident_bytes = ResidentBytes() + limits.max_memory_bytes;
  pthread_t thread;
  if (::pthread_create(&thread, nullptr, WatchMemory, &watchdog) != 0) ::_exit(1);
  std::string encoded;
  try {
    absl::StatusOr<std::string> result = work();
    if (!result.ok()) {
      encoded = EncodeError(result.status());
    } else if (result->size() > limits.max_output_bytes) {
      encoded = EncodeError(absl::ResourceExhaustedError(
          "its output of " + std::to_string(result->size()) + " bytes is over the maximum of " +
          std::to_string(limits.max_output_bytes)));
    } else {
      encoded.reserve(result->size() + 1);
      encoded.push_back(kValueTag);
      encoded.append(*result);
    }
  } catch (const std::exception& error) {
    encoded = EncodeError(absl::InternalError(std::string("it threw: ") + error.what()));
  } catch (...) {
    encoded = EncodeError(absl::InternalError("it threw a non-standard exception"));
  }
  ::_exit(WriteAll(out_fd, encoded.data(), encoded.size()) ? 0 : 1);
}

absl::StatusOr<std::string> Decode(const std::string& output, std::string_view what) {
  if (!output.empty() && output[0] == kValueTag) return output.substr(1);
  if (output.size() >= 2 && output[0] == kErrorTag) {
    const auto code = static_cast<absl::StatusCode>(static_cast<unsigned char>(output[1]));
    return absl::Status(code, output.substr(2));
  }
  return absl::InternalError(std::string(what) + " ended without an answer");
}

// Waits for the child to exit, at most until `deadline`; kills it then.
int Reap(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return status;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    const timespec pause{0, 1000000};
    ::nanosleep(&pause, nullptr);
  }
}

std::string Mebibytes(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

absl::StatusOr<std::string> RunIsolated(const std::function<absl::StatusOr<std::string>()>& work,
                                        const IsolationLimits& limits, std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + limits.deadline;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(std::string("cannot start ") + std::string(what) +
                               ": pipe: " + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return absl::InternalError(std::string("cannot start ") + std::string(what) +
                               ": fork: " + std::strerror(error));
  }
  if (pid == 0) {
    ::close(fds[0]);
    ChildMain(work, limits, fds[1]);
  }
  ::close(fds[1]);

  // One tag byte and, for an error, one code byte come with the output.
  const std::size_t max_read = limits.max_output_bytes + 2;
  std::string output;
  bool timed_out = false, too_long = false;
  char buffer[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd readable{fds[0], POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // End of output: the child has exited or is exiting.
    if (output.size() + static_cast<std::size_t>(n) > max_read) {
      too_long = true;
      break;
    }
    output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  // A child whose output is complete exits at once; one past the deadline is killed now.
  const int status = Reap(pid, timed_out || too_long ? std::chrono::steady_clock::now() : deadline);

  const std::string name(what);
  if (timed_out) {
    return absl::DeadlineExceededError(name + " did not finish within " +
                                       std::to_string(limits.deadline.count()) +
                                       " ms and was stopped");
  }
  if (too_long) {
    return absl::ResourceExhaustedError(name + " handed back more than " +
                                        std::to_string(limits.max_output_bytes) + " bytes");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kExitOverMemory) {
    return absl::ResourceExhaustedError(name + " used more than " +
                                        Mebibytes(limits.max_memory_bytes) +
                                        " of memory and was stopped");
  }
  if (WIFSIGNALED(status)) {
    return absl::InternalError(name + " crashed (signal " + std::to_string(WTERMSIG(status)) + ")");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(name + " failed (exit code " + std::to_string(WEXITSTATUS(status)) +
                               ")");
  }
  return Decode(output, what);
}

}  // namespace taas
