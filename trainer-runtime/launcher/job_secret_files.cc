#include "job_secret_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "taas/contract/job_secret.h"
#include "taas/tfjob/labels.h"

namespace taas::launcher {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(what + ": " + std::strerror(errno));
}

// kTokenBytes from /dev/urandom as lower-case hex.
absl::StatusOr<std::string> NewToken() {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open /dev/urandom");
  unsigned char bytes[contract::kTokenBytes];
  const ssize_t got = ::read(fd, bytes, sizeof(bytes));
  ::close(fd);
  if (got != static_cast<ssize_t>(sizeof(bytes))) return Errno("read /dev/urandom");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xf]);
  }
  return hex;
}

// Writes `text` to a new file `path` that only this user can read.
absl::Status WritePrivate(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create " + path);
  const ssize_t wrote = ::write(fd, text.data(), text.size());
  const bool closed = ::close(fd) == 0;
  if (wrote != static_cast<ssize_t>(text.size()) || !closed) return Errno("write " + path);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobSecretFiles>> JobSecretFiles::Create(
    const std::string& parent, const std::string& job_name) {
  std::string templ = parent + "/taas-secret-" + job_name + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) return Errno("create a private folder in " + parent);
  std::unique_ptr<JobSecretFiles> files(new JobSecretFiles());
  files->dir_ = templ;  // mkdtemp made it 0700.
  files->job_token_file_ = templ + "/" + std::string(contract::kJobTokenKey);
  files->chief_token_file_ = templ + "/" + std::string(contract::kChiefTokenKey);
  TAAS_ASSIGN_OR_RETURN(std::string job, NewToken());
  TAAS_ASSIGN_OR_RETURN(std::string chief, NewToken());
  TAAS_RETURN_IF_ERROR(WritePrivate(files->job_token_file_, job));
  TAAS_RETURN_IF_ERROR(WritePrivate(files->chief_token_file_, chief));
  return files;
}

JobSecretFiles::~JobSecretFiles() {
  std::error_code ignored;  // Nothing to do about a folder that cannot be removed at exit.
  std::filesystem::remove_all(dir_, ignored);
}

std::map<std::string, std::string> JobSecretFiles::EnvFor(const tfjob::TFJobSpec& spec,
                                                          tfjob::ReplicaType type,
                                                          int index) const {
  std::map<std::string, std::string> env;
  env[std::string(contract::kJobTokenFileEnv)] = job_token_file_;
  if (tfjob::IsMasterRole(spec, type, index) || type == tfjob::ReplicaType::kPS) {
    env[std::string(contract::kChiefTokenFileEnv)] = chief_token_file_;
  }
  return env;
}

}  // namespace taas::launcher
