#include "job_result.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;

std::string FormatValue(double value) {
  char buf[64];
  const bool tiny = value != 0 && std::abs(value) < 0.001;
  std::snprintf(buf, sizeof(buf), tiny ? "%.4g" : "%.4f", value);
  return buf;
}

// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string ReplicaFilesDir(const std::string& model_dir) {
  return (fs::path(model_dir) / "logs").string();
}

std::string TerminationMessagePath(const std::string& files_dir, const std::string& replica) {
  return (fs::path(files_dir) / (replica + ".termination-log")).string();
}

absl::StatusOr<job_report::JobReport> ReadJobReport(const std::string& path) {
  // Non-blocking: a FIFO put in the file's place would block a plain open until a writer came.
  Fd file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) {
    const int error = errno;
    const std::string why = path + ": " + std::strerror(error);
    return error == ENOENT ? absl::NotFoundError("no report in " + why)
                           : absl::UnavailableError("cannot read the report " + why);
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError("the report " + path + " is not a regular file");
  }
  std::string text(job_report::kMaxReportBytes + 1, '\0');
  std::size_t used = 0;
  while (used < text.size()) {
    const ssize_t n = ::read(file.fd, text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError("cannot read the report " + path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used == 0) {
    return absl::FailedPreconditionError("no report in " + path +
                                         ": its trainer started but left none");
  }
  text.resize(used);
  absl::StatusOr<job_report::JobReport> report = job_report::Parse(text);
  if (!report.ok()) {
    return absl::InvalidArgumentError(path + ": " + std::string(report.status().message()));
  }
  return report;
}

absl::StatusOr<job_report::JobReport> ReadJobResult(const std::string& files_dir,
                                                    const std::string& chief,
                                                    const std::string& evaluator) {
  absl::StatusOr<job_report::JobReport> chief_report =
      ReadJobReport(TerminationMessagePath(files_dir, chief));
  absl::StatusOr<job_report::JobReport> evaluator_report =
      absl::NotFoundError("the job has no evaluator");
  if (!evaluator.empty()) {
    evaluator_report = ReadJobReport(TerminationMessagePath(files_dir, evaluator));
  }
  std::optional<job_report::JobReport> result = job_report::JobResult(
      chief_report.ok() ? std::optional(*chief_report) : std::nullopt,
      evaluator_report.ok() ? std::optional(*evaluator_report) : std::nullopt);
  if (result) return *std::move(result);
  // A chief that ran no trainer beside an evaluator that did: the evaluator's error.
  if (absl::IsNotFound(chief_report.status()) && !evaluator.empty() &&
      !absl::IsNotFound(evaluator_report.status())) {
    return evaluator_report.status();
  }
  return chief_report.status();
}

std::string DescribeReport(const job_report::JobReport& report) {
  std::string text = "at step " + std::to_string(report.global_step);
  if (!report.error.empty()) return text + ": " + report.error;
  if (report.final_metrics.empty()) {
    return text + "; its model reported no final metrics (Session::ReportFinalMetrics)";
  }
  text += ": final";
  bool first = true;
  for (const auto& [name, value] : report.final_metrics) {
    text += (first ? " " : ", ") + name + " " + FormatValue(value);
    first = false;
  }
  return text;
}

}  // namespace taas::launcher
