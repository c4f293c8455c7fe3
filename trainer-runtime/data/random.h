// Private to taas::data: the random numbers of the shuffles (the pipeline's, the split's).
#pragma once

#include <cstdint>

namespace taas::data::internal {

// splitmix64: small, fast and seedable, and the same on every machine and standard library (which
// std::shuffle and the std distributions are not); the sequence only has to be reproducible.
inline std::uint64_t NextRandom(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace taas::data::internal
