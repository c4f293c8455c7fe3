#include "taas/data/stream_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "example_shape.h"
#include "random.h"
#include "taas/data/shuffle_buffer.h"

namespace taas::data {
namespace {

// A record taken from the shard, or the error that ends it.
struct Taken {
  std::int64_t epoch = 0;
  absl::Status error;      // reading failed; the shard is done after it unless `skippable`
  bool skippable = false;  // a part's reader failed under BadRecords::kSkip: the next part follows
  std::int64_t part = 0;
  Record record;
};

// Reads the shard's records in order, for several decode threads: each TakeChunk hands out the
// next records as one numbered chunk (one lock and one hand-over per chunk, not per record).
// Repeats the plan's parts every epoch, in a seeded order when shuffling by part. Thread-safe.
class ShardReader {
 public:
  ShardReader(std::shared_ptr<const RecordDataset> dataset, ShardPlan plan, bool repeat,
              bool shuffle_parts, bool skip_bad, std::uint64_t seed, int shard_index,
              int num_shards)
      : dataset_(std::move(dataset)),
        plan_(std::move(plan)),
        repeat_(repeat),
        shuffle_parts_(shuffle_parts),
        skip_bad_(skip_bad),
        part_order_state_(seed ^ 0x5eedf11e5ULL),  // apart from the shuffle buffer's sequence
        shard_name_("shard " + std::to_string(shard_index) + " of " + std::to_string(num_shards)) {
    StartEpoch();
  }

  // Fills chunk[0, n) with the next n <= chunk.size() records (the last may be an error) and
  // returns n; `sequence` is the chunk's number. n == 0: the shard is done, and `sequence` is how
  // many chunks there were.
  std::size_t TakeChunk(std::vector<Taken>& chunk, std::int64_t& sequence) {
    std::lock_guard<std::mutex> lock(mu_);
    std::size_t n = 0;
    while (n < chunk.size() && TakeLocked(chunk[n])) {
      const Taken& taken = chunk[n++];
      if (!taken.error.ok() && !taken.skippable) break;
    }
    sequence = n > 0 ? next_sequence_++ : next_sequence_;
    return n;
  }

 private:
  // The next record or error; false once the shard is done.
  bool TakeLocked(Taken& taken) {
    taken.error = absl::OkStatus();
    taken.skippable = false;
    for (;;) {
      if (done_) return false;
      if (reader_ == nullptr) {
        if (next_part_ == order_.size()) {
          if (kept_this_epoch_ == 0) {
            return Fail(taken, absl::FailedPreconditionError(
                                   "stream: " + shard_name_ + " holds no records of its " +
                                   std::to_string(order_.size()) +
                                   " part(s): a data set with fewer records than shards, or "
                                   "empty files"));
          }
          if (!repeat_) {
            done_ = true;
            continue;
          }
          ++epoch_;
          StartEpoch();
        }
        current_part_ = order_[next_part_++];
        absl::StatusOr<std::unique_ptr<RecordReader>> opened = dataset_->Open(current_part_);
        if (!opened.ok()) return Fail(taken, opened.status());
        reader_ = *std::move(opened);
      }
      absl::StatusOr<bool> got = reader_->Next(taken.record);
      if (!got.ok() && skip_bad_) {  // the reader is done after an error: on to the next part
        taken.error = got.status();
        taken.skippable = true;
        taken.epoch = epoch_;
        taken.part = current_part_;
        reader_.reset();
        return true;
      }
      if (!got.ok()) return Fail(taken, got.status());
      if (!*got) {
        reader_.reset();
        continue;
      }
      const std::int64_t position = records_seen_++;
      if (position % plan_.record_stride != plan_.record_offset) continue;
      ++kept_this_epoch_;
      taken.epoch = epoch_;
      taken.part = current_part_;
      return true;
    }
  }

