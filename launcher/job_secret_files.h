// The per-run secret of a local job (taas/contract/job_secret.h): a job token and a chief token,
// written as files to a private folder for the replicas, as the operator mounts the Secret it
// creates per TFJob.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "taas/base/status.h"
#include "taas/tfjob/tfjob.h"

namespace taas::launcher {

class JobSecretFiles {
 public:
  // Fresh tokens (kTokenBytes from /dev/urandom each, hex) in files of mode 0600 inside a new
  // folder of mode 0700 under `parent`, named after `job_name`.
  static absl::StatusOr<std::unique_ptr<JobSecretFiles>> Create(const std::string& parent,
                                                                const std::string& job_name);
  // Removes the folder and the tokens in it.
  ~JobSecretFiles();
  JobSecretFiles(const JobSecretFiles&) = delete;
  JobSecretFiles& operator=(const JobSecretFiles&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& job_token_file() const { return job_token_file_; }
  const std::string& chief_token_file() const { return chief_token_file_; }

  // The variables naming the token files to the replica `type`/`index` of `spec`: the job token
  // for every replica, the chief token only for the chief (the master-role rule, as the operator
  // labels pods) and the parameter servers.
  std::map<std::string, std::string> EnvFor(const tfjob::TFJobSpec& spec, tfjob::ReplicaType type,
                                            int index) const;

 private:
  JobSecretFiles() = default;

  std::string dir_, job_token_file_, chief_token_file_;
};

}  // namespace taas::launcher
