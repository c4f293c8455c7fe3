#include "taas/data/stream_pipeline.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "taas/data/example.h"
#include "taas/data/shuffle_buffer.h"
#include "taas/data/tfrecord.h"
#include "taas/sim_device/memory.h"
#include "test_files.h"
#include "test_read.h"

namespace taas::data {
namespace {

using testing::Contains;

// Records "0", "1", ... split into `parts` parts of `per_part` records each.
std::shared_ptr<const RecordDataset> Numbered(int parts, int per_part) {
  std::vector<std::vector<std::string>> records(static_cast<std::size_t>(parts));
  int id = 0;
  for (auto& part : records) {
    for (int i = 0; i < per_part; ++i) part.push_back(std::to_string(id++));
  }
  return std::make_shared<MemoryRecordDataset>(std::move(records));
}

// A record "<id>" becomes the input {id} and label id % 10; "bad" is an error.
absl::StatusOr<DecodedExample> DecodeNumber(std::string_view record) {
  if (record == "bad") return absl::DataLossError("the record says bad");
  const int id = std::stoi(std::string(record));
  return DecodedExample{{static_cast<float>(id)}, id % 10};
}

StreamOptions Options(std::int64_t batch_size) {
  StreamOptions options;
  options.batch_size = batch_size;
  options.example_shape = {1};
  return options;
}

std::unique_ptr<StreamPipeline> Make(std::shared_ptr<const RecordDataset> dataset,
                                     const StreamOptions& options, DecodeFn decode = DecodeNumber) {
  auto stream = StreamPipeline::Create(std::move(dataset), std::move(decode), options);
  REQUIRE_MESSAGE(stream.ok(), stream.status().message());
  return *std::move(stream);
}

// The ids of every batch until the end (at most `max_batches`), checking each label.
std::vector<std::vector<int>> Drain(BatchStream& stream, int max_batches = 10000) {
  std::vector<std::vector<int>> batches;
  while (max_batches-- > 0) {
    auto batch = stream.NextBatch();
    REQUIRE_MESSAGE(batch.ok(), batch.status().message());
    if (!batch->has_value()) break;
    const Tensor images = (*batch)->images.To(Device::Cpu());
    std::vector<int> ids;
    for (std::int64_t b = 0; b < images.shape()[0]; ++b) {
      ids.push_back(static_cast<int>(images.data()[b]));
      CHECK((*batch)->labels[static_cast<std::size_t>(b)] == ids.back() % 10);
    }
    batches.push_back(ids);
  }
  return batches;
}

std::vector<int> Flat(const std::vector<std::vector<int>>& batches) {
  std::vector<int> ids;
  for (const auto& batch : batches) ids.insert(ids.end(), batch.begin(), batch.end());
  return ids;
}

TEST_CASE("in read order across parts, with a short last batch, then the end") {
  auto stream = Make(Numbered(2, 4), Options(3));
  CHECK(Drain(*stream) == std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6, 7}});
  auto after = stream->NextBatch();
  REQUIRE(after.ok());
  CHECK_FALSE(after->has_value());

  StreamOptions options = Options(3);
  options.drop_remainder = true;
  CHECK(Drain(*Make(Numbered(2, 4), options)) ==
        std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}});
}