  void StartEpoch() {
    order_ = plan_.parts;
    if (shuffle_parts_) {  // Fisher-Yates, seeded: the same order on every machine
      for (std::size_t i = order_.size(); i > 1; --i) {
        std::swap(order_[i - 1], order_[NextShuffleRandom(part_order_state_) % i]);
      }
    }
    next_part_ = 0;
    records_seen_ = 0;
    kept_this_epoch_ = 0;
  }

  bool Fail(Taken& taken, absl::Status error) {
    taken.error = std::move(error);
    taken.epoch = epoch_;
    done_ = true;
    reader_.reset();
    return true;
  }

  const std::shared_ptr<const RecordDataset> dataset_;
  const ShardPlan plan_;
  const bool repeat_;
  const bool shuffle_parts_;
  const bool skip_bad_;
  std::mutex mu_;  // guards everything below
  std::uint64_t part_order_state_;
  const std::string shard_name_;
  std::int64_t epoch_ = 0;
  std::vector<std::int64_t> order_;
  std::size_t next_part_ = 0;
  std::int64_t current_part_ = -1;
  std::unique_ptr<RecordReader> reader_;
  std::int64_t records_seen_ = 0;  // of the concatenation of this epoch's parts
  std::int64_t kept_this_epoch_ = 0;
  std::int64_t next_sequence_ = 0;  // of chunks
  bool done_ = false;
};

// One record's outcome: its example, or its error.
struct Decoded {
  std::int64_t epoch = 0;
  absl::StatusOr<DecodedExample> example;
  // The error is a bad record's (BadRecords::kSkip may leave it out), not the shard's end; and a
  // reader's, after which the rest of the part was not read.
  bool skippable = false;
  bool rest_of_part = false;
};

// Chunks of decoded examples put back in read order. A decode thread waits while its chunk is
// `window` or more ahead of the next one taken, so the window bounds what waits here.
// Thread-safe.
class InOrder {
 public:
  explicit InOrder(std::int64_t window) : window_(window) {}

  // False when stopped.
  bool Put(std::int64_t sequence, std::vector<Decoded> decoded) {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return stop_ || sequence < next_ + window_; });
    if (stop_) return false;
    waiting_.emplace(sequence, std::move(decoded));
    arrived_.notify_all();
    return true;
  }

  // Sequences [0, count) exist.
  void End(std::int64_t count) {
    std::lock_guard<std::mutex> lock(mu_);
    end_ = count;
    arrived_.notify_all();
  }

  // The next chunk in read order; false at the end or when stopped.
  bool Take(std::vector<Decoded>& out) {
    std::unique_lock<std::mutex> lock(mu_);
    arrived_.wait(lock, [&] { return stop_ || next_ == end_ || waiting_.count(next_) != 0; });
    if (stop_ || next_ == end_) return false;
    auto it = waiting_.find(next_);
    out = std::move(it->second);
    waiting_.erase(it);
    ++next_;
    space_.notify_all();
    return true;
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    arrived_.notify_all();
    space_.notify_all();
  }

 private:
  const std::int64_t window_;
  std::mutex mu_;  // guards everything below
  std::condition_variable arrived_;
  std::condition_variable space_;
  std::map<std::int64_t, std::vector<Decoded>> waiting_;
  std::int64_t next_ = 0;
  std::int64_t end_ = -1;
  bool stop_ = false;
};

// The batches ready for the consumer, at most `capacity`. Thread-safe.
class ReadyBatches {
 public:
  explicit ReadyBatches(int capacity) : capacity_(static_cast<std::size_t>(capacity)) {}

  // Blocks while full; false when stopped.
  bool Push(absl::StatusOr<std::optional<Batch>> batch) {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return stop_ || queue_.size() < capacity_; });
    if (stop_) return false;
    queue_.push_back(std::move(batch));
    ready_.notify_all();
    return true;
  }

  absl::StatusOr<std::optional<Batch>> Pop() {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !queue_.empty(); });
    absl::StatusOr<std::optional<Batch>> batch = std::move(queue_.front());
    queue_.pop_front();
    space_.notify_all();
    return batch;
  }

  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    space_.notify_all();
  }

 private:
  const std::size_t capacity_;
  std::mutex mu_;  // guards everything below
  std::condition_variable ready_;
  std::condition_variable space_;
  std::deque<absl::StatusOr<std::optional<Batch>>> queue_;
  bool stop_ = false;
};

