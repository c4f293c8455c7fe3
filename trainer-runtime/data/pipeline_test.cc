#include "taas/data/pipeline.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "taas/sim_device/memory.h"
#include "tiny_dataset.h"

namespace taas::data {
namespace {

// The example ids of every batch, read back from the pixels.
std::vector<std::vector<int>> Drain(Pipeline& pipeline, int max_batches = 1000) {
  std::vector<std::vector<int>> batches;
  while (max_batches-- > 0) {
    auto batch = pipeline.Next();
    if (!batch) break;
    std::vector<int> ids;
    const Tensor images = batch->images.To(Device::Cpu());  // from a device: an explicit copy
    const std::int64_t n = images.shape()[0];
    for (std::int64_t b = 0; b < n; ++b) {
      const float v = images.data()[b * 4];
      ids.push_back(static_cast<int>(v * 255.0f + 0.5f));
      CHECK(batch->labels[b] == ids.back() % 10);
    }
    batches.push_back(ids);
  }
  return batches;
}

std::unique_ptr<Pipeline> Make(std::int64_t n, PipelineOptions options) {
  auto pipeline = Pipeline::Create(testing::TinyDataset(n), options);
  REQUIRE_MESSAGE(pipeline.ok(), pipeline.status().message());
  return std::move(pipeline).value();
}

TEST_CASE("batches in order with a short last batch, floats in [0, 1]") {
  PipelineOptions options;
  options.batch_size = 4;
  auto pipeline = Make(10, options);
  auto batches = Drain(*pipeline);
  REQUIRE(batches.size() == 3);
  CHECK(batches[0] == std::vector<int>{0, 1, 2, 3});
  CHECK(batches[2] == std::vector<int>{8, 9});
  CHECK_FALSE(pipeline->Next().has_value());

  options.drop_remainder = true;
  options.example_shape = {4};
  auto dropping = Make(10, options);
  auto first = dropping->Next();
  REQUIRE(first.has_value());
  CHECK(first->images.shape() == Shape{4, 4});
  CHECK(Drain(*dropping).size() == 1);
}

TEST_CASE("sharding gives each worker a disjoint slice") {
  PipelineOptions options;
  options.batch_size = 100;
  options.num_shards = 3;
  std::set<int> seen;
  for (int shard = 0; shard < 3; ++shard) {
    options.shard_index = shard;
    auto pipeline = Make(10, options);
    auto batches = Drain(*pipeline);
    REQUIRE(batches.size() == 1);
    for (int id : batches[0]) {
      CHECK(id % 3 == shard);
      CHECK(seen.insert(id).second);
    }
  }
  CHECK(seen.size() == 10);
}

TEST_CASE("shuffle is a seeded permutation, different every epoch; repeat crosses epochs") {
  PipelineOptions options;
  options.batch_size = 50;
  options.shuffle_buffer = 20;
  options.seed = 7;
  options.repeat = true;
  auto pipeline = Make(50, options);
  auto batches = Drain(*pipeline, 3);
  REQUIRE(batches.size() == 3);
  for (auto& epoch : batches) {
    auto sorted = epoch;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 50; ++i) CHECK(sorted[i] == i);
  }
  CHECK(batches[0] != batches[1]);
  std::vector<int> identity(50);
  for (int i = 0; i < 50; ++i) identity[i] = i;
  CHECK(batches[0] != identity);

  auto again = Make(50, options);
  CHECK(Drain(*again, 3) == batches);  // same seed, same order

  options.batch_size = 30;  // 30 does not divide 50: batches straddle epochs
  auto straddle = Make(50, options);
  auto second = straddle->Next();
  second = straddle->Next();
  REQUIRE(second.has_value());
  CHECK(second->epoch == 0);
  CHECK(straddle->Next()->epoch == 1);
}

TEST_CASE("prefetch on a thread yields the same batches as building them inline") {
  PipelineOptions options;
  options.batch_size = 7;
  options.shuffle_buffer = 10;
  options.seed = 3;
  options.prefetch = 0;
  auto inline_pipeline = Make(40, options);
  options.prefetch = 3;
  auto prefetching = Make(40, options);
  CHECK(Drain(*inline_pipeline) == Drain(*prefetching));
  // Destroying a repeating pipeline whose producer is blocked on a full queue must not hang.
  options.repeat = true;
  auto endless = Make(40, options);
  CHECK(endless->Next().has_value());
}

TEST_CASE("bad options are rejected by name") {
  PipelineOptions options;
  options.batch_size = 0;
  auto bad = Pipeline::Create(testing::TinyDataset(4), options);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("batch_size") != std::string::npos);
  options.batch_size = 1;
  options.num_shards = 2;
  options.shard_index = 2;
  bad = Pipeline::Create(testing::TinyDataset(4), options);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("shard_index") != std::string::npos);
  options.shard_index = 0;
  options.example_shape = {3};
  bad = Pipeline::Create(testing::TinyDataset(4), options);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("example_shape") != std::string::npos);
}

