#include "taas/data/evaluate.h"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "taas/data/stream_pipeline.h"
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

// A stream of `n` records "0", "1", ...: example i has its one input and its label i % 10; record
// `bad` (if any) does not decode.
absl::StatusOr<std::unique_ptr<StreamPipeline>> NumberStream(int n, std::int64_t batch_size,
                                                             int bad = -1) {
  std::vector<std::string> records;
  for (int i = 0; i < n; ++i) records.push_back(std::to_string(i));
  StreamOptions options;
  options.batch_size = batch_size;
  options.example_shape = {1};
  return StreamPipeline::Create(
      std::make_shared<MemoryRecordDataset>(std::vector<std::vector<std::string>>{records}),
      [bad](std::string_view record) -> absl::StatusOr<DecodedExample> {
        const int i = std::stoi(std::string(record));
        if (i == bad) return absl::DataLossError("not a number");
        return DecodedExample{{static_cast<float>(i)}, i % 10};
      },
      options);
}

TEST_CASE("a stream is scored to its end, each metric the mean over all its examples") {
  for (const std::int64_t batch_size : {1, 3, 7, 64}) {
    CAPTURE(batch_size);
    auto stream = NumberStream(25, batch_size);
    REQUIRE(stream.ok());
    std::multiset<int> seen;
    auto metrics = EvaluateStream(**stream, [&](const Batch& batch) {
      double sum = 0;
      const std::int64_t n = batch.images.shape()[0];
      for (std::int64_t b = 0; b < n; ++b) {
        seen.insert(static_cast<int>(batch.images.data()[b]));
        sum += batch.labels[static_cast<std::size_t>(b)];
      }
      return absl::StatusOr<BatchMetrics>(BatchMetrics{{"label", sum / static_cast<double>(n)}});
    });
    REQUIRE(metrics.ok());
    CHECK(seen.size() == 25);
    CHECK(*seen.begin() == 0);
    CHECK(*seen.rbegin() == 24);
    // Labels 0-9, 0-9, 0-4: a mean of 100 / 25 whatever the batches are.
    CHECK((*metrics)["label"] == doctest::Approx(100.0 / 25.0));
  }
}

TEST_CASE("a stream's errors are named with the batch they stopped") {
  const auto constant = [](const Batch&) {
    return absl::StatusOr<BatchMetrics>(BatchMetrics{{"loss", 1.0}});
  };
  auto stream = NumberStream(20, 4, /*bad=*/9);
  REQUIRE(stream.ok());
  const absl::Status failed = EvaluateStream(**stream, constant).status();
  CHECK(failed.code() == absl::StatusCode::kDataLoss);
  const std::string message(failed.message());
  CAPTURE(message);
  // Batches 1 and 2 (examples 0-7) were scored; the third holds the bad record.
  CHECK(message.rfind("evaluation: batch 3 (from example 8): memory part 0: record 9", 0) == 0);
  CHECK(message.find("not a number") != std::string::npos);
}

}  // namespace
}  // namespace taas::data