std::string Where(const RecordDataset& dataset, std::int64_t part, const Record& record) {
  return dataset.part_name(part) + ": record " + std::to_string(record.index) + " at byte offset " +
         std::to_string(record.offset);
}

// RecordContext::seed: the options' seed, the shard, the epoch, the part and the record's index,
// each mixed in by a splitmix64 step.
std::uint64_t RecordSeed(const StreamOptions& options, const Taken& taken) {
  std::uint64_t seed = options.seed;
  for (const std::uint64_t value :
       {static_cast<std::uint64_t>(options.shard_index), static_cast<std::uint64_t>(taken.epoch),
        static_cast<std::uint64_t>(taken.part), static_cast<std::uint64_t>(taken.record.index)}) {
    std::uint64_t state = seed ^ value;
    seed = internal::NextRandom(state);
  }
  return seed;
}

// The decoded record, or its error named by where the record is.
absl::StatusOr<DecodedExample> DecodeRecord(const ContextDecodeFn& decode,
                                            const RecordDataset& dataset, const Taken& taken,
                                            const StreamOptions& options) {
  const std::int64_t elements = NumElements(options.example_shape);
  const std::int64_t target_elements = options.target_elements;
  absl::StatusOr<DecodedExample> example;
  try {
    const RecordContext context{taken.part, taken.record.index, taken.epoch,
                                RecordSeed(options, taken)};
    example = decode(taken.record.bytes, context);
  } catch (const std::exception& e) {  // a user's decoder: nothing may escape the module
    example = absl::InternalError(std::string("the decoder threw: ") + e.what());
  } catch (...) {
    example = absl::InternalError("the decoder threw");
  }
  if (example.ok() && static_cast<std::int64_t>(example->input.size()) != elements) {
    example = absl::InvalidArgumentError(
        "decoded " + std::to_string(example->input.size()) + " floats, but example_shape holds " +
        std::to_string(elements) + ": set StreamOptions::example_shape to the records' shape");
  } else if (example.ok() && static_cast<std::int64_t>(example->target.size()) != target_elements) {
    example = absl::InvalidArgumentError(
        "decoded a target of " + std::to_string(example->target.size()) +
        " floats, but StreamOptions::target_elements is " + std::to_string(target_elements) +
        ": set it to the records' target size (0 for classes)");
  }
  if (!example.ok()) {
    return absl::Status(example.status().code(), Where(dataset, taken.part, taken.record) + ": " +
                                                     std::string(example.status().message()));
  }
  return example;
}

}  // namespace

struct StreamPipeline::State {
  State(std::shared_ptr<const RecordDataset> dataset_in, ContextDecodeFn decode_in,
        StreamOptions options_in, ShardPlan plan_in, std::int64_t decode_ahead)
      : dataset(std::move(dataset_in)),
        decode(std::move(decode_in)),
        options(std::move(options_in)),
        plan(std::move(plan_in)),
        reader(dataset, plan, options.repeat, options.shuffle_buffer > 1 && plan.by_part(),
               options.bad_records == BadRecords::kSkip, options.seed, options.shard_index,
               options.num_shards),
        in_order((decode_ahead + options.decode_batch - 1) / options.decode_batch),
        ready(options.prefetch),
        decode_ahead(decode_ahead) {}

  void Stop() {
    in_order.Stop();
    ready.Stop();
  }

  const std::shared_ptr<const RecordDataset> dataset;
  const ContextDecodeFn decode;
  const StreamOptions options;
  const ShardPlan plan;
  ShardReader reader;
  InOrder in_order;
  ReadyBatches ready;
  const std::int64_t decode_ahead;
  std::atomic<std::int64_t> skipped{0};  // written by the batching thread only
};

