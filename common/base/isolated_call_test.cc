#include "taas/base/isolated_call.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace taas {
namespace {

IsolationLimits Quick() {
  IsolationLimits limits;
  limits.max_memory_bytes = std::size_t{64} << 20;
  limits.deadline = std::chrono::milliseconds(2000);
  limits.max_output_bytes = 1 << 20;
  return limits;
}

TEST_CASE("RunIsolated hands back the child's value and its errors unchanged") {
  auto value = RunIsolated([] { return absl::StatusOr<std::string>("parsed"); }, Quick(), "test");
  REQUIRE(value.ok());
  CHECK(*value == "parsed");

  auto empty = RunIsolated([] { return absl::StatusOr<std::string>(""); }, Quick(), "test");
  REQUIRE(empty.ok());
  CHECK(empty->empty());

  auto error = RunIsolated(
      [] { return absl::StatusOr<std::string>(absl::InvalidArgumentError("line 3: bad")); },
      Quick(), "test");
  CHECK(error.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(error.status().message() == "line 3: bad");
}

TEST_CASE("RunIsolated turns an exception of the work into an error") {
  auto thrown = RunIsolated(
      []() -> absl::StatusOr<std::string> { throw std::runtime_error("boom"); }, Quick(), "test");
  CHECK(thrown.status().code() == absl::StatusCode::kInternal);
  CHECK(std::string(thrown.status().message()).find("boom") != std::string::npos);
}

TEST_CASE("RunIsolated stops a child that allocates without bound") {
  const auto started = std::chrono::steady_clock::now();
  auto hog = RunIsolated(
      []() -> absl::StatusOr<std::string> {
        std::vector<char*> blocks;
        for (;;) {  // as yaml-cpp 0.7 does on some malformed YAML
          char* block = static_cast<char*>(std::malloc(1 << 20));
          if (block == nullptr) return std::string("malloc failed");
          std::memset(block, 1, 1 << 20);
          blocks.push_back(block);
        }
      },
      Quick(), "the hog");
  CHECK(hog.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(hog.status().message() == "the hog used more than 64 MiB of memory and was stopped");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
}

TEST_CASE("RunIsolated kills a child that does not finish by the deadline") {
  IsolationLimits limits = Quick();
  limits.deadline = std::chrono::milliseconds(300);
  const auto started = std::chrono::steady_clock::now();
  auto loop = RunIsolated(
      []() -> absl::StatusOr<std::string> {
        for (volatile bool forever = true; forever;) {
        }
        return std::string();
      },
      limits, "the loop");
  CHECK(loop.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(loop.status().message() == "the loop did not finish within 300 ms and was stopped");
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
}

TEST_CASE("RunIsolated reports a crash and an oversized answer") {
  auto crash = RunIsolated([]() -> absl::StatusOr<std::string> { std::abort(); }, Quick(), "it");
  CHECK(crash.status().code() == absl::StatusCode::kInternal);
  CHECK(crash.status().message() == "it crashed (signal 6)");

  IsolationLimits small = Quick();
  small.max_output_bytes = 10;
  auto large =
      RunIsolated([] { return absl::StatusOr<std::string>(std::string(11, 'x')); }, small, "it");
  CHECK(large.status().code() == absl::StatusCode::kResourceExhausted);
  auto fits =
      RunIsolated([] { return absl::StatusOr<std::string>(std::string(10, 'x')); }, small, "it");
  CHECK(fits.ok());
}

}  // namespace
}  // namespace taas