TEST_CASE("shard plans: by part with enough parts, else by record") {
  auto by_part = PlanShard(5, 2, 1);
  REQUIRE(by_part.ok());
  CHECK(by_part->by_part());
  CHECK(by_part->parts == std::vector<std::int64_t>{1, 3});
  auto by_record = PlanShard(2, 3, 2);
  REQUIRE(by_record.ok());
  CHECK_FALSE(by_record->by_part());
  CHECK(by_record->parts == std::vector<std::int64_t>{0, 1});
  CHECK(by_record->record_stride == 3);
  CHECK(by_record->record_offset == 2);
  CHECK(PlanShard(0, 1, 0).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(PlanShard(3, 2, 2).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(PlanShard(3, 0, 0).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("shards are disjoint, cover the data set, and read the same every time") {
  struct Case {
    int parts, per_part, shards;
  };
  for (Case c : {Case{6, 5, 3}, Case{7, 3, 3}, Case{2, 10, 3}, Case{1, 9, 4}}) {
    CAPTURE(c.parts);
    CAPTURE(c.shards);
    auto dataset = Numbered(c.parts, c.per_part);
    std::multiset<int> seen;
    for (int shard = 0; shard < c.shards; ++shard) {
      StreamOptions options = Options(4);
      options.num_shards = c.shards;
      options.shard_index = shard;
      options.shuffle_buffer = 5;
      options.seed = 11;
      options.decode_threads = 3;
      const std::vector<int> first = Flat(Drain(*Make(dataset, options)));
      CHECK(Flat(Drain(*Make(dataset, options))) == first);  // deterministic
      seen.insert(first.begin(), first.end());
    }
    const int total = c.parts * c.per_part;
    REQUIRE(static_cast<int>(seen.size()) == total);                // disjoint: nothing twice ...
    for (int id = 0; id < total; ++id) CHECK(seen.count(id) == 1);  // ... and nothing missing
  }
}

TEST_CASE("a shard without records is an error saying why") {
  StreamOptions options = Options(2);
  options.num_shards = 4;
  options.shard_index = 3;
  auto stream = Make(Numbered(1, 3), options);  // by record: 3 records for 4 shards
  auto batch = stream->NextBatch();
  REQUIRE_FALSE(batch.ok());
  CHECK(batch.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(Contains(batch.status(), "shard 3 of 4 holds no records"));
}

TEST_CASE("the order does not depend on the number of decode threads or their batches") {
  auto dataset = Numbered(3, 200);
  StreamOptions options = Options(16);
  options.shuffle_buffer = 50;
  options.seed = 5;
  options.decode_threads = 1;
  const auto one = Drain(*Make(dataset, options));
  options.decode_threads = 4;
  options.decode_ahead = 3;
  const auto four = Drain(*Make(dataset, options));
  CHECK(one == four);
  options.decode_batch = 1;  // nor on how many records a thread decodes at once
  CHECK(Drain(*Make(dataset, options)) == one);
  options.decode_batch = 7;
  CHECK(Drain(*Make(dataset, options)) == one);
  std::vector<int> ids = Flat(one);
  CHECK(ids != Flat(Drain(*Make(dataset, Options(16)))));  // shuffled
  std::sort(ids.begin(), ids.end());
  for (int id = 0; id < 600; ++id) CHECK(ids[static_cast<std::size_t>(id)] == id);
}

TEST_CASE("the shuffle buffer is bounded: nothing comes out more than its size early") {
  const int capacity = 8;
  StreamOptions options = Options(1);
  options.shuffle_buffer = capacity;
  options.seed = 3;
  const std::vector<int> ids = Flat(Drain(*Make(Numbered(1, 500), options)));
  REQUIRE(ids.size() == 500);
  for (std::size_t position = 0; position < ids.size(); ++position) {
    CHECK(ids[position] < static_cast<int>(position) + capacity);
  }

  ShuffleBuffer<int> buffer(capacity, 1);
  for (int i = 0; i < 100; ++i) {
    if (buffer.full()) buffer.Take();
    buffer.Push(i);
    CHECK(buffer.size() <= static_cast<std::size_t>(capacity));
  }
}

// Records "0", "1", ... without end, counting how many were read.
class Endless : public RecordDataset {
 public:
  std::int64_t num_parts() const override { return 1; }
  std::string part_name(std::int64_t) const override { return "endless"; }
  absl::StatusOr<std::unique_ptr<RecordReader>> Open(std::int64_t) const override {
    return std::make_unique<Reader>(read_);
  }
  std::int64_t read() const { return read_.load(); }

 private:
  class Reader : public RecordReader {
   public:
    explicit Reader(std::atomic<std::int64_t>& read) : read_(read) {}
    absl::StatusOr<bool> Next(Record& record) override {
      record.bytes = std::to_string(read_++ % 1000);
      return true;
    }

   private:
    std::atomic<std::int64_t>& read_;
  };
  mutable std::atomic<std::int64_t> read_{0};
};

TEST_CASE("memory is bounded by the buffers, not the data set: an endless one streams") {
  auto endless = std::make_shared<Endless>();
  StreamOptions options = Options(32);
  options.shuffle_buffer = 100;
  options.decode_threads = 3;
  options.prefetch = 2;
  auto stream = Make(endless, options);
  for (int i = 0; i < 5; ++i) {
    auto batch = stream->NextBatch();
    REQUIRE(batch.ok());
    REQUIRE(batch->has_value());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let every buffer fill
  const std::int64_t consumed = 5 * 32;
  INFO("read " << endless->read() << ", bound " << stream->max_examples_held());
  CHECK(endless->read() > consumed);
  CHECK(endless->read() <= consumed + stream->max_examples_held());
}

TEST_CASE("repeating: each epoch is a permutation of the shard, batches cross epochs") {
  StreamOptions options = Options(4);
  options.repeat = true;
  options.shuffle_buffer = 6;
  options.seed = 9;
  auto stream = Make(Numbered(2, 5), options);
  std::vector<int> ids;
  std::vector<std::int64_t> epochs;
  for (int i = 0; i < 10; ++i) {  // 40 examples: 4 epochs of 10
    auto batch = stream->NextBatch();
    REQUIRE(batch.ok());
    REQUIRE(batch->has_value());
    epochs.push_back((*batch)->epoch);
    for (std::int64_t b = 0; b < 4; ++b)
      ids.push_back(static_cast<int>((*batch)->images.data()[b]));
  }
  for (int epoch = 0; epoch < 4; ++epoch) {
    std::vector<int> part(ids.begin() + epoch * 10, ids.begin() + epoch * 10 + 10);
    std::sort(part.begin(), part.end());
    for (int id = 0; id < 10; ++id) CHECK(part[static_cast<std::size_t>(id)] == id);
  }
  CHECK(epochs == std::vector<std::int64_t>{0, 0, 0, 1, 1, 2, 2, 2, 3, 3});
}

TEST_CASE("a record that does not decode ends the stream naming its part, index and offset") {
  auto dataset = std::make_shared<MemoryRecordDataset>(
      std::vector<std::vector<std::string>>{{"0", "1", "2", "3"}, {"4", "bad", "6"}});
  StreamOptions options = Options(2);
  options.decode_threads = 2;
  auto stream = Make(dataset, options);
  std::vector<int> before;
  absl::Status error;
  for (;;) {
    auto batch = stream->NextBatch();
    if (!batch.ok()) {
      error = batch.status();
      break;
    }
    REQUIRE(batch->has_value());
    for (std::int64_t b = 0; b < (*batch)->images.shape()[0]; ++b) {
      before.push_back(static_cast<int>((*batch)->images.data()[b]));
    }
  }
  CHECK(before == std::vector<int>{0, 1, 2, 3});  // the batches before it, then the error
  CHECK(error.code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(error, "memory part 1: record 1 at byte offset 1: the record says bad"));
  auto after = stream->NextBatch();
  REQUIRE(after.ok());
  CHECK_FALSE(after->has_value());
}

// What a Logger wrote to a temporary file.
struct CapturedLog {
  CapturedLog() : file(std::tmpfile()) { REQUIRE(file != nullptr); }
  ~CapturedLog() { std::fclose(file); }
  std::string Text() const {
    std::fflush(file);
    std::rewind(file);
    std::string text;
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) {
      text.append(buffer, n);
    }
    return text;
  }
  std::FILE* file;
};

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool Has(const std::string& text, const std::string& what) { return Count(text, what) > 0; }

// The ids of every batch until the end or an error, and the error.
std::pair<std::vector<int>, absl::Status> ReadAll(BatchStream& stream, int columns = 1) {
  std::vector<int> ids;
  for (;;) {
    auto batch = stream.NextBatch();
    if (!batch.ok()) return {ids, batch.status()};
    if (!batch->has_value()) return {ids, absl::OkStatus()};
    for (std::int64_t b = 0; b < (*batch)->images.shape()[0]; ++b) {
      ids.push_back(static_cast<int>((*batch)->images.data()[columns * b]));
    }
  }
}

TEST_CASE("bad records stop the stream by default, as tf.data does without ignore_errors()") {
  CHECK(StreamOptions().bad_records == BadRecords::kStop);
  auto dataset = std::make_shared<MemoryRecordDataset>(
      std::vector<std::vector<std::string>>{{"0", "bad", "2"}});
  auto [ids, error] = ReadAll(*Make(dataset, Options(1)));
  CHECK(ids == std::vector<int>{0});
  CHECK(Contains(error, "memory part 0: record 1 at byte offset 1: the record says bad"));
}

TEST_CASE("skip: bad records are left out in order, counted, logged and reported") {
  // Bad records at several places, across parts and decode batches: the rest reads in order.
  auto dataset = std::make_shared<MemoryRecordDataset>(std::vector<std::vector<std::string>>{
      {"0", "bad", "2", "bad", "bad"}, {"bad", "6", "7"}, {"8", "9", "bad"}});
  CapturedLog log;
  std::vector<std::int64_t> reported;
  StreamOptions options = Options(2);
  options.bad_records = BadRecords::kSkip;
  options.decode_threads = 2;
  options.decode_batch = 2;
  options.logger = Logger(log.file);
  options.on_skipped = [&reported](std::int64_t skipped) { reported.push_back(skipped); };
  auto stream = Make(dataset, options);
  auto [ids, error] = ReadAll(*stream);
  CHECK(error.ok());
  CHECK(ids == std::vector<int>{0, 2, 6, 7, 8, 9});
  CHECK(stream->skipped_records() == 5);
  CHECK(reported == std::vector<std::int64_t>{1, 2, 3, 4, 5});
  const std::string text = log.Text();
  INFO(text);
  CHECK(Count(text, "skipped a bad record") == 5);
  CHECK(Has(text, "memory part 0: record 3 at byte offset 5: the record says bad"));
  CHECK(Has(text, "memory part 2: record 2 at byte offset 2"));
  CHECK(Has(text, "the stream skipped bad records"));
}

TEST_CASE("skipped records are logged one by one, then at each power of ten") {
  CHECK_FALSE(LogSkippedRecord(0));
  for (std::int64_t n = 1; n <= kSkippedRecordsLogged; ++n) CHECK(LogSkippedRecord(n));
  CHECK_FALSE(LogSkippedRecord(kSkippedRecordsLogged + 1));
  CHECK_FALSE(LogSkippedRecord(99));
  CHECK(LogSkippedRecord(100));
  CHECK_FALSE(LogSkippedRecord(200));
  CHECK(LogSkippedRecord(1000));
  CHECK(LogSkippedRecord(1000000));
}

TEST_CASE("skip has a bound: more than max_skipped_records stops, and so does no good record") {
  std::vector<std::string> part;
  for (int i = 0; i < 300; ++i) part.push_back(i % 3 == 0 ? std::to_string(i) : "bad");
  CapturedLog log;
  StreamOptions options = Options(1);
  options.bad_records = BadRecords::kSkip;
  options.max_skipped_records = 150;
  options.logger = Logger(log.file);
  auto stream = Make(
      std::make_shared<MemoryRecordDataset>(std::vector<std::vector<std::string>>{part}), options);
  auto [ids, error] = ReadAll(*stream);
  CHECK(error.code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(error,
                 "151 bad records skipped, more than StreamOptions::max_skipped_records "
                 "(150); the last: memory part 0: record 226 at byte offset "));
  CHECK(ids.size() == 76);  // 0, 3, ..., 225: the good records before the bound was passed
  CHECK(stream->skipped_records() == 151);
  const std::string text = log.Text();
  CHECK(Count(text, "skipped a bad record") == kSkippedRecordsLogged);
  CHECK(Count(text, "skipped bad records") == 1);  // at 100
  // Nothing but bad records and a bound they do not pass: no records is still an error.
  options.max_skipped_records = 1000;
  auto [none, empty] = ReadAll(*Make(std::make_shared<MemoryRecordDataset>(
                                         std::vector<std::vector<std::string>>{{"bad"}, {"bad"}}),
                                     options));
  CHECK(none.empty());
  CHECK(empty.code() == absl::StatusCode::kDataLoss);
  CHECK(Contains(empty, "every record of shard 0 of 1 was bad (2 skipped): nothing to train on"));
  StreamOptions negative = Options(1);
  negative.max_skipped_records = -1;
  CHECK(Contains(StreamPipeline::Create(Numbered(1, 1), DecodeNumber, negative).status(),
                 "max_skipped_records must be >= 0"));
}

TEST_CASE("inputs of the wrong size and a throwing decoder are errors, not crashes") {
  StreamOptions options = Options(2);
  options.example_shape = {2};
  auto wrong = Make(Numbered(1, 3), options)->NextBatch();
  REQUIRE_FALSE(wrong.ok());
  CHECK(Contains(wrong.status(), "decoded 1 floats, but example_shape holds 2"));
  auto throwing =
      Make(Numbered(1, 3), Options(2), [](std::string_view) -> absl::StatusOr<DecodedExample> {
        throw std::runtime_error("boom");
      })->NextBatch();
  REQUIRE_FALSE(throwing.ok());
  CHECK(Contains(throwing.status(), "record 0 at byte offset 0: the decoder threw: boom"));
}

TEST_CASE("float targets: batch x target_elements in order, and a target of the wrong size") {
  // A record "<id>" becomes the input {id} and the target {id / 2, -id}.
  const DecodeFn with_target = [](std::string_view record) -> absl::StatusOr<DecodedExample> {
    const float id = static_cast<float>(std::stoi(std::string(record)));
    return DecodedExample{{id}, 0, {id / 2, -id}};
  };
  StreamOptions options = Options(3);
  options.target_elements = 2;
  auto batch = Make(Numbered(1, 4), options, with_target)->NextBatch();
  REQUIRE_MESSAGE(batch.ok(), batch.status().message());
  REQUIRE(batch->has_value());
  CHECK((*batch)->targets == std::vector<float>{0, 0, 0.5f, -1, 1, -2});
  // Classes carry no targets, and a decoder's target must have the size the options state.
  auto classes = Make(Numbered(1, 4), Options(3))->NextBatch();
  REQUIRE(classes.ok());
  CHECK((*classes)->targets.empty());
  auto unexpected = Make(Numbered(1, 4), Options(3), with_target)->NextBatch();
  REQUIRE_FALSE(unexpected.ok());
  CHECK(Contains(unexpected.status(),
                 "record 0 at byte offset 0: decoded a target of 2 floats, but "
                 "StreamOptions::target_elements is 0"));
  options.target_elements = -1;
  CHECK(Contains(StreamPipeline::Create(Numbered(1, 4), with_target, options).status(),
                 "target_elements"));
}

TEST_CASE("bad options are refused by name") {
  auto dataset = Numbered(1, 3);
  StreamOptions options = Options(0);
  CHECK(Contains(StreamPipeline::Create(dataset, DecodeNumber, options).status(), "batch_size"));
  options = Options(2);
  options.example_shape = {};
  CHECK(Contains(StreamPipeline::Create(dataset, DecodeNumber, options).status(), "example_shape"));
  options = Options(2);
  options.decode_threads = 0;
  CHECK(
      Contains(StreamPipeline::Create(dataset, DecodeNumber, options).status(), "decode_threads"));
  options = Options(2);
  options.decode_batch = 0;
  CHECK(Contains(StreamPipeline::Create(dataset, DecodeNumber, options).status(), "decode_batch"));
  options = Options(2);
  options.shard_index = 2;
  options.num_shards = 2;
  CHECK(Contains(StreamPipeline::Create(dataset, DecodeNumber, options).status(), "shard_index"));
  CHECK_FALSE(StreamPipeline::Create(
                  std::make_shared<MemoryRecordDataset>(std::vector<std::vector<std::string>>{}),
                  DecodeNumber, Options(2))
                  .ok());
}

TEST_CASE("on a device, batches arrive there") {
  sim::SimulatedMemory device;
  StreamOptions options = Options(3);
  options.device = Device{DeviceType::kSimulated, 0};
  auto stream = Make(Numbered(1, 7), options);
  auto first = stream->NextBatch();
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->images.device() == options.device);
  CHECK(Drain(*stream) == std::vector<std::vector<int>>{{3, 4, 5}, {6}});
}

// File `file`'s bytes: the TFRecords of Examples file * 4 to file * 4 + 3, each an image
// {id, 0.5} and the label id % 10.
std::string ExampleFile(int file) {
  std::string bytes;
  for (int i = 0; i < 4; ++i) {
    const int id = file * 4 + i;
    bytes += EncodeTfRecord(SerializeExample(
        {{"image", FloatList{static_cast<float>(id), 0.5f}}, {"label", Int64List{id % 10}}}));
  }
  return bytes;
}

// The decoder of ExampleFile's Examples.
DecodeFn ImageLabelDecoder() {
  ExampleSpec spec;
  spec.input_feature = "image";
  spec.label_feature = "label";
  spec.example_shape = {2};
  spec.num_classes = 10;
  auto decode = MakeExampleDecoder(spec);
  REQUIRE(decode.ok());
  return *decode;
}

TEST_CASE("TFRecord files of Examples, end to end, and a corrupt file's error") {
  testing::TempDir dir;
  for (int file = 0; file < 3; ++file) {
    const std::string bytes = ExampleFile(file);
    if (file == 1) {
      testing::WriteGz(dir.File("train-1.tfrecord.gz"), bytes);
    } else {
      testing::WriteRaw(dir.File("train-" + std::to_string(file) + ".tfrecord"), bytes);
    }
  }
  auto files = TfRecordDataset::Create({dir.File("train-*")});
  REQUIRE(files.ok());
  const DecodeFn decode = ImageLabelDecoder();
  StreamOptions options = Options(5);
  options.example_shape = {2};
  options.decode_threads = 2;
  auto stream = StreamPipeline::Create(*files, decode, options);
  REQUIRE(stream.ok());
  std::vector<int> ids;
  for (;;) {
    auto batch = (*stream)->NextBatch();
    REQUIRE_MESSAGE(batch.ok(), batch.status().message());
    if (!batch->has_value()) break;
    for (std::int64_t b = 0; b < (*batch)->images.shape()[0]; ++b) {
      ids.push_back(static_cast<int>((*batch)->images.data()[2 * b]));
      CHECK((*batch)->images.data()[2 * b + 1] == 0.5f);
      CHECK((*batch)->labels[static_cast<std::size_t>(b)] == ids.back() % 10);
    }
  }
  CHECK(ids == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});

  auto raw = testing::ReadRaw(dir.File("train-2.tfrecord"));
  raw[raw.size() - 1] ^= 1;  // the last record's checksum
  testing::WriteRaw(dir.File("train-2.tfrecord"), raw);
  stream = StreamPipeline::Create(*files, decode, options);
  REQUIRE(stream.ok());
  const absl::Status error = testing::StreamError(**stream);
  INFO(error.message());
  CHECK(Contains(error, dir.File("train-2.tfrecord") + ": record 3 at byte offset "));
  CHECK(Contains(error, "the data's checksum does not match"));
}

TEST_CASE("a context decoder is told each record's place and a seed that repeats") {
  using Place = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // part, index, epoch
  // Every record's seed by its place, as two epochs of a shuffled, repeating stream see them.
  auto seeds = [](const StreamOptions& options) {
    std::mutex mu;
    std::map<Place, std::uint64_t> seen;
    const ContextDecodeFn decode =
        [&](std::string_view record,
            const RecordContext& context) -> absl::StatusOr<DecodedExample> {
      const int id = std::stoi(std::string(record));
      CHECK(context.part == id / 3);  // Numbered(4, 3): part = id / 3, index = id % 3
      CHECK(context.index == id % 3);
      std::lock_guard<std::mutex> lock(mu);
      seen[{context.part, context.index, context.epoch}] = context.seed;
      return DecodedExample{{static_cast<float>(id)}, id % 10};
    };
    auto stream = StreamPipeline::Create(Numbered(4, 3), decode, options);
    REQUIRE(stream.ok());
    for (int batch = 0; batch < 6; ++batch) REQUIRE((*stream)->NextBatch().ok());  // two epochs
    stream->reset();
    return seen;
  };
  StreamOptions options = Options(4);
  options.repeat = true;
  options.shuffle_buffer = 3;
  options.seed = 11;
  // The places of the two epochs read (the decoders may have begun a third, as far as timing let
  // them).
  std::vector<Place> places;
  for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
    for (std::int64_t part = 0; part < 4; ++part) {
      for (std::int64_t index = 0; index < 3; ++index) places.emplace_back(part, index, epoch);
    }
  }
  const auto one = seeds(options);
  std::set<std::uint64_t> distinct;
  for (const Place& place : places) {
    REQUIRE(one.count(place) == 1);
    distinct.insert(one.at(place));
  }
  CHECK(distinct.size() == 24);  // every record, every epoch, its own seed
  options.decode_threads = 3;
  options.decode_batch = 1;
  auto three = seeds(options);
  for (const Place& place : places) {
    REQUIRE(three.count(place) == 1);
    CHECK(three.at(place) == one.at(place));
  }
  options.seed = 12;
  auto other = seeds(options);
  CHECK(other.at({0, 0, 0}) != one.at({0, 0, 0}));
}

TEST_CASE("skip on TFRecord files: a corrupt length skips the rest of its file, counted once") {
  testing::TempDir dir;
  std::vector<std::string> files = {ExampleFile(0), ExampleFile(1), ExampleFile(2)};
  const std::size_t record_bytes = files[0].size() / 4;
  files[0][record_bytes + 2] ^= 1;       // record 1's length: records 1 to 3 cannot be framed
  files[1][2 * record_bytes - 1] ^= 1;   // record 1's data checksum
  files[2].resize(files[2].size() - 3);  // record 3 truncated
  for (int file = 0; file < 3; ++file) {
    testing::WriteRaw(dir.File("train-" + std::to_string(file) + ".tfrecord"), files[file]);
  }
  auto dataset = TfRecordDataset::Create({dir.File("train-*")});
  REQUIRE(dataset.ok());
  CapturedLog log;
  StreamOptions options = Options(3);
  options.example_shape = {2};
  options.bad_records = BadRecords::kSkip;
  options.logger = Logger(log.file);
  auto stream = StreamPipeline::Create(*dataset, ImageLabelDecoder(), options);
  REQUIRE(stream.ok());
  auto [ids, error] = ReadAll(**stream, 2);
  CHECK(error.ok());
  // A reader's error ends its file (the reader cannot tell what follows a bad record from a
  // bad frame): file 0 loses records 1-3, file 1 records 5-7, file 2 record 11.
  CHECK(ids == std::vector<int>{0, 4, 8, 9, 10});
  CHECK((*stream)->skipped_records() == 3);
  const std::string text = log.Text();
  INFO(text);
  CHECK(Has(text, dir.File("train-0.tfrecord") + ": record 1 at byte offset " +
                      std::to_string(record_bytes)));
  CHECK(Has(text, "the length's checksum does not match"));
  CHECK(Has(text, "the data's checksum does not match"));
  CHECK(Has(text, "truncated"));
  CHECK(Count(text, "rest_of_part_skipped=true") == 3);
}

}  // namespace
}  // namespace taas::data