absl::StatusOr<std::unique_ptr<StreamPipeline>> StreamPipeline::Create(
    std::shared_ptr<const RecordDataset> dataset, DecodeFn decode, StreamOptions options) {
  if (!decode) return absl::InvalidArgumentError("stream: no decode function");
  return Create(
      std::move(dataset),
      ContextDecodeFn([decode = std::move(decode)](std::string_view record, const RecordContext&) {
        return decode(record);
      }),
      std::move(options));
}

absl::StatusOr<std::unique_ptr<StreamPipeline>> StreamPipeline::Create(
    std::shared_ptr<const RecordDataset> dataset, ContextDecodeFn decode, StreamOptions options) {
  if (dataset == nullptr) return absl::InvalidArgumentError("stream: no data set");
  if (!decode) return absl::InvalidArgumentError("stream: no decode function");
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError("stream: batch_size must be >= 1, got " +
                                      std::to_string(options.batch_size));
  }
  TAAS_RETURN_IF_ERROR(internal::CheckExampleShape(options.example_shape, "stream"));
  if (options.decode_threads < 1 || options.decode_threads > 1024) {
    return absl::InvalidArgumentError("stream: decode_threads must be in [1, 1024], got " +
                                      std::to_string(options.decode_threads));
  }
  if (options.prefetch < 1) {
    return absl::InvalidArgumentError("stream: prefetch must be >= 1, got " +
                                      std::to_string(options.prefetch));
  }
  if (options.decode_batch < 1 || options.decode_batch > 65536) {
    return absl::InvalidArgumentError("stream: decode_batch must be in [1, 65536], got " +
                                      std::to_string(options.decode_batch));
  }
  if (options.target_elements < 0) {
    return absl::InvalidArgumentError("stream: target_elements must be >= 0, got " +
                                      std::to_string(options.target_elements));
  }
  if (options.max_skipped_records < 0) {
    return absl::InvalidArgumentError("stream: max_skipped_records must be >= 0, got " +
                                      std::to_string(options.max_skipped_records));
  }
  if (options.decode_ahead < 0 || options.shuffle_buffer < 0) {
    return absl::InvalidArgumentError("stream: decode_ahead and shuffle_buffer must be >= 0");
  }
  if (!options.device.is_cpu() && MemoryFor(options.device.type) == nullptr) {
    return absl::InvalidArgumentError("stream: device " + DeviceName(options.device) +
                                      " has no engine in this binary (TAAS_DEVICE=cpu runs "
                                      "without)");
  }
  absl::StatusOr<ShardPlan> plan =
      PlanShard(dataset->num_parts(), options.num_shards, options.shard_index);
  if (!plan.ok()) {
    return absl::InvalidArgumentError("stream: " + std::string(plan.status().message()));
  }
  const std::int64_t decode_ahead = options.decode_ahead > 0
                                        ? options.decode_ahead
                                        : 2 * options.decode_threads * options.decode_batch;
  auto state = std::make_unique<State>(std::move(dataset), std::move(decode), std::move(options),
                                       *std::move(plan), decode_ahead);
  std::unique_ptr<StreamPipeline> pipeline(new StreamPipeline(std::move(state)));
  for (int i = 0; i < pipeline->state_->options.decode_threads; ++i) {
    pipeline->decoders_.emplace_back([p = pipeline.get()] { p->DecodeLoop(); });
  }
  pipeline->batcher_ = std::thread([p = pipeline.get()] { p->BatchLoop(); });
  return pipeline;
}

StreamPipeline::StreamPipeline(std::unique_ptr<State> state) : state_(std::move(state)) {}

StreamPipeline::~StreamPipeline() {
  state_->Stop();
  for (std::thread& decoder : decoders_) decoder.join();
  if (batcher_.joinable()) batcher_.join();
}

const ShardPlan& StreamPipeline::plan() const { return state_->plan; }

