// Private to taas::data: the members of a zip archive (an .npz is one), read from its central
// directory, pure over the archive's bytes (mapped, not read). Zip64 included, since numpy's
// savez writes every member with zip64 headers. Every offset and size is checked against the
// archive before it is used: the bytes are untrusted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"

namespace taas::data::internal {

enum class ZipMethod { kStored, kDeflated };

struct ZipMember {
  std::string name;
  ZipMethod method = ZipMethod::kStored;
  std::uint64_t data_offset = 0;  // of the member's (compressed) bytes in the archive
  std::uint64_t compressed_bytes = 0;
  std::uint64_t uncompressed_bytes = 0;
  std::uint32_t crc32 = 0;  // of the uncompressed bytes, as the central directory records it
};

// Every member, in the central directory's order. DataLoss saying what is wrong for an archive
// without an end record, a directory or a member outside the archive, an encrypted member or a
// method other than stored and deflated.
absl::StatusOr<std::vector<ZipMember>> ListZipMembers(std::string_view archive);

}  // namespace taas::data::internal
