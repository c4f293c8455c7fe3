#include "job_secret_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "taas/base/random_token.h"
#include "taas/contract/job_secret.h"
#include "taas/tfjob/labels.h"

namespace taas::launcher {
namespace {

absl::Status Errno(const std::string& what) {
  return absl::InternalError(what + ": " + std::strerror(errno));
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
  TAAS_ASSIGN_OR_RETURN(std::string job, RandomHexToken(contract::kTokenBytes));
  TAAS_ASSIGN_OR_RETURN(std::string chief, RandomHexToken(contract::kTokenBytes));
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
