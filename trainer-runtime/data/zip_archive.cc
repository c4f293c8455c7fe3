#include "zip_archive.h"

#include <algorithm>
#include <cstring>

namespace taas::data::internal {
namespace {

// The zip format's record signatures and sizes (PKWARE's APPNOTE.TXT, sections 4.3 and 4.5).
constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr std::uint32_t kDirectorySignature = 0x02014b50;
constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::size_t kEndBytes = 22;
constexpr std::size_t kZip64LocatorBytes = 20;
constexpr std::size_t kZip64EndBytes = 56;
constexpr std::size_t kDirectoryEntryBytes = 46;
constexpr std::size_t kLocalHeaderBytes = 30;
constexpr std::size_t kMaxCommentBytes = 0xffff;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kZip64Marker32 = 0xffffffff;
constexpr std::uint16_t kZip64Marker16 = 0xffff;
constexpr std::uint16_t kEncryptedFlag = 1;
constexpr std::uint16_t kMethodStored = 0;
constexpr std::uint16_t kMethodDeflated = 8;

template <typename T>
T Load(std::string_view bytes, std::size_t at) {  // the caller checked at + sizeof(T) <= size
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(T));  // little-endian hosts only
  return value;
}

bool Fits(std::uint64_t offset, std::uint64_t size, std::uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

absl::Status Corrupt(const std::string& what) {
  return absl::DataLossError("not a valid zip archive: " + what);
}

struct Directory {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t end = 0;  // where the records after the directory start
};

absl::StatusOr<Directory> FindDirectory(std::string_view archive) {
  if (archive.size() < kEndBytes) {
    return Corrupt("shorter than an end-of-directory record (" + std::to_string(archive.size()) +
                   " bytes)");
  }
  // The end record is the last thing in the archive but a comment of up to 64 KiB; the comment's
  // length must reach exactly to the end, so comment bytes that look like a signature do not count.
  const std::size_t last = archive.size() - kEndBytes;
  const std::size_t first = last > kMaxCommentBytes ? last - kMaxCommentBytes : 0;
  for (std::size_t at = last + 1; at-- > first;) {
    if (Load<std::uint32_t>(archive, at) != kEndSignature) continue;
    if (at + kEndBytes + Load<std::uint16_t>(archive, at + 20) != archive.size()) continue;
    Directory directory{Load<std::uint16_t>(archive, at + 10),
                        Load<std::uint32_t>(archive, at + 16),
                        Load<std::uint32_t>(archive, at + 12), at};
    const bool zip64 = directory.entries == kZip64Marker16 || directory.offset == kZip64Marker32 ||
                       directory.bytes == kZip64Marker32;
    if (zip64) {
      if (at < kZip64LocatorBytes ||
          Load<std::uint32_t>(archive, at - kZip64LocatorBytes) != kZip64LocatorSignature) {
        return Corrupt("the end record asks for a zip64 end record, and there is no locator");
      }
      const auto end64 = Load<std::uint64_t>(archive, at - kZip64LocatorBytes + 8);
      if (!Fits(end64, kZip64EndBytes, at - kZip64LocatorBytes) ||
          Load<std::uint32_t>(archive, static_cast<std::size_t>(end64)) != kZip64EndSignature) {
        return Corrupt("the zip64 end record is not where its locator says");
      }
      const auto at64 = static_cast<std::size_t>(end64);
      directory = {Load<std::uint64_t>(archive, at64 + 32), Load<std::uint64_t>(archive, at64 + 48),
                   Load<std::uint64_t>(archive, at64 + 40), end64};
    }
    if (!Fits(directory.offset, directory.bytes, directory.end)) {
      return Corrupt("the central directory (" + std::to_string(directory.bytes) +
                     " bytes at offset " + std::to_string(directory.offset) +
                     ") is not inside the archive");
    }
    return directory;
  }
  return Corrupt("no end-of-directory record: not a zip file, or one cut short");
}

// Sizes and offset the 32-bit fields mark as in the zip64 extra field, from it.
absl::Status ReadZip64Extra(std::string_view extra, std::uint64_t& uncompressed,
                            std::uint64_t& compressed, std::uint64_t& offset) {
  while (extra.size() >= 4) {
    const auto id = Load<std::uint16_t>(extra, 0);
    const auto size = Load<std::uint16_t>(extra, 2);
    if (size > extra.size() - 4) return Corrupt("an extra field runs past its entry");
    std::string_view field = extra.substr(4, size);
    extra.remove_prefix(4 + std::size_t{size});
    if (id != kZip64ExtraId) continue;
    for (std::uint64_t* value : {&uncompressed, &compressed, &offset}) {
      if (*value != kZip64Marker32) continue;
      if (field.size() < 8) return Corrupt("a zip64 extra field is short of a value it must hold");
      *value = Load<std::uint64_t>(field, 0);
      field.remove_prefix(8);
    }
    return absl::OkStatus();
  }
  if (uncompressed == kZip64Marker32 || compressed == kZip64Marker32 || offset == kZip64Marker32) {
    return Corrupt("an entry marks a zip64 value and has no zip64 extra field");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<ZipMember>> ListZipMembers(std::string_view archive) {
  TAAS_ASSIGN_OR_RETURN(const Directory directory, FindDirectory(archive));
  std::string_view entries = archive.substr(static_cast<std::size_t>(directory.offset),
                                            static_cast<std::size_t>(directory.bytes));
  std::vector<ZipMember> members;
  for (std::uint64_t i = 0; i < directory.entries; ++i) {
    const std::string entry = "entry " + std::to_string(i);
    if (entries.size() < kDirectoryEntryBytes ||
        Load<std::uint32_t>(entries, 0) != kDirectorySignature) {
      return Corrupt(entry + " of " + std::to_string(directory.entries) +
                     " is not in the central directory");
    }
    const auto flags = Load<std::uint16_t>(entries, 8);
    const auto method = Load<std::uint16_t>(entries, 10);
    const auto crc32 = Load<std::uint32_t>(entries, 16);
    std::uint64_t compressed = Load<std::uint32_t>(entries, 20);
    std::uint64_t uncompressed = Load<std::uint32_t>(entries, 24);
    const std::size_t name_bytes = Load<std::uint16_t>(entries, 28);
    const std::size_t extra_bytes = Load<std::uint16_t>(entries, 30);
    const std::size_t comment_bytes = Load<std::uint16_t>(entries, 32);
    std::uint64_t local = Load<std::uint32_t>(entries, 42);
    if (entries.size() - kDirectoryEntryBytes < name_bytes + extra_bytes + comment_bytes) {
      return Corrupt(entry + " runs past the central directory");
    }
    ZipMember member;
    member.name = std::string(entries.substr(kDirectoryEntryBytes, name_bytes));
    TAAS_RETURN_IF_ERROR(
        ReadZip64Extra(entries.substr(kDirectoryEntryBytes + name_bytes, extra_bytes), uncompressed,
                       compressed, local));
    entries.remove_prefix(kDirectoryEntryBytes + name_bytes + extra_bytes + comment_bytes);
    const std::string what = "member \"" + member.name + "\"";
    if ((flags & kEncryptedFlag) != 0) return Corrupt(what + " is encrypted");
    if (method != kMethodStored && method != kMethodDeflated) {
      return Corrupt(what + " is compressed with method " + std::to_string(method) +
                     " (only stored and deflated are read)");
    }
    member.method = method == kMethodStored ? ZipMethod::kStored : ZipMethod::kDeflated;
    if (member.method == ZipMethod::kStored && compressed != uncompressed) {
      return Corrupt(what + " is stored, yet its sizes differ (" + std::to_string(compressed) +
                     " and " + std::to_string(uncompressed) + ")");
    }
    // The data follows the member's local header, whose name and extra field may differ in length
    // from the directory's (numpy's zip64 local headers do).
    if (!Fits(local, kLocalHeaderBytes, directory.offset) ||
        Load<std::uint32_t>(archive, static_cast<std::size_t>(local)) != kLocalSignature) {
      return Corrupt(what + ": no local header at offset " + std::to_string(local));
    }
    const auto at = static_cast<std::size_t>(local);
    member.data_offset = local + kLocalHeaderBytes + Load<std::uint16_t>(archive, at + 26) +
                         Load<std::uint16_t>(archive, at + 28);
    member.compressed_bytes = compressed;
    member.uncompressed_bytes = uncompressed;
    member.crc32 = crc32;
    if (!Fits(member.data_offset, compressed, directory.offset)) {
      return Corrupt(what + ": its " + std::to_string(compressed) + " bytes at offset " +
                     std::to_string(member.data_offset) + " run past the archive's data");
    }
    members.push_back(std::move(member));
  }
  return members;
}

}  // namespace taas::data::internal
