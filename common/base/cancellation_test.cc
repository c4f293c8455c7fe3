#include "taas/base/cancellation.h"

#include <doctest/doctest.h>

#include <thread>

namespace taas {
namespace {

TEST_CASE("a cancellation stops what is registered, once, and refuses later calls") {
  Cancellation cancel;
  int stopped = 0;
  REQUIRE(cancel.Register([&] { ++stopped; }));
  std::thread other([&] { cancel.Cancel(); });
  other.join();
  CHECK(stopped == 1);
  CHECK(cancel.cancelled());
  cancel.Cancel();  // nothing registered any more
  CHECK(stopped == 1);
  CHECK_FALSE(cancel.Register([&] { ++stopped; }));  // a call that starts late returns at once
  cancel.Reset();
  CHECK(cancel.Register([&] { ++stopped; }));
  cancel.Unregister();
  cancel.Cancel();
  CHECK(stopped == 1);
}

}  // namespace
}  // namespace taas
