#include "taas/base/random_token.h"

#include <doctest/doctest.h>

namespace taas {
namespace {

TEST_CASE("RandomHexToken: twice the bytes in lower-case hex, different every time") {
  auto first = RandomHexToken(32);
  auto second = RandomHexToken(32);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first->size() == 64);
  CHECK(first->find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(*first != *second);
  CHECK(RandomHexToken(0).value().empty());
}

TEST_CASE("ConstantTimeEqual compares whole tokens") {
  CHECK(ConstantTimeEqual("", ""));
  CHECK(ConstantTimeEqual("abc", "abc"));
  CHECK_FALSE(ConstantTimeEqual("abc", "abd"));
  CHECK_FALSE(ConstantTimeEqual("abc", "ab"));
  CHECK_FALSE(ConstantTimeEqual("", "a"));
  CHECK_FALSE(ConstantTimeEqual("abc", "abcd"));
}

}  // namespace
}  // namespace taas
