#include "taas/nn/compute.h"

#include <doctest/doctest.h>

#include <thread>

namespace taas::nn {
namespace {

TEST_CASE("compute threads are set for the whole process, threads started later included") {
  SetComputeThreads(1);
  CHECK(ComputeThreads() == 1);
  int on_other_thread = 0;
  std::thread([&] { on_other_thread = ComputeThreads(); }).join();
  CHECK(on_other_thread == 1);
  SetComputeThreads(0);
  CHECK(ComputeThreads() >= 1);
  std::thread([&] { on_other_thread = ComputeThreads(); }).join();
  CHECK(on_other_thread == ComputeThreads());
}

}  // namespace
}  // namespace taas::nn
