// JobSecretFiles: the per-run tokens of a local job, their files and who gets which.
#include "job_secret_files.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "taas/contract/job_secret.h"

namespace taas::launcher {
namespace {

namespace fs = std::filesystem;
using tfjob::ReplicaType;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

tfjob::TFJobSpec Spec(std::initializer_list<ReplicaType> types) {
  tfjob::TFJobSpec spec;
  for (ReplicaType t : types) spec.replica_specs[t].replicas = 2;
  return spec;
}

TEST_CASE("fresh hex tokens in private files, removed with the object") {
  const std::string parent = fs::temp_directory_path().string();
  std::string dir, job_token;
  {
    auto files = JobSecretFiles::Create(parent, "mnist");
    REQUIRE(files.ok());
    dir = (*files)->dir();
    CHECK(Mode(dir) == 0700);
    CHECK(fs::path(dir).filename().string().rfind("taas-secret-mnist-", 0) == 0);
    job_token = Read((*files)->job_token_file());
    const std::string chief_token = Read((*files)->chief_token_file());
    for (const std::string& token : {job_token, chief_token}) {
      CHECK(token.size() == 2 * contract::kTokenBytes);
      CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
    }
    CHECK(job_token != chief_token);
    CHECK(Mode((*files)->job_token_file()) == 0600);
    CHECK(Mode((*files)->chief_token_file()) == 0600);
    auto other = JobSecretFiles::Create(parent, "mnist");
    REQUIRE(other.ok());
    CHECK(Read((*other)->job_token_file()) != job_token);  // a run's own tokens
  }
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("the chief token goes to the master-role replica and the PS only") {
  auto files = JobSecretFiles::Create(fs::temp_directory_path().string(), "j");
  REQUIRE(files.ok());
  const std::string job_env(contract::kJobTokenFileEnv), chief_env(contract::kChiefTokenFileEnv);
  auto has_chief = [&](const tfjob::TFJobSpec& spec, ReplicaType type, int index) {
    auto env = (*files)->EnvFor(spec, type, index);
    CHECK(env.at(job_env) == (*files)->job_token_file());
    return env.count(chief_env) == 1 && env.at(chief_env) == (*files)->chief_token_file();
  };
  const auto no_chief = Spec({ReplicaType::kPS, ReplicaType::kWorker, ReplicaType::kEvaluator});
  CHECK(has_chief(no_chief, ReplicaType::kWorker, 0));
  CHECK_FALSE(has_chief(no_chief, ReplicaType::kWorker, 1));
  CHECK(has_chief(no_chief, ReplicaType::kPS, 1));
  CHECK_FALSE(has_chief(no_chief, ReplicaType::kEvaluator, 0));
  const auto with_chief = Spec({ReplicaType::kChief, ReplicaType::kPS, ReplicaType::kWorker});
  CHECK(has_chief(with_chief, ReplicaType::kChief, 0));
  CHECK_FALSE(has_chief(with_chief, ReplicaType::kWorker, 0));
  CHECK(has_chief(Spec({ReplicaType::kMaster, ReplicaType::kWorker}), ReplicaType::kMaster, 0));
}

TEST_CASE("an unusable parent folder is an error naming it") {
  auto files = JobSecretFiles::Create("/nonexistent/parent", "j");
  REQUIRE_FALSE(files.ok());
  CHECK(std::string(files.status().message()).find("/nonexistent/parent") != std::string::npos);
}

}  // namespace
}  // namespace taas::launcher
