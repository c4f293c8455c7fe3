#include "taas/nn/compute.h"

#include <doctest/doctest.h>

namespace taas::nn {
namespace {

TEST_CASE("compute threads can be set per calling thread") {
  SetComputeThreads(1);
  CHECK(ComputeThreads() == 1);
  SetComputeThreads(0);
  CHECK(ComputeThreads() >= 1);
}

}  // namespace
}  // namespace taas::nn
