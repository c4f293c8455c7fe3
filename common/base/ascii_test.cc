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

TEST_CASE("a UTF-8 prefix never ends inside a character") {
  CHECK(Utf8Prefix("short", 10) == "short");
  CHECK(Utf8Prefix("abcdef", 3) == "abc");
  CHECK(Utf8Prefix("ab\xc3\xa9z", 3) == "ab");  // é is 2 bytes: not half of it
  CHECK(Utf8Prefix("ab\xc3\xa9z", 4) == "ab\xc3\xa9");
  CHECK(Utf8Prefix("\xe2\x82\xac\xe2\x82\xac", 5) == "\xe2\x82\xac");  // euro signs, 3 bytes
}

}  // namespace
}  // namespace taas
