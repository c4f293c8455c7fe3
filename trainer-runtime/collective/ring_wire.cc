#include "ring_wire.h"

#include <cstring>

#include "taas/base/random_token.h"

namespace taas::collective::ring_wire {
namespace {

constexpr std::array<char, 8> kHelloMagic = {'T', 'A', 'A', 'S', 'R', 'I', 'N', 'G'};
// 2: all-reduces of at most 64 KiB gather every rank's buffer (tcp_ring.cc, kGatherBytes).
// 3: the hello names the replica's incarnation.
// 4: formation frames (the seal, the fence notice) follow the hellos.
constexpr std::uint32_t kVersion = 4;
constexpr std::array<char, 8> kFormationMagic = {'T', 'A', 'A', 'S', 'F', 'O', 'R', 'M'};
constexpr std::uint32_t kOpMagic = 0x4f524154;  // "TARO" read little-endian

void PutU32(std::byte* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}
void PutU64(std::byte* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint32_t GetU32(const std::byte* in) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(in[i]) << (8 * i);
  return v;
}
std::uint64_t GetU64(const std::byte* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
  return v;
}

std::string KindName(std::uint32_t kind) {
  switch (static_cast<OpKind>(kind)) {
    case OpKind::kAllReduceSum:
      return "all-reduce (sum)";
    case OpKind::kAllReduceMean:
      return "all-reduce (mean)";
    case OpKind::kBroadcast:
      return "broadcast";
  }
  return "unknown operation " + std::to_string(kind);
}

}  // namespace

std::vector<std::byte> EncodeHello(const Hello& hello) {
  std::vector<std::byte> out(kHelloFixedBytes + hello.token.size());
  std::memcpy(out.data(), kHelloMagic.data(), kHelloMagic.size());
  PutU32(out.data() + 8, kVersion);
  PutU32(out.data() + 12, hello.size);
  PutU32(out.data() + 16, hello.rank);
  PutU64(out.data() + 20, hello.incarnation);
  PutU32(out.data() + 28, static_cast<std::uint32_t>(hello.token.size()));
  std::memcpy(out.data() + kHelloFixedBytes, hello.token.data(), hello.token.size());
  return out;
}

absl::StatusOr<std::size_t> HelloTokenBytes(std::span<const std::byte> fixed) {
  if (fixed.size() < kHelloFixedBytes ||
      std::memcmp(fixed.data(), kHelloMagic.data(), kHelloMagic.size()) != 0) {
    return absl::InvalidArgumentError("not a taas all-reduce ring hello");
  }
  if (const std::uint32_t version = GetU32(fixed.data() + 8); version != kVersion) {
    return absl::InvalidArgumentError("ring protocol version " + std::to_string(version) +
                                      ", this binary speaks " + std::to_string(kVersion) +
                                      ": every worker must run the same taas version");
  }
  const std::uint32_t token_bytes = GetU32(fixed.data() + 28);
  if (token_bytes > kMaxTokenBytes) {
    return absl::InvalidArgumentError("hello announces a token of " + std::to_string(token_bytes) +
                                      " bytes, more than the " + std::to_string(kMaxTokenBytes) +
                                      " allowed");
  }
  return token_bytes;
}

absl::StatusOr<std::uint64_t> CheckHello(std::span<const std::byte> hello, const Hello& expected) {
  TAAS_ASSIGN_OR_RETURN(const std::size_t token_bytes, HelloTokenBytes(hello));
  if (hello.size() != kHelloFixedBytes + token_bytes) {
    return absl::InvalidArgumentError("hello of " + std::to_string(hello.size()) +
                                      " bytes, its header announces " +
                                      std::to_string(kHelloFixedBytes + token_bytes));
  }
  const std::string_view token(reinterpret_cast<const char*>(hello.data() + kHelloFixedBytes),
                               token_bytes);
  if (!ConstantTimeEqual(token, expected.token)) {
    return absl::PermissionDeniedError(
        "the peer proved another job's token (TAAS_JOB_TOKEN_FILE): it is not a worker of this "
        "job");
  }
  const std::uint32_t size = GetU32(hello.data() + 12), rank = GetU32(hello.data() + 16);
  if (size != expected.size) {
    return absl::InvalidArgumentError("the peer is in a ring of " + std::to_string(size) +
                                      " workers, this one of " + std::to_string(expected.size) +
                                      ": TF_CONFIG differs between the workers");
  }
  if (rank != expected.rank) {
    return absl::InvalidArgumentError("the peer is rank " + std::to_string(rank) + ", expected " +
                                      std::to_string(expected.rank) +
                                      ": TF_CONFIG differs between the workers");
  }
  return GetU64(hello.data() + 20);
}

std::array<std::byte, kFormationFrameBytes> EncodeFormationFrame(const FormationFrame& frame) {
  std::array<std::byte, kFormationFrameBytes> out{};
  std::memcpy(out.data(), kFormationMagic.data(), kFormationMagic.size());
  PutU32(out.data() + 8, static_cast<std::uint32_t>(frame.kind));
  PutU64(out.data() + 12, frame.incarnation);
  return out;
}

absl::StatusOr<FormationFrame> ParseFormationFrame(std::span<const std::byte> bytes) {
  if (bytes.size() != kFormationFrameBytes ||
      std::memcmp(bytes.data(), kFormationMagic.data(), kFormationMagic.size()) != 0) {
    return absl::InvalidArgumentError("the neighbour sent bytes that are no ring formation frame");
  }
  const std::uint32_t kind = GetU32(bytes.data() + 8);
  if (kind != static_cast<std::uint32_t>(FormationKind::kSeal) &&
      kind != static_cast<std::uint32_t>(FormationKind::kFenced)) {
    return absl::InvalidArgumentError("ring formation frame of unknown kind " +
                                      std::to_string(kind));
  }
  return FormationFrame{static_cast<FormationKind>(kind), GetU64(bytes.data() + 12)};
}

std::array<std::byte, kOpHeaderBytes> EncodeOpHeader(const OpHeader& header) {
  std::array<std::byte, kOpHeaderBytes> out{};
  PutU32(out.data(), kOpMagic);
  PutU64(out.data() + 4, header.sequence);
  PutU32(out.data() + 12, static_cast<std::uint32_t>(header.kind));
  PutU64(out.data() + 16, header.bytes);
  PutU32(out.data() + 24, header.root);
  return out;
}

std::string Describe(const OpHeader& header) {
  std::string out = KindName(static_cast<std::uint32_t>(header.kind)) + " #" +
                    std::to_string(header.sequence) + " of " + std::to_string(header.bytes) +
                    " bytes";
  if (header.kind == OpKind::kBroadcast) out += " from rank " + std::to_string(header.root);
  return out;
}

absl::Status CheckOpHeader(std::span<const std::byte> bytes, const OpHeader& expected) {
  if (bytes.size() != kOpHeaderBytes || GetU32(bytes.data()) != kOpMagic) {
    return absl::InvalidArgumentError("the previous rank sent bytes that are no operation header");
  }
  const std::uint64_t sequence = GetU64(bytes.data() + 4), size = GetU64(bytes.data() + 16);
  const std::uint32_t kind = GetU32(bytes.data() + 12), root = GetU32(bytes.data() + 24);
  if (sequence == expected.sequence && kind == static_cast<std::uint32_t>(expected.kind) &&
      size == expected.bytes && root == expected.root) {
    return absl::OkStatus();
  }
  std::string theirs =
      KindName(kind) + " #" + std::to_string(sequence) + " of " + std::to_string(size) + " bytes";
  if (kind == static_cast<std::uint32_t>(OpKind::kBroadcast)) {
    theirs += " from rank " + std::to_string(root);
  }
  return absl::FailedPreconditionError(
      "the previous rank is at " + theirs + ", this rank at " + Describe(expected) +
      ": the workers issue different operations (the same binary and model on every worker?)");
}

}  // namespace taas::collective::ring_wire
