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

TEST_CASE("a bucketed all-reduce hands every reduced piece to the consumer, inputs untouched") {
  std::vector<float> a(5), b(7);
  std::iota(a.begin(), a.end(), 1.0f);
  std::iota(b.begin(), b.end(), 100.0f);
  BucketedAllReduce reduce({5, 7}, 4 * sizeof(float));
  CHECK(reduce.buckets().size() == 3);
  Doubling doubling;
  std::vector<std::vector<float>> out = {std::vector<float>(5), std::vector<float>(7)};
  const std::vector<std::span<const float>> tensors = {a, b};
  REQUIRE(reduce
              .Run(doubling, tensors, ReduceOp::kSum,
                   [&](const BucketPiece& piece, std::span<const float> reduced) {
                     std::copy(reduced.begin(), reduced.end(),
                               out[piece.tensor].begin() + piece.tensor_offset);
                   })
              .ok());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(out[0][i] == 2 * a[i]);
  for (std::size_t i = 0; i < b.size(); ++i) CHECK(out[1][i] == 2 * b[i]);
  CHECK(a[0] == 1.0f);
}

TEST_CASE("a failed bucket stops consumption and its error comes back") {
  std::vector<float> a(12, 1.0f);
  BucketedAllReduce reduce({12}, 4 * sizeof(float));
  Doubling doubling;
  doubling.fail_at = 2;
  int consumed = 0;
  const std::vector<std::span<const float>> tensors = {a};
  absl::Status status = reduce.Run(doubling, tensors, ReduceOp::kMean,
                                   [&](const BucketPiece&, std::span<const float>) { ++consumed; });
  CHECK(status.code() == absl::StatusCode::kUnavailable);
  CHECK(consumed == 1);
  CHECK(doubling.calls == 3);  // every bucket was issued

  const std::vector<std::span<const float>> wrong = {std::span<const float>(a).first(3)};
  CHECK(reduce.Run(doubling, wrong, ReduceOp::kSum, {}).code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taas::collective
