#include "taas/data/split.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "taas/data/pipeline.h"

namespace taas::data {
namespace {

// n examples of 1x1 pixel; example i has pixel i and label i % 10.
std::shared_ptr<const ImageDataset> Tiny(std::int64_t n) {
  auto dataset = std::make_shared<ImageDataset>();
  dataset->count = n;
  dataset->rows = 1;
  dataset->cols = 1;
  for (std::int64_t i = 0; i < n; ++i) {
    dataset->pixels.push_back(static_cast<std::uint8_t>(i));
    dataset->labels.push_back(static_cast<std::uint8_t>(i % 10));
  }
  return dataset;
}

DatasetView All(std::int64_t n) {
  auto view = ViewOf(Tiny(n));
  REQUIRE_MESSAGE(view.ok(), view.status().message());
  return std::move(view).value();
}

bool Mentions(const absl::Status& status, const std::string& text) {
  return status.code() == absl::StatusCode::kInvalidArgument &&
         std::string(status.message()).find(text) != std::string::npos;
}

TEST_CASE("a view of a whole data set shares it and lists every example in order") {
  auto dataset = Tiny(5);
  auto view = ViewOf(dataset);
  REQUIRE(view.ok());
  CHECK(view->dataset.get() == dataset.get());
  CHECK(view->indices == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(view->size() == 5);
  CHECK(ViewOf(Tiny(0))->size() == 0);
}

TEST_CASE("views of a null or inconsistent data set, or with foreign indices, are rejected") {
  CHECK(Mentions(ViewOf(nullptr).status(), "null"));
  auto short_labels = std::make_shared<ImageDataset>(*Tiny(4));
  short_labels->labels.pop_back();
  CHECK(Mentions(ViewOf(short_labels).status(), "not count x rows x cols"));
  DatasetView foreign{Tiny(3), {0, 3}};
  CHECK(Mentions(CheckView(foreign), "view index 1 is 3, not an example of a data set of 3"));
  CHECK(Mentions(Shard(foreign, 1, 0).status(), "view index 1"));
  CHECK(Mentions(SplitTrainValidation(foreign, 0.5, 1).status(), "view index 1"));
  DatasetView negative{Tiny(3), {-1}};
  CHECK_FALSE(CheckView(negative).ok());
}

TEST_CASE("a split has Keras's sizes, is disjoint, covers the view and keeps its order") {
  const DatasetView all = All(100);
  for (const double fraction : {0.1, 0.25, 0.333, 0.5, 0.99}) {
    CAPTURE(fraction);
    auto split = SplitTrainValidation(all, fraction, 42);
    REQUIRE_MESSAGE(split.ok(), split.status().message());
    const auto train_size = static_cast<std::int64_t>(std::floor(100 * (1.0 - fraction)));
    CHECK(split->train.size() == train_size);
    CHECK(split->validation.size() == 100 - train_size);
    CHECK(std::is_sorted(split->train.indices.begin(), split->train.indices.end()));
    CHECK(std::is_sorted(split->validation.indices.begin(), split->validation.indices.end()));
    std::set<std::int64_t> seen(split->train.indices.begin(), split->train.indices.end());
    seen.insert(split->validation.indices.begin(), split->validation.indices.end());
    CHECK(seen.size() == 100);
    // Views, not copies: both parts share the data set.
    CHECK(split->train.dataset.get() == all.dataset.get());
    CHECK(split->validation.dataset.get() == all.dataset.get());
  }
}

TEST_CASE("a split is decided by its seed") {
  const DatasetView all = All(1000);
  auto a = SplitTrainValidation(all, 0.2, 7);
  auto b = SplitTrainValidation(all, 0.2, 7);
  auto c = SplitTrainValidation(all, 0.2, 8);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  CHECK(a->validation.indices == b->validation.indices);
  CHECK(a->validation.indices != c->validation.indices);
  // Not simply the last fraction (Keras's unshuffled validation_split): spread over the data.
  CHECK(a->validation.indices.front() < 500);
  CHECK(a->validation.indices.back() >= 500);
}

TEST_CASE("a split of a view splits the view's examples") {
  DatasetView odd{Tiny(20), {}};
  for (std::int64_t i = 1; i < 20; i += 2) odd.indices.push_back(i);
  auto split = SplitTrainValidation(odd, 0.3, 1);
  REQUIRE(split.ok());
  CHECK(split->validation.size() == 3);
  for (std::int64_t i : split->train.indices) CHECK(i % 2 == 1);
  for (std::int64_t i : split->validation.indices) CHECK(i % 2 == 1);
}

TEST_CASE("bad fractions and views too small for them are rejected by name") {
  const DatasetView all = All(10);
  for (const double fraction : {0.0, 1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity()}) {
    CAPTURE(fraction);
    CHECK(Mentions(SplitTrainValidation(all, fraction, 1).status(),
                   "validation_fraction must be in (0, 1)"));
  }
  CHECK(Mentions(SplitTrainValidation(All(1), 0.5, 1).status(), "both need at least one"));
  CHECK(Mentions(SplitTrainValidation(all, 0.95, 1).status(), "leaves 0 for training"));
  CHECK(Mentions(SplitTrainValidation(All(0), 0.5, 1).status(), "both need at least one"));
}

TEST_CASE("the first examples as validation, as read_data_sets(validation_size) does") {
  const DatasetView all = All(10);
  const DatasetView* view = &all;
  auto split = SplitValidationFirst(*view, 3);
  REQUIRE(split.ok());
  CHECK(split->validation.indices == std::vector<std::int64_t>{0, 1, 2});
  CHECK(split->train.indices == std::vector<std::int64_t>{3, 4, 5, 6, 7, 8, 9});
  CHECK(split->train.dataset == view->dataset);
  // Of a view, its first examples: a shard's.
  auto shard = Shard(*view, 2, 1);
  REQUIRE(shard.ok());
  CHECK(SplitValidationFirst(*shard, 1)->validation.indices == std::vector<std::int64_t>{1});
  for (std::int64_t bad : {std::int64_t{0}, std::int64_t{10}, std::int64_t{-1}}) {
    CAPTURE(bad);
    CHECK(SplitValidationFirst(*view, bad).status().message() ==
          "split: validation_size must be in [1, 9] for a view of 10 examples, got " +
              std::to_string(bad));
  }
}

TEST_CASE("shard takes every num_shards-th position, as tf.data's shard does") {
  const DatasetView all = All(10);
  CHECK(Shard(all, 3, 0)->indices == std::vector<std::int64_t>{0, 3, 6, 9});
  CHECK(Shard(all, 3, 1)->indices == std::vector<std::int64_t>{1, 4, 7});
  CHECK(Shard(all, 3, 2)->indices == std::vector<std::int64_t>{2, 5, 8});
  CHECK(Shard(all, 1, 0)->indices == all.indices);
  // Positions in the view, not example numbers.
  DatasetView picked{Tiny(10), {9, 7, 5, 3}};
  CHECK(Shard(picked, 2, 1)->indices == std::vector<std::int64_t>{7, 3});
  CHECK(Shard(picked, 2, 1)->dataset.get() == picked.dataset.get());
  // More shards than examples: some are empty, as in tf.data.
  CHECK(Shard(all, 12, 11)->size() == 0);
  CHECK(Shard(all, std::numeric_limits<std::int64_t>::max(), 0)->indices ==
        std::vector<std::int64_t>{0});
}

TEST_CASE("bad shard arguments are rejected by name") {
  const DatasetView all = All(10);
  CHECK(Mentions(Shard(all, 0, 0).status(), "num_shards must be >= 1, got 0"));
  CHECK(Mentions(Shard(all, -2, 0).status(), "num_shards must be >= 1"));
  CHECK(Mentions(Shard(all, 3, 3).status(), "index must be in [0, num_shards), got index 3"));
  CHECK(Mentions(Shard(all, 3, -1).status(), "index must be in [0, num_shards)"));
}

TEST_CASE("a pipeline reads a view's examples only") {
  auto split = SplitTrainValidation(All(50), 0.2, 3);
  REQUIRE(split.ok());
  PipelineOptions options;
  options.batch_size = 4;
  options.prefetch = 0;
  options.num_shards = 2;
  options.shard_index = 1;
  auto pipeline = Pipeline::Create(split->validation, options);
  REQUIRE_MESSAGE(pipeline.ok(), pipeline.status().message());
  std::vector<std::int64_t> read;
  while (auto batch = (*pipeline)->Next()) {
    for (std::int64_t b = 0; b < batch->images.shape()[0]; ++b) {
      const auto id = static_cast<std::int64_t>(batch->images.data()[b] * 255.0f + 0.5f);
      CHECK(batch->labels[static_cast<std::size_t>(b)] == id % 10);
      read.push_back(id);
    }
  }
  CHECK(read == Shard(split->validation, 2, 1)->indices);
  CHECK((*pipeline)->shard_size() == 5);

  DatasetView bad{Tiny(3), {5}};
  auto refused = Pipeline::Create(bad, options);
  CHECK(Mentions(refused.status(), "pipeline: view index 0 is 5"));
}

}  // namespace
}  // namespace taas::data
