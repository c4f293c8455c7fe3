// Private to the TCP ring: the bytes its connections carry before data, as pure functions. Every
// field is fixed-size little-endian; a parser checks each field against what this rank expects
// and names the difference.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::collective::ring_wire {

// The hello each side of a new connection sends: who it is (its rank and its replica's
// incarnation, taas/base/fence.h), which ring, and the job's token.
// magic, version, size, rank, incarnation, token length
inline constexpr std::size_t kHelloFixedBytes = 32;
inline constexpr std::size_t kMaxTokenBytes = 256;

struct Hello {
  std::uint32_t size = 0;
  std::uint32_t rank = 0;
  std::uint64_t incarnation = 0;
  std::string token;
};

std::vector<std::byte> EncodeHello(const Hello& hello);
// The token length the fixed part announces (at most kMaxTokenBytes), so the reader knows how
// many bytes follow; InvalidArgument for a fixed part that is not a taas ring hello.
absl::StatusOr<std::size_t> HelloTokenBytes(std::span<const std::byte> fixed);
// Checks a whole hello (fixed part and token) against the ring's size, the rank this connection
// must come from, and the job's token, and returns the incarnation the peer names (the caller
// fences it). PermissionDenied for a wrong token, InvalidArgument for anything else that does not
// match.
absl::StatusOr<std::uint64_t> CheckHello(std::span<const std::byte> hello, const Hello& expected);

// After the hellos, while the ring forms, a connection carries formation frames (wire version 4):
// rank 0, once joined to both neighbours, sends kSeal to the next rank, and each rank passes it
// on once it has both neighbours too, until it returns to rank 0. A rank takes the seal only from
// its previous rank's newest incarnation: while it waits, a hello of a newer incarnation of that
// rank replaces the connection, and the old one is sent kFenced (naming the newer incarnation),
// against the ring's direction, before it is closed. The seal proves every rank on its way had
// both neighbours, which a pod its replacement's service no longer points at never has.
enum class FormationKind : std::uint32_t { kSeal = 1, kFenced = 2 };
struct FormationFrame {
  FormationKind kind = FormationKind::kSeal;
  std::uint64_t incarnation = 0;  // kFenced: the newer incarnation admitted instead
};
inline constexpr std::size_t kFormationFrameBytes = 20;  // magic, kind, incarnation

std::array<std::byte, kFormationFrameBytes> EncodeFormationFrame(const FormationFrame& frame);
// InvalidArgument for bytes that are no formation frame (of this size, magic and a known kind).
absl::StatusOr<FormationFrame> ParseFormationFrame(std::span<const std::byte> bytes);

// The header of each operation on each connection.
enum class OpKind : std::uint32_t { kAllReduceSum = 1, kAllReduceMean = 2, kBroadcast = 3 };
struct OpHeader {
  std::uint64_t sequence = 0;
  OpKind kind = OpKind::kAllReduceSum;
  std::uint64_t bytes = 0;
  std::uint32_t root = 0;  // broadcast only
};
inline constexpr std::size_t kOpHeaderBytes = 28;  // magic, sequence, kind, bytes, root

std::array<std::byte, kOpHeaderBytes> EncodeOpHeader(const OpHeader& header);
// FailedPrecondition naming both sides' operations when the previous rank's header is not the
// one this rank is at; InvalidArgument for bytes that are no header.
absl::Status CheckOpHeader(std::span<const std::byte> header, const OpHeader& expected);
// "all-reduce (mean) #12 of 4096 bytes", for messages.
std::string Describe(const OpHeader& header);

}  // namespace taas::collective::ring_wire
