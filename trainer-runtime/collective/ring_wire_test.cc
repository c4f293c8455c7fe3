#include "ring_wire.h"

#include <doctest/doctest.h>

namespace taas::collective::ring_wire {
namespace {

const Hello kExpected = {3, 1, 7, "0123abcd"};

TEST_CASE("a hello round-trips and is checked field by field") {
  const auto bytes = EncodeHello(kExpected);
  CHECK(HelloTokenBytes(bytes).value() == kExpected.token.size());
  CHECK(CheckHello(bytes, kExpected).value() == 7);  // the peer's incarnation, to fence
  CHECK(CheckHello(EncodeHello({3, 1, 0xfedcba9876543210, kExpected.token}), kExpected).value() ==
        0xfedcba9876543210);

  const auto other_token = EncodeHello({3, 1, 7, "0123abce"});
  CHECK(CheckHello(other_token, kExpected).status().code() == absl::StatusCode::kPermissionDenied);
  const auto other_size = EncodeHello({4, 1, 7, kExpected.token});
  CHECK(
      std::string(CheckHello(other_size, kExpected).status().message()).find("ring of 4 workers") !=
      std::string::npos);
  const auto other_rank = EncodeHello({3, 2, 7, kExpected.token});
  CHECK(std::string(CheckHello(other_rank, kExpected).status().message())
            .find("rank 2, expected 1") != std::string::npos);
}

TEST_CASE("hostile hellos: wrong magic, version, announced sizes") {
  auto bytes = EncodeHello(kExpected);
  auto garbage = bytes;
  garbage[0] = std::byte{'X'};
  CHECK(HelloTokenBytes(garbage).status().code() == absl::StatusCode::kInvalidArgument);
  auto version = bytes;
  version[8] = std::byte{9};
  CHECK(std::string(HelloTokenBytes(version).status().message()).find("version 9") !=
        std::string::npos);
  auto huge = bytes;
  huge[31] = std::byte{0x7f};  // a token of ~2 GB announced
  CHECK(HelloTokenBytes(huge).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(HelloTokenBytes(std::span(bytes).first(5)).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(CheckHello(std::span(bytes).first(bytes.size() - 1), kExpected).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("operation headers: the same operation passes, another names both sides") {
  const OpHeader mine = {12, OpKind::kAllReduceMean, 4096, 0};
  const auto bytes = EncodeOpHeader(mine);
  CHECK(CheckOpHeader(bytes, mine).ok());
  const auto theirs = EncodeOpHeader({12, OpKind::kBroadcast, 8, 2});
  const absl::Status status = CheckOpHeader(theirs, mine);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(status.message()) ==
        "the previous rank is at broadcast #12 of 8 bytes from rank 2, this rank at all-reduce "
        "(mean) #12 of 4096 bytes: the workers issue different operations (the same binary and "
        "model on every worker?)");
  auto garbage = bytes;
  garbage[1] = std::byte{0};
  CHECK(CheckOpHeader(garbage, mine).code() == absl::StatusCode::kInvalidArgument);
  CHECK(CheckOpHeader(std::span(bytes).first(4), mine).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("formation frames round-trip; anything else is refused") {
  const auto seal = EncodeFormationFrame({FormationKind::kSeal, 0});
  CHECK(ParseFormationFrame(seal)->kind == FormationKind::kSeal);
  const auto fenced =
      ParseFormationFrame(EncodeFormationFrame({FormationKind::kFenced, 0xfedcba9876543210}));
  REQUIRE(fenced.ok());
  CHECK(fenced->kind == FormationKind::kFenced);
  CHECK(fenced->incarnation == 0xfedcba9876543210);

  auto unknown = seal;
  unknown[8] = std::byte{3};
  CHECK(std::string(ParseFormationFrame(unknown).status().message()).find("unknown kind 3") !=
        std::string::npos);
  auto garbage = seal;
  garbage[0] = std::byte{'X'};
  CHECK(ParseFormationFrame(garbage).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ParseFormationFrame(std::span(seal).first(19)).status().code() ==
        absl::StatusCode::kInvalidArgument);
  // An operation header where a formation frame is due (a peer of wire version 3) is no frame.
  const auto header = EncodeOpHeader({0, OpKind::kAllReduceSum, 4, 0});
  CHECK(!ParseFormationFrame(std::span(header).first(kFormationFrameBytes)).ok());
}

}  // namespace
}  // namespace taas::collective::ring_wire
