#include "manifest.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "taas/tfjob/serialization.h"

namespace taas::launcher {
namespace {

// A file under /tmp with `content`, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char name[] = "/tmp/taas-manifest-test-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path_ = name;
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST_CASE("a manifest's one TFJob document is read") {
  const TempFile file("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: j\n");
  auto manifest = ReadManifest(file.path());
  REQUIRE(manifest.ok());
  CHECK((*manifest)["metadata"]["name"] == "j");
}

TEST_CASE("the parser's syntax errors keep their line and column") {
  auto parsed = ParseYamlIsolated("a: 1\nb: [1, 2\n");
  CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(parsed.status().message()).find("line") != std::string::npos);
}

TEST_CASE("YAML on which yaml-cpp 0.7 allocates without bound is an error, not an exhausted host") {
  // Found by fuzz_manifest_yaml (then fuzz_tfjob): an unclosed quoted scalar in a block mapping.
  // Unbounded, yaml-cpp takes every byte of memory within seconds.
  IsolationLimits limits = ManifestParseLimits();
  limits.max_memory_bytes = std::size_t{128} << 20;
  for (const char* yaml : {"\"\":\"\n,", "\"\":\"\n,\n\n"}) {
    const std::string input = yaml;
    CAPTURE(input);
    auto parsed = ParseYamlIsolated(yaml, limits);
    REQUIRE_FALSE(parsed.ok());
    const std::string message(parsed.status().message());
    CAPTURE(message);
    CHECK(parsed.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(message.find("cannot read the YAML: the YAML parser used more than 128 MiB") == 0);
  }
}

TEST_CASE("a manifest is read only up to the size limit") {
  auto endless = ReadManifest("/dev/zero");
  CHECK(endless.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(endless.status().message()).find("over the maximum of") != std::string::npos);

  const TempFile at_limit(std::string(tfjob::kMaxYamlBytes, '#'));
  auto comments = ReadManifest(at_limit.path());
  CHECK(std::string(comments.status().message()).find("found 0") != std::string::npos);
}

TEST_CASE("a manifest must hold exactly one document") {
  const TempFile two("a: 1\n---\nb: 2\n");
  auto manifest = ReadManifest(two.path());
  CHECK(std::string(manifest.status().message()).find("exactly one TFJob document, found 2") !=
        std::string::npos);
  auto missing = ReadManifest("/nonexistent/job.yaml");
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace taas::launcher
