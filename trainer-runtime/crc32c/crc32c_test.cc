#include "taas/crc32c/crc32c.h"

#include <doctest/doctest.h>

#include <string>

namespace taas::crc32c {
namespace {

TEST_CASE("CRC-32C matches the published check values") {
  CHECK(Value("123456789") == 0xE3069283u);  // the standard check value
  std::string zeros(32, '\0');
  CHECK(Value(zeros) == 0x8A9136AAu);  // RFC 3720 B.4
  std::string ones(32, '\xff');
  CHECK(Value(ones) == 0x62A8AB43u);
}

TEST_CASE("extending in pieces equals one pass") {
  std::string text = "The quick brown fox jumps over the lazy dog, twice over.";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    CHECK(Extend(Value(text.data(), cut), text.data() + cut, text.size() - cut) == Value(text));
  }
}

TEST_CASE("masking matches TFRecord's rotation and delta") {
  CHECK(Mask(0) == 0xa282ead8u);
  CHECK(Mask(0x80000000u) == 0xa282ead8u + 0x10000u);
}

}  // namespace
}  // namespace taas::crc32c