TEST_CASE("a data set whose vectors disagree with its count and shape is rejected") {
  auto pixels_short = std::make_shared<ImageDataset>(*testing::TinyDataset(4));
  pixels_short->pixels.pop_back();
  auto bad = Pipeline::Create(pixels_short, PipelineOptions());
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("not count x rows x cols") != std::string::npos);

  auto labels_short = std::make_shared<ImageDataset>(*testing::TinyDataset(4));
  labels_short->labels.pop_back();
  CHECK_FALSE(Pipeline::Create(labels_short, PipelineOptions()).ok());

  auto overflowing = std::make_shared<ImageDataset>(*testing::TinyDataset(4));
  overflowing->count = std::int64_t{1} << 40;
  overflowing->rows = std::int64_t{1} << 40;
  CHECK_FALSE(Pipeline::Create(overflowing, PipelineOptions()).ok());
}

TEST_CASE("on a device, batches arrive there from the prefetch thread, the same batches") {
  sim::SimulatedMemory device;
  PipelineOptions options;
  options.batch_size = 3;
  options.device = Device{DeviceType::kSimulated, 0};
  for (int prefetch : {0, 2}) {
    CAPTURE(prefetch);
    options.prefetch = prefetch;
    auto pipeline = Make(7, options);
    auto first = pipeline->Next();
    REQUIRE(first.has_value());
    CHECK(first->images.device() == options.device);
    CHECK(first->labels.size() == 3);  // on the host
    CHECK(Drain(*pipeline) == std::vector<std::vector<int>>{{3, 4, 5}, {6}});
  }
  // One copy to the device per batch: batches of 3, 3 and 1 example of 4 floats per pipeline.
  CHECK(device.traffic().to_device == sim::CopyCount{6, 2 * 7 * 4 * 4});
}

TEST_CASE("a device that fails a copy fails Next with its error, then the pipeline is done") {
  sim::SimulatedMemory device;
  device.copy_error = "sim:0: copying 48 bytes from the host: the device was lost";
  PipelineOptions options;
  options.batch_size = 3;
  options.device = Device{DeviceType::kSimulated, 0};
  auto pipeline = Make(7, options);
  CHECK_THROWS_WITH_AS(pipeline->Next(), device.copy_error.c_str(), std::runtime_error);
  CHECK_FALSE(pipeline->Next().has_value());
}

TEST_CASE(
    "as a BatchStream, the pipeline gives the same batches and a device's failure as an error") {
  PipelineOptions host;
  host.batch_size = 3;
  std::unique_ptr<BatchStream> stream = Make(7, host);
  auto first = stream->NextBatch();
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->labels == std::vector<std::int32_t>{0, 1, 2});

  sim::SimulatedMemory device;
  device.copy_error = "sim:0: copying 48 bytes from the host: the device was lost";
  PipelineOptions options;
  options.batch_size = 3;
  options.device = Device{DeviceType::kSimulated, 0};
  stream = Make(7, options);
  auto failed = stream->NextBatch();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == absl::StatusCode::kInternal);
  CHECK(std::string(failed.status().message()) ==
        "pipeline: copying a batch to sim:0 failed: " + device.copy_error);
  auto after = stream->NextBatch();
  REQUIRE(after.ok());
  CHECK_FALSE(after->has_value());
}

TEST_CASE("a device without an engine in this binary is rejected by name") {
  DeviceMemory* engine = RegisterDeviceMemory(DeviceType::kCuda, nullptr);
  PipelineOptions options;
  options.device = Device{DeviceType::kCuda, 1};
  auto pipeline = Pipeline::Create(testing::TinyDataset(4), options);
  RegisterDeviceMemory(DeviceType::kCuda, engine);
  REQUIRE_FALSE(pipeline.ok());
  CHECK(pipeline.status().message().find("pipeline: device cuda:1 has no engine") == 0);
}

}  // namespace
}  // namespace taas::data