std::int64_t StreamPipeline::skipped_records() const { return state_->skipped.load(); }

bool LogSkippedRecord(std::int64_t count) {
  if (count <= kSkippedRecordsLogged) return count >= 1;
  while (count % 10 == 0) count /= 10;
  return count == 1;
}

std::int64_t StreamPipeline::max_examples_held() const {
  const StreamOptions& o = state_->options;
  const std::int64_t window_chunks = (state_->decode_ahead + o.decode_batch - 1) / o.decode_batch;
  // The shuffle buffer; the window of decoded chunks, one chunk per decode thread waiting to enter
  // it and the one the batching thread takes from; the batch being filled, the ready ones, and
  // one waiting for room among them.
  return std::max<std::int64_t>(1, o.shuffle_buffer) +
         (window_chunks + o.decode_threads + 1) * o.decode_batch + o.batch_size * (o.prefetch + 2);
}

void StreamPipeline::DecodeLoop() {
  State& s = *state_;
  std::vector<Taken> chunk(static_cast<std::size_t>(s.options.decode_batch));
  for (;;) {
    std::int64_t sequence = 0;
    const std::size_t n = s.reader.TakeChunk(chunk, sequence);
    if (n == 0) {
      s.in_order.End(sequence);
      return;
    }
    std::vector<Decoded> decoded;
    decoded.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      Taken& taken = chunk[i];
      // The error is moved, not copied: one owner at a time, handed over under the queue's lock.
      const bool read = taken.error.ok();
      decoded.push_back({taken.epoch,
                         read ? DecodeRecord(s.decode, *s.dataset, taken, s.options)
                              : absl::StatusOr<DecodedExample>(std::move(taken.error)),
                         read || taken.skippable, !read});
    }
    if (!s.in_order.Put(sequence, std::move(decoded))) return;
  }
}

namespace {

// The examples as one batch on `device`; Internal when copying there threw.
absl::StatusOr<std::optional<Batch>> Assemble(std::vector<DecodedExample>& examples,
                                              std::int64_t epoch, const StreamOptions& options) {
  const std::int64_t elements = NumElements(options.example_shape);
  Shape shape = {static_cast<std::int64_t>(examples.size())};
  shape.insert(shape.end(), options.example_shape.begin(), options.example_shape.end());
  Batch batch{Tensor(shape), std::vector<std::int32_t>(examples.size()), epoch};
  batch.targets.reserve(examples.size() * static_cast<std::size_t>(options.target_elements));
  float* out = batch.images.data();
  for (std::size_t i = 0; i < examples.size(); ++i) {
    std::memcpy(out + static_cast<std::int64_t>(i) * elements, examples[i].input.data(),
                static_cast<std::size_t>(elements) * sizeof(float));
    batch.labels[i] = examples[i].label;
    batch.targets.insert(batch.targets.end(), examples[i].target.begin(), examples[i].target.end());
  }
  examples.clear();
  if (options.device.is_cpu()) return batch;
  try {  // here, on the batching thread, so the copy overlaps the model's step
    batch.images = batch.images.To(options.device);
  } catch (const std::exception& e) {
    return absl::InternalError("stream: copying a batch to " + DeviceName(options.device) +
                               " failed: " + e.what());
  }
  return batch;
}

}  // namespace

namespace {

// Counts a skipped record, logs it when LogSkippedRecord says so and tells on_skipped; the error
// that ends the stream once more than max_skipped_records were skipped, else OK.
absl::Status CountSkipped(std::atomic<std::int64_t>& skipped, const StreamOptions& o,
                          const Decoded& bad) {
  const std::int64_t count = skipped.load() + 1;
  skipped.store(count);
  const std::string error(bad.example.status().message());
  if (count > o.max_skipped_records) {
    return absl::DataLossError("stream: " + std::to_string(count) +
                               " bad records skipped, more than StreamOptions::"
                               "max_skipped_records (" +
                               std::to_string(o.max_skipped_records) +
                               "); the last: " + std::string(error) +
                               ": repair or drop the corrupt files, or raise the bound");
  }
  if (LogSkippedRecord(count)) {
    o.logger.Warning(
        count <= kSkippedRecordsLogged ? "skipped a bad record" : "skipped bad records",
        {{"skipped", count}, {"rest_of_part_skipped", bad.rest_of_part}, {"error", error}});
  }
  if (o.on_skipped) o.on_skipped(count);
  return absl::OkStatus();
}

}  // namespace

