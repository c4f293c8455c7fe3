#include "taas/data/shuffle_buffer.h"

#include "random.h"

namespace taas::data {

std::uint64_t NextShuffleRandom(std::uint64_t& state) { return internal::NextRandom(state); }

}  // namespace taas::data
