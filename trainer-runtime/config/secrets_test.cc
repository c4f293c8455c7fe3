// ReadSecrets: the job's token files and the pod IP (taas/contract/job_secret.h).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "taas/config/config.h"

namespace taas::config {
namespace {

constexpr char kWorker[] =
    R"({"cluster":{"ps":["p:1"],"worker":["w:1","w:2"]},"task":{"type":"worker","index":1}})";
constexpr char kPs[] =
    R"({"cluster":{"ps":["p:1"],"worker":["w:1"]},"task":{"type":"ps","index":0}})";

const std::string kToken(64, 'a');

// A file holding `text`, removed with the object.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/taas-token-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

// The config of `tf_config` with `env`'s secrets read, or the error's message.
std::string Secrets(const char* tf_config, std::map<std::string, std::string> env,
                    RuntimeConfig* out = nullptr) {
  env["TF_CONFIG"] = tf_config;
  auto c = ParseConfig({}, env);
  REQUIRE(c.ok());
  absl::Status s = ReadSecrets(env, *c);
  if (out != nullptr) *out = *c;
  return s.ok() ? "" : std::string(s.message());
}

TEST_CASE("a distributed replica reads its tokens; a trailing newline is trimmed") {
  TempFile job(kToken + "\n"), chief(std::string(64, 'C'));
  RuntimeConfig c;
  CHECK(Secrets(kPs, {{"TAAS_JOB_TOKEN_FILE", job.path}, {"TAAS_CHIEF_TOKEN_FILE", chief.path}},
                &c) == "");
  CHECK(c.job_token == kToken);
  CHECK(c.chief_token == std::string(64, 'C'));
  // A worker has no chief token, and needs none.
  CHECK(Secrets(kWorker, {{"TAAS_JOB_TOKEN_FILE", job.path}}, &c) == "");
  CHECK(c.chief_token.empty());
}

TEST_CASE("missing or malformed token files are errors naming the variable and the fix") {
  CHECK(Secrets(kWorker, {})
            .find("TAAS_JOB_TOKEN_FILE: not set: every distributed replica needs "
                  "this token file") == 0);
  TempFile job(kToken);
  CHECK(Secrets(kPs, {{"TAAS_JOB_TOKEN_FILE", job.path}})
            .find("TAAS_CHIEF_TOKEN_FILE: not set: the chief and the PS need") == 0);
  CHECK(Secrets(kWorker, {{"TAAS_JOB_TOKEN_FILE", "/nonexistent/token"}})
            .find("TAAS_JOB_TOKEN_FILE: cannot read /nonexistent/token") == 0);
  for (const std::string& bad :
       std::vector<std::string>{std::string(63, 'a'), std::string(65, 'a'), kToken + "\n\n",
                                std::string(63, 'a') + "g", std::string(1 << 20, 'a'), ""}) {
    TempFile file(bad);
    const std::string error = Secrets(kWorker, {{"TAAS_JOB_TOKEN_FILE", file.path}});
    CHECK(error.find("TAAS_JOB_TOKEN_FILE (" + file.path + "): must name a file holding 64 hex") ==
          0);
  }
}

TEST_CASE("a run without TF_CONFIG reads no token; the pod IP must be an IP") {
  auto local = ParseConfig({}, {});
  REQUIRE(local.ok());
  CHECK(ReadSecrets({{"TAAS_JOB_TOKEN_FILE", "/nonexistent"}}, *local).ok());
  CHECK(local->job_token.empty());
  TempFile job(kToken);
  RuntimeConfig c;
  CHECK(Secrets(kWorker, {{"TAAS_JOB_TOKEN_FILE", job.path}, {"TAAS_POD_IP", "10.1.2.3"}}, &c) ==
        "");
  CHECK(c.pod_ip == "10.1.2.3");
  CHECK(Secrets(kWorker, {{"TAAS_JOB_TOKEN_FILE", job.path}, {"TAAS_POD_IP", "fd00::5"}}, &c) ==
        "");
  CHECK(Secrets(kWorker, {{"TAAS_JOB_TOKEN_FILE", job.path}, {"TAAS_POD_IP", "my-pod"}})
            .find("TAAS_POD_IP: must be an IP address") == 0);
}

TEST_CASE("the PS's largest message is range-checked") {
  CHECK(ParseConfig({"--ps_max_message_bytes=1024"}, {})
            .status()
            .message()
            .find("--ps_max_message_bytes: must be >= 1048576") == 0);
  CHECK(ParseConfig({"--ps_max_message_bytes=2147483648"}, {})
            .status()
            .message()
            .find("--ps_max_message_bytes: must be <= 2147483647") == 0);
  auto c = ParseConfig({}, {{"TAAS_PS_MAX_MESSAGE_BYTES", "4194304"}});
  REQUIRE(c.ok());
  CHECK(c->ps_max_message_bytes == 4194304);
}

}  // namespace
}  // namespace taas::config