void StreamPipeline::BatchLoop() {
  State& s = *state_;
  const StreamOptions& o = s.options;
  ShuffleBuffer<DecodedExample> buffer(o.shuffle_buffer, o.seed);
  std::int64_t buffer_epoch = 0;
  std::optional<Decoded> next_epoch;  // the first example of an epoch, while the last one drains
  std::vector<Decoded> chunk;         // decoded, in read order, from chunk[next] on
  std::size_t next = 0;
  std::vector<DecodedExample> batch;
  std::int64_t batch_epoch = 0;
  bool input_done = false;
  bool any_good = false;  // a record decoded: a stream of skipped records alone is an error
  for (;;) {
    while (!buffer.full() && !input_done) {
      Decoded decoded;
      if (next_epoch.has_value()) {
        if (!buffer.empty()) break;  // each epoch is a permutation of the shard
        decoded = *std::move(next_epoch);
        next_epoch.reset();
      } else {
        if (next == chunk.size()) {
          next = 0;
          if (!s.in_order.Take(chunk)) {
            chunk.clear();
            input_done = true;
            break;
          }
        }
        decoded = std::move(chunk[next++]);
      }
      if (!decoded.example.ok() && decoded.skippable && o.bad_records == BadRecords::kSkip) {
        absl::Status bound = CountSkipped(s.skipped, o, decoded);
        if (bound.ok()) continue;
        s.ready.Push(std::move(bound));
        return;
      }
      if (!decoded.example.ok()) {
        s.ready.Push(std::move(decoded.example).status());
        return;
      }
      if (!buffer.empty() && decoded.epoch != buffer_epoch) {
        next_epoch = std::move(decoded);
        break;
      }
      buffer_epoch = decoded.epoch;
      buffer.Push(*std::move(decoded.example));
      any_good = true;
    }
    if (buffer.empty()) {  // the input is done: the last batch, then the end
      if (const std::int64_t skipped = s.skipped.load(); skipped > 0 && !any_good) {
        s.ready.Push(absl::DataLossError(
            "stream: every record of shard " + std::to_string(o.shard_index) + " of " +
            std::to_string(o.num_shards) + " was bad (" + std::to_string(skipped) +
            " skipped): nothing to train on; the files are corrupt or the decoder does not "
            "fit them (see the logged errors)"));
        return;
      } else if (skipped > 0) {
        o.logger.Warning("the stream skipped bad records", {{"skipped", skipped}});
      }
      if (!batch.empty() && !o.drop_remainder) {
        if (!s.ready.Push(Assemble(batch, batch_epoch, o))) return;
      }
      s.ready.Push(std::optional<Batch>());
      return;
    }
    if (batch.empty()) batch_epoch = buffer_epoch;
    batch.push_back(buffer.Take());
    if (static_cast<std::int64_t>(batch.size()) == o.batch_size) {
      absl::StatusOr<std::optional<Batch>> ready = Assemble(batch, batch_epoch, o);
      const bool failed = !ready.ok();
      if (!s.ready.Push(std::move(ready)) || failed) return;
    }
  }
}

absl::StatusOr<std::optional<Batch>> StreamPipeline::NextBatch() {
  if (finished_) return std::optional<Batch>();
  absl::StatusOr<std::optional<Batch>> batch = state_->ready.Pop();
  if (!batch.ok() || !batch->has_value()) finished_ = true;
  return batch;
}

}  // namespace taas::data
