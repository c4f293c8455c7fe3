// An input pipeline that streams a data set from disk (records.h), in tf.data's order:
// shard -> read -> decode (N threads, in order) -> shuffle(buffer) -> repeat -> batch ->
// prefetch (onto the replica's device). What it holds at once is bounded by its buffers, never by
// the data set's size (max_examples_held).
//
//   TAAS_ASSIGN_OR_RETURN(auto files, data::TfRecordDataset::Create({"/data/train-*.tfrecord"}));
//   TAAS_ASSIGN_OR_RETURN(auto decode, data::MakeExampleDecoder(spec));  // example.h
//   data::StreamOptions options;
//   options.batch_size = 64;
//   options.example_shape = {28, 28, 1};
//   options.shuffle_buffer = 10000;
//   options.shard_index = info.replica_id_in_sync();
//   options.num_shards = info.num_replicas_in_sync();
//   TAAS_ASSIGN_OR_RETURN(auto stream, data::StreamPipeline::Create(files, decode, options));
//   TAAS_ASSIGN_OR_RETURN(std::optional<data::Batch> batch, stream->NextBatch());
//
// The order of the examples depends on the data set, the options and the seed only, not on the
// number of decode threads or on timing: decoded examples are put back in read order.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "taas/base/log.h"
#include "taas/base/status.h"
#include "taas/data/batch.h"
#include "taas/data/records.h"
#include "taas/tensor/tensor.h"

namespace taas::data {

// What the stream does with a bad record: one its reader cannot frame (a bad CRC, a truncated
// record, a lying length) or one the decode function refuses. A part that cannot be opened, and a
// shard without records, stop the stream under either policy: they are the job's configuration,
// not its data.
enum class BadRecords {
  // The stream ends with the record's error, after the batches before it: tf.data's behaviour
  // without ignore_errors(), so a job moved from TensorFlow fails where it failed there.
  kStop,
  // The record is left out, logged and counted (StreamOptions::on_skipped), and the stream goes
  // on; past max_skipped_records it stops. A reader's error skips the rest of its part (what
  // follows a bad TFRecord length cannot be framed), counted as one record.
  kSkip,
};

// Records skipped under BadRecords::kSkip logged one by one; after them, one line at each power
// of ten (100, 1000, ...) and one at the end of the stream, each with the count.
inline constexpr std::int64_t kSkippedRecordsLogged = 10;
// Whether the `count`th skipped record (from 1) gets a log line.
bool LogSkippedRecord(std::int64_t count);

struct StreamOptions {
  std::int64_t batch_size = 32;
  // Shape of one example without the batch dimension ({28, 28, 1}, {784}); every decoded input
  // must hold exactly its element count.
  Shape example_shape;
  // Floats of each example's regression target (DecodedExample::target, Batch::targets); 0: the
  // examples are classes (DecodedExample::label), and a decoded target is an error.
  std::int64_t target_elements = 0;
  std::int64_t shuffle_buffer = 0;  // examples; 0 or 1 keeps the read order
  std::uint64_t seed = 0;           // the shuffle's, and the order of a shard's parts per epoch
  bool repeat = false;
  bool drop_remainder = false;
  int shard_index = 0;  // ShardPlan (records.h): by part when there are enough parts
  int num_shards = 1;
  int decode_threads = 1;
  // Records a decode thread reads and decodes at once, handed over as one: fewer hand-overs
  // between threads (one per record made a stream of small records about 3 times slower).
  std::int64_t decode_batch = 16;
  // Examples decoded ahead of the shuffle buffer, beyond those being decoded (rounded up to whole
  // decode batches); 0 means two decode batches per decode thread.
  std::int64_t decode_ahead = 0;
  int prefetch = 2;  // batches ready ahead, at least 1
  // Where the batches' images go (the replica's TrainerInfo::device), copied by the batching
  // thread ahead of use. A device this binary has no engine for is an InvalidArgument of Create.
  Device device = Device::Cpu();
  BadRecords bad_records = BadRecords::kStop;
  // Under kSkip, the stream stops with an error once more than this many records were skipped, so
  // a wholly corrupt data set does not train on nothing. Counted over the whole stream (every
  // epoch).
  std::int64_t max_skipped_records = 100;
  // Where skipped records are logged (a copy; give it the replica's fields).
  Logger logger = Logger(stderr);
  // Called on the batching thread after each skipped record with the count so far: the runtime
  // serves it as contract::kSkippedRecordsMetric (ModelBuilder::SkippedRecordsCounter). Must not
  // block.
  std::function<void(std::int64_t skipped)> on_skipped = {};
};

class StreamPipeline : public BatchStream {
 public:
  // InvalidArgument naming the option for bad options (batch_size < 1, an empty or non-positive
  // example_shape, decode_threads < 1, a shard out of range, a data set without parts). Starts the
  // threads; nothing is read before.
  static absl::StatusOr<std::unique_ptr<StreamPipeline>> Create(
      std::shared_ptr<const RecordDataset> dataset, DecodeFn decode, StreamOptions options);
  // The same, with a decoder told where each record is (records.h: its part, index, epoch and
  // seed), as the image folders' decoder is (image_folder.h).
  static absl::StatusOr<std::unique_ptr<StreamPipeline>> Create(
      std::shared_ptr<const RecordDataset> dataset, ContextDecodeFn decode, StreamOptions options);
  ~StreamPipeline() override;  // Stops and joins the threads.
  StreamPipeline(const StreamPipeline&) = delete;
  StreamPipeline& operator=(const StreamPipeline&) = delete;

  // Blocks until the next batch is ready. Errors (a part that cannot be opened, a corrupt record,
  // a record that does not decode, a failing device) name the part, the record and its offset,
  // and come after every batch before them; the stream is done after one. Under BadRecords::kSkip
  // a bad record is no error until more than max_skipped_records were skipped. Called from one
  // thread.
  absl::StatusOr<std::optional<Batch>> NextBatch() override;

  // The most decoded examples the pipeline holds at once: the shuffle buffer, the examples
  // decoded ahead and being decoded, the batch being filled and the ready batches. Memory is
  // about this times the example's bytes, plus decode_batch records per decode thread.
  std::int64_t max_examples_held() const;

  // Records skipped so far under BadRecords::kSkip. Thread-safe.
  std::int64_t skipped_records() const;

  // The parts and records this replica reads.
  const ShardPlan& plan() const;

 private:
  struct State;  // the reader, the decoded examples in order, the ready batches (the .cc)
  explicit StreamPipeline(std::unique_ptr<State> state);
  void DecodeLoop();
  void BatchLoop();

  std::unique_ptr<State> state_;
  bool finished_ = false;  // the consumer saw the end or an error (the consumer's thread only)
  std::vector<std::thread> decoders_;
  std::thread batcher_;
};

}  // namespace taas::data
