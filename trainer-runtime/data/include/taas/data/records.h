// The streaming data interface, the part a user implements for a format of their own: a data set
// on disk is numbered parts (its files), each read in order as records (the bytes of one
// example), and a decode function turns one record into the example a batch holds. The stream
// pipeline (stream_pipeline.h) shards the parts across model replicas, reads them, decodes on N
// threads, shuffles, batches and prefetches; the TFRecord reader (tfrecord.h) is one data set.
//
//   class MyFiles : public data::RecordDataset { ... };          // parts and their readers
//   data::DecodeFn decode = [](std::string_view record) -> absl::StatusOr<data::DecodedExample> {
//     ...  // the record's floats and its label
//   };
//   TAAS_ASSIGN_OR_RETURN(auto stream, data::StreamPipeline::Create(files, decode, options));
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "taas/base/status.h"

namespace taas::data {

// One record as a reader read it, and where it was, for errors.
struct Record {
  std::string bytes;
  std::int64_t index = 0;    // in its part, from 0
  std::uint64_t offset = 0;  // byte offset of the record in its part (in the decompressed stream)
};

// Reads one part's records in order. Used by one thread at a time.
class RecordReader {
 public:
  virtual ~RecordReader() = default;

  // The next record into `record` (its bytes replaced): true; false at the end of the part. An
  // error names the part, the record and the offset, and what to do about it; the reader is done
  // after it.
  virtual absl::StatusOr<bool> Next(Record& record) = 0;
};

// A data set as numbered parts, the unit of sharding by file. Open may be called from several
// threads at once and for the same part again (every epoch).
class RecordDataset {
 public:
  virtual ~RecordDataset() = default;

  virtual std::int64_t num_parts() const = 0;
  // What errors call part `part` (its file's path).
  virtual std::string part_name(std::int64_t part) const = 0;
  virtual absl::StatusOr<std::unique_ptr<RecordReader>> Open(std::int64_t part) const = 0;
};

// Records held in memory, one vector per part: a data set for tests, and for inputs made by code.
class MemoryRecordDataset : public RecordDataset {
 public:
  explicit MemoryRecordDataset(std::vector<std::vector<std::string>> parts);

  std::int64_t num_parts() const override;
  std::string part_name(std::int64_t part) const override;  // "memory part 3"
  absl::StatusOr<std::unique_ptr<RecordReader>> Open(std::int64_t part) const override;

 private:
  std::vector<std::vector<std::string>> parts_;
};

// One example, decoded: the input's floats in row-major order (as many as the pipeline's
// example_shape holds) and its class, or, for a regression, its float target (as many values as
// the pipeline's target_elements; empty for a class).
struct DecodedExample {
  std::vector<float> input;
  std::int32_t label = 0;
  std::vector<float> target = {};  // = {}: aggregates that predate it need not name it
};

// What a reader makes of an example's label: a class index (DecodedExample::label) or a float
// target (DecodedExample::target, with StreamOptions::target_elements set to its size).
enum class LabelKind { kClass, kFloatTarget };

// Decodes one record. Called from the pipeline's decode threads at once, so it must be
// thread-safe. An error says what is wrong with the record (the pipeline adds where it is).
using DecodeFn = std::function<absl::StatusOr<DecodedExample>(std::string_view record)>;

// Where a record is in the stream, for a decoder whose example depends on more than the record's
// bytes: a label the data set keeps per part (the image folders' classes, image_folder.h), a
// random augmentation that must repeat from run to run whatever the decode threads' timing.
struct RecordContext {
  std::int64_t part = 0;
  std::int64_t index = 0;  // in its part (Record::index)
  std::int64_t epoch = 0;
  // The record's own random seed in this epoch: StreamOptions::seed, shard_index, the epoch, the
  // part and the index mixed, so the same options draw the same numbers on every run and machine,
  // and every epoch (and replica) draws anew.
  std::uint64_t seed = 0;
};

// A DecodeFn that is told where its record is (StreamPipeline::Create takes either). The same
// contract: thread-safe, an error says what is wrong with the record.
using ContextDecodeFn = std::function<absl::StatusOr<DecodedExample>(std::string_view record,
                                                                     const RecordContext& context)>;

// Which parts and records one of `num_shards` model replicas reads, the same on every machine:
// by part (parts shard_index, shard_index + num_shards, ...) when there are at least as many
// parts as shards, so each replica opens only its own files; else by record (each replica reads
// every part and keeps the records at positions shard_index, shard_index + num_shards, ... of
// their concatenation). Either way the shards are disjoint and together hold every record.
struct ShardPlan {
  std::vector<std::int64_t> parts;  // in order
  std::int64_t record_stride = 1;   // keeps record i of the concatenation when
  std::int64_t record_offset = 0;   // i % record_stride == record_offset
  bool by_part() const { return record_stride == 1; }
};

// InvalidArgument unless num_parts >= 1 and 0 <= shard_index < num_shards.
absl::StatusOr<ShardPlan> PlanShard(std::int64_t num_parts, int num_shards, int shard_index);

}  // namespace taas::data
