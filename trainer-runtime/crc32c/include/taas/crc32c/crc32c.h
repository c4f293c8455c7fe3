// CRC-32C (Castagnoli), the checksum of TFRecord framing and of our checkpoints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace taas::crc32c {

// Extends `crc` (0 to start) with `size` bytes at `data`.
std::uint32_t Extend(std::uint32_t crc, const void* data, std::size_t size);

inline std::uint32_t Value(const void* data, std::size_t size) { return Extend(0, data, size); }
inline std::uint32_t Value(std::string_view bytes) { return Extend(0, bytes.data(), bytes.size()); }

// TFRecord's masked form, so a CRC stored inside CRC'd data does not weaken it.
inline std::uint32_t Mask(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace taas::crc32c
