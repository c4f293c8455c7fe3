// libFuzzer target: the bytes a stranger sends the TCP ring before any data (ring_wire.h): the
// hello a new connection opens with, the formation frames after it and the header of each
// operation. The first input byte picks which; the rest is what arrived. Nothing may crash or
// announce more than the limits, and only the exact bytes the expected peer would send may pass.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ring_wire.h"

namespace {

using namespace taas::collective::ring_wire;

void Require(bool condition) {
  if (!condition) std::abort();
}

const Hello kExpectedHello = {4, 3, 0, std::string(64, 'a')};
const OpHeader kExpectedHeader = {7, OpKind::kBroadcast, 4096, 2};

void FuzzHello(std::span<const std::byte> bytes) {
  // As the ring reads it: the fixed part, then as many token bytes as it announces.
  const auto fixed = bytes.first(std::min(bytes.size(), kHelloFixedBytes));
  const auto token_bytes = HelloTokenBytes(fixed);
  if (!token_bytes.ok()) return;
  Require(*token_bytes <= kMaxTokenBytes);
  const std::size_t whole = kHelloFixedBytes + *token_bytes;
  if (bytes.size() < whole) return;
  const auto hello = bytes.first(whole);
  if (const auto incarnation = CheckHello(hello, kExpectedHello); incarnation.ok()) {
    Hello sent = kExpectedHello;  // the peer's incarnation is its own; everything else must match
    sent.incarnation = *incarnation;
    const auto expected = EncodeHello(sent);
    Require(std::equal(hello.begin(), hello.end(), expected.begin(), expected.end()));
  }
}

void FuzzHeader(std::span<const std::byte> bytes) {
  const auto header = bytes.first(std::min(bytes.size(), kOpHeaderBytes));
  if (CheckOpHeader(header, kExpectedHeader).ok()) {
    const auto expected = EncodeOpHeader(kExpectedHeader);
    Require(std::equal(header.begin(), header.end(), expected.begin(), expected.end()));
  }
}

void FuzzFormationFrame(std::span<const std::byte> bytes) {
  const auto frame = ParseFormationFrame(bytes.first(std::min(bytes.size(), kFormationFrameBytes)));
  if (!frame.ok()) return;
  const auto expected = EncodeFormationFrame(*frame);
  Require(std::equal(bytes.begin(), bytes.begin() + kFormationFrameBytes, expected.begin(),
                     expected.end()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      FuzzHello(rest);
      break;
    case 1:
      FuzzHeader(rest);
      break;
    default:
      FuzzFormationFrame(rest);
  }
  return 0;
}
