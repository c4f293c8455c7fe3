#include "taas/cuda/device.h"

#include <doctest/doctest.h>

#include "taas/cuda/testing.h"

namespace taas::cuda {
namespace {

TEST_CASE("every visible device runs our code and has a description") {
  const int count = VisibleGpus();
  REQUIRE(count > 0);  // the main skipped otherwise
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CAPTURE(ordinal);
    CHECK(ProbeDevice(ordinal).ok());
    auto description = DescribeDevice(ordinal);
    REQUIRE(description.ok());
    CHECK(description->find("sm_") != std::string::npos);
  }
}

TEST_CASE("a device that is not there is a permanent error naming it") {
  const absl::Status status = ProbeDevice(VisibleGpus());
  CHECK(absl::IsFailedPrecondition(status));
  CHECK(status.message().find("cuda:") != std::string::npos);
}

}  // namespace
}  // namespace taas::cuda
