// Private to taas::data: a 32-bit value (a magic number, a checksum) as errors show it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace taas::data::internal {

// "0x" and eight hex digits: "0x0000abcd".
inline std::string Hex32(std::uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

}  // namespace taas::data::internal
