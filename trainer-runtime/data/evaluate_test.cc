#include "taas/data/evaluate.h"

#include <doctest/doctest.h>

#include <set>

#include "tiny_dataset.h"

namespace taas::data {
namespace {

int IdOf(const Batch& batch, std::int64_t b) {
  return static_cast<int>(batch.images.data()[b * 4] * 255.0f + 0.5f);
}

TEST_CASE("every example once, in batches of N, each metric the mean over all examples") {
  for (const std::int64_t batch_size : {1, 3, 4, 10, 100}) {
    CAPTURE(batch_size);
    EvaluateOptions options;
    options.batch_size = batch_size;
    std::multiset<int> seen;
    std::vector<std::int64_t> sizes;
    auto metrics = EvaluateInBatches(testing::TinyDataset(10), options, [&](const Batch& batch) {
      double id_sum = 0, even = 0;
      const std::int64_t n = batch.images.shape()[0];
      for (std::int64_t b = 0; b < n; ++b) {
        seen.insert(IdOf(batch, b));
        id_sum += IdOf(batch, b);
        even += batch.labels[b] % 2 == 0 ? 1 : 0;
      }
      sizes.push_back(n);
      return absl::StatusOr<BatchMetrics>(BatchMetrics{{"id", id_sum / n}, {"even", even / n}});
    });
    REQUIRE(metrics.ok());
    // Means of batch means weighted by their sizes: the whole set's mean, whatever N is.
    CHECK((*metrics)["id"] == doctest::Approx(4.5));
    CHECK((*metrics)["even"] == doctest::Approx(0.5));
    CHECK(seen == std::multiset<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});  // once each: no repeat
    CHECK(sizes.front() == std::min<std::int64_t>(batch_size, 10));
    CHECK(sizes.back() ==
          (10 % batch_size == 0 ? std::min<std::int64_t>(batch_size, 10) : 10 % batch_size));
  }
}

TEST_CASE("a view is scored over its examples only") {
  DatasetView view{testing::TinyDataset(10), {7, 8, 9}};
  auto metrics = EvaluateInBatches(view, {.batch_size = 2}, [](const Batch& batch) {
    double sum = 0;
    for (std::int64_t b = 0; b < batch.images.shape()[0]; ++b) sum += IdOf(batch, b);
    return absl::StatusOr<BatchMetrics>(
        BatchMetrics{{"id", sum / static_cast<double>(batch.images.shape()[0])}});
  });
  REQUIRE(metrics.ok());
  CHECK((*metrics)["id"] == doctest::Approx(8.0));
}

TEST_CASE("errors name the batch and what is wrong") {
  const auto constant = [](const Batch&) {
    return absl::StatusOr<BatchMetrics>(BatchMetrics{{"loss", 1.0}});
  };
  CHECK(EvaluateInBatches(std::make_shared<ImageDataset>(), {}, constant).status().message() ==
        "evaluation: the data set has no examples to score");
  CHECK(EvaluateInBatches(testing::TinyDataset(10), {.batch_size = 0}, constant).status().code() ==
        absl::StatusCode::kInvalidArgument);
  const auto fails_third = [](const Batch& batch) -> absl::StatusOr<BatchMetrics> {
    if (IdOf(batch, 0) == 8) return absl::DataLossError("corrupt labels");
    return BatchMetrics{{"loss", 1.0}};
  };
  const absl::Status failed =
      EvaluateInBatches(testing::TinyDataset(10), {.batch_size = 4}, fails_third).status();
  CHECK(failed.code() == absl::StatusCode::kDataLoss);
  CHECK(failed.message() == "evaluation: batch 3 (examples 8-9): corrupt labels");
  const auto drops_a_metric = [](const Batch& batch) -> absl::StatusOr<BatchMetrics> {
    if (IdOf(batch, 0) == 0) return BatchMetrics{{"accuracy", 1.0}, {"loss", 1.0}};
    return BatchMetrics{{"accuracy", 1.0}};
  };
  CHECK(EvaluateInBatches(testing::TinyDataset(10), {.batch_size = 5}, drops_a_metric)
            .status()
            .message() ==
        "evaluation: batch 2 (examples 5-9) returned accuracy, the first batch accuracy, loss");
}

}  // namespace
}  // namespace taas::data
