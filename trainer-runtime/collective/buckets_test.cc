#include "taas/collective/buckets.h"

#include <doctest/doctest.h>

#include <numeric>

namespace taas::collective {
namespace {

// Sums what it is given (a group of one would be a no-op): doubles every element, so a test sees
// that the reduced bucket, not the input, reached the consumer.
class Doubling final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string Describe() const override { return "doubling"; }
  Handle AllReduce(std::span<float> data, ReduceOp) override {
    ++calls;
    for (float& x : data) x *= 2;
    return Handle(fail_at == calls ? absl::UnavailableError("peer lost") : absl::OkStatus());
  }
  Handle Broadcast(std::span<std::byte>, int) override { return Handle(); }
  int calls = 0;
  int fail_at = -1;
};

TEST_CASE("buckets pack tensors in order and split those larger than a bucket") {
  const std::vector<std::int64_t> sizes = {3, 10, 0, 2};
  const auto buckets = PlanBuckets(sizes, 4);
  REQUIRE(buckets.size() == 4);  // 15 elements in buckets of 4
  CHECK(buckets[0].size == 4);
  CHECK(buckets[3].size == 3);
  // Every element of every tensor lands exactly once, contiguously within its bucket.
  std::vector<std::vector<int>> seen(sizes.size());
  for (std::size_t t = 0; t < sizes.size(); ++t)
    seen[t].assign(static_cast<std::size_t>(sizes[t]), 0);
  for (const Bucket& bucket : buckets) {
    std::int64_t next = 0;
    for (const BucketPiece& piece : bucket.pieces) {
      CHECK(piece.bucket_offset == next);
      next += piece.size;
      for (std::int64_t i = 0; i < piece.size; ++i) {
        ++seen[piece.tensor][static_cast<std::size_t>(piece.tensor_offset + i)];
      }
    }
    CHECK(next == bucket.size);
  }
  for (const auto& tensor : seen) {
    for (int count : tensor) CHECK(count == 1);
  }
}

TEST_CASE("no tensors or empty tensors make no buckets; a limit below 1 is taken as 1") {
  CHECK(PlanBuckets(std::vector<std::int64_t>{}, 8).empty());
  CHECK(PlanBuckets(std::vector<std::int64_t>{0, 0}, 8).empty());
  CHECK(PlanBuckets(std::vector<std::int64_t>{3}, 0).size() == 3);
}

TEST_CASE("a bucketed all-reduce reduces the fused buffer in place, piece by piece in order") {
  std::vector<float> fused(12);
  std::iota(fused.begin(), fused.end(), 1.0f);
  const std::vector<float> before = fused;
  BucketedAllReduce reduce({5, 7}, 4 * sizeof(float));
  CHECK(reduce.buckets().size() == 3);
  Doubling doubling;
  REQUIRE(reduce.Begin(doubling, fused, ReduceOp::kSum).ok());
  std::vector<std::pair<std::size_t, std::int64_t>> consumed;
  REQUIRE(reduce
              .Finish([&](const BucketPiece& piece) {
                consumed.emplace_back(piece.tensor, piece.tensor_offset);
                return absl::OkStatus();
              })
              .ok());
  for (std::size_t i = 0; i < fused.size(); ++i) CHECK(fused[i] == 2 * before[i]);
  // Buckets [0..3], [4..7], [8..11]: tensor 0 is 5 elements, tensor 1 is 7.
  CHECK(consumed ==
        std::vector<std::pair<std::size_t, std::int64_t>>{{0, 0}, {0, 4}, {1, 0}, {1, 3}});
  CHECK(reduce.issued_early() == 0);
}

TEST_CASE("a bucket is issued once every tensor up to its last is final, in bucket order") {
  std::vector<float> fused(9, 1.0f);
  BucketedAllReduce reduce({3, 3, 3}, 3 * sizeof(float));
  Doubling doubling;
  REQUIRE(reduce.Begin(doubling, fused, ReduceOp::kSum).ok());
  reduce.TensorReady(1);  // the second bucket waits for the first
  CHECK(doubling.calls == 0);
  reduce.TensorReady(0);
  CHECK(doubling.calls == 2);
  reduce.TensorReady(0);  // again: nothing more
  CHECK(doubling.calls == 2);
  REQUIRE(reduce.Finish([](const BucketPiece&) { return absl::OkStatus(); }).ok());
  CHECK(doubling.calls == 3);
  CHECK(reduce.issued_early() == 2);
  // The next step starts afresh.
  REQUIRE(reduce.Begin(doubling, fused, ReduceOp::kSum).ok());
  CHECK(reduce.issued_early() == 0);
  REQUIRE(reduce.Finish([](const BucketPiece&) { return absl::OkStatus(); }).ok());
  CHECK(doubling.calls == 6);
}

TEST_CASE("a failed bucket stops consumption and its error comes back") {
  std::vector<float> fused(12, 1.0f);
  BucketedAllReduce reduce({12}, 4 * sizeof(float));
  Doubling doubling;
  doubling.fail_at = 2;
  int consumed = 0;
  REQUIRE(reduce.Begin(doubling, fused, ReduceOp::kMean).ok());
  absl::Status status = reduce.Finish([&](const BucketPiece&) {
    ++consumed;
    return absl::OkStatus();
  });
  CHECK(status.code() == absl::StatusCode::kUnavailable);
  CHECK(consumed == 1);
  CHECK(doubling.calls == 3);  // every bucket was issued

  // A consumer's error ends consumption the same way.
  REQUIRE(reduce.Begin(doubling, fused, ReduceOp::kMean).ok());
  CHECK(reduce.Finish([](const BucketPiece&) { return absl::InternalError("apply failed"); })
            .message() == "apply failed");

  std::vector<float> small(11);
  CHECK(reduce.Begin(doubling, small, ReduceOp::kSum).code() == absl::StatusCode::kInvalidArgument);
  CHECK(reduce.Finish({}).code() == absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace taas::collective
