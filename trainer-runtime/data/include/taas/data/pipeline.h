// An input pipeline over an in-memory image data set or a view of one (split.h), in tf.data's
// order:
// shard(num_shards, shard_index) -> shuffle(buffer, reshuffled every epoch) -> repeat -> batch,
// with the batches produced ahead of time on a background thread (prefetch), so a training step
// takes a ready batch instead of waiting for input.
//
// Batches cross epoch boundaries when repeating (as `shuffle().repeat().batch()` does); without
// repeat the last batch may be smaller unless `drop_remainder`. Pixels become floats in [0, 1].
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/batch.h"
#include "taas/data/idx.h"
#include "taas/data/shuffle_buffer.h"
#include "taas/data/split.h"
#include "taas/tensor/tensor.h"

namespace taas::data {

struct PipelineOptions {
  std::int64_t batch_size = 32;
  std::int64_t shuffle_buffer = 0;  // 0 or 1: keep the data set's order
  std::uint64_t seed = 0;
  bool repeat = false;
  bool drop_remainder = false;
  int shard_index = 0;  // this worker takes examples shard_index, shard_index + num_shards, ...
  int num_shards = 1;
  int prefetch = 2;  // batches prepared ahead; 0 builds each batch on the calling thread
  // Shape of one example without the batch dimension, e.g. {28, 28, 1} or {784}; its element
  // count must equal rows * cols. Empty means {rows, cols, 1}.
  Shape example_shape;
  // Where the batches' images go (the model replica's TrainerInfo::device): on a device they are
  // copied there by the prefetch thread, ahead of use (with prefetch 0, by Next). Labels stay on
  // the host. A device this binary has no engine for is an InvalidArgument of Create.
  Device device = Device::Cpu();
};

class Pipeline : public BatchStream {
 public:
  // InvalidArgument naming the option for bad options (batch_size < 1, shard out of range,
  // a shard with no examples, example_shape of the wrong size), or for a data set whose vectors
  // do not hold what its count, rows and cols say.
  static absl::StatusOr<std::unique_ptr<Pipeline>> Create(
      std::shared_ptr<const ImageDataset> dataset, PipelineOptions options);
  // The same over the examples of `view` only (a split's part, split.h), in the view's order
  // before sharding and shuffling; the view's indices are copied, its examples are not.
  static absl::StatusOr<std::unique_ptr<Pipeline>> Create(DatasetView view,
                                                          PipelineOptions options);
  ~Pipeline() override;  // Stops and joins the background thread.
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // The next batch, blocking until it is ready; nullopt when a non-repeating pipeline is done.
  // Rethrows what copying a batch to options.device threw (a failing device), after which the
  // pipeline is done. Called from one thread.
  std::optional<Batch> Next();
  // Next as a BatchStream: what copying a batch to options.device threw becomes an Internal
  // error naming the device instead.
  absl::StatusOr<std::optional<Batch>> NextBatch() override;

  // Examples in this worker's shard (one epoch).
  std::int64_t shard_size() const { return static_cast<std::int64_t>(indices_.size()); }

 private:
  Pipeline(DatasetView shard, PipelineOptions options);
  std::optional<Batch> Produce();  // builds the next batch (producer side)
  std::int64_t NextIndex();        // -1 at the end
  void Run();

  std::shared_ptr<const ImageDataset> dataset_;
  PipelineOptions options_;
  std::vector<std::int64_t> indices_;  // this shard's examples in the view's order

  // Producer state (only the producer thread, or the caller when prefetch == 0).
  ShuffleBuffer<std::int64_t> buffer_;
  std::size_t cursor_ = 0;
  std::int64_t epoch_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::optional<Batch>> ready_;  // guarded by mu_; nullopt marks the end
  bool stop_ = false;                       // guarded by mu_
  std::exception_ptr error_;                // guarded by mu_; what Produce threw
  bool finished_ = false;                   // consumer saw the end
  std::thread thread_;
};

}  // namespace taas::data
