#include "taas/base/ascii.h"

#include <doctest/doctest.h>

namespace taas {
namespace {

TEST_CASE("ASCII case folding leaves other bytes alone") {
  CHECK(AsciiLower("Worker-PS_1") == "worker-ps_1");
  CHECK(AsciiLower("\xc3\x89vE") == "\xc3\x89ve");
  CHECK(EqualsIgnoringAsciiCase("Worker", "wORKER"));
  CHECK_FALSE(EqualsIgnoringAsciiCase("Worker", "Workers"));
  CHECK_FALSE(EqualsIgnoringAsciiCase("\xc3\x89", "\xc3\xa9"));
}

}  // namespace
}  // namespace taas
