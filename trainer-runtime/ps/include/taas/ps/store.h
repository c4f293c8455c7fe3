// The state of one parameter server, without transport: variable shards, their optimizer slots,
// the step counter, and synchronous gradient aggregation. The gRPC service (server.h) is a thin
// shell around it; tests drive it directly.
//
// Steps: every training replica pushes to every PS once per iteration (possibly with no
// gradients for this PS), tagged with the step it pulled from this PS. In async mode each push is
// applied at once and advances the step. In sync mode a push tagged with another step than the
// current one is stale and dropped; the first `replicas_to_aggregate` pushes of the current step
// are averaged, applied once, the step advances, and all of them are released together. Later
// pushes of that step are stale (backup workers). PS 0's step is the job's global step.
// Once the step reaches max_steps, pushes are answered kDone without being applied, so
// asynchronous workers cannot overshoot.
//
// Until Initialize() the store refuses Pull/Push/Snapshot with FAILED_PRECONDITION: a restarted
// PS never serves made-up values. Thread-safe.
//
// Values are copy-on-write: PullShared hands out references to the current buffers (the gRPC
// service sends them without copying), and an update of a buffer still referenced writes a fresh
// copy, so a buffer once handed out never changes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/optim/optimizer.h"

namespace taas::ps {

struct TrainingSpec {
  bool sync = false;
  int replicas_to_aggregate = 1;
  optim::OptimizerConfig optimizer;
  std::int64_t max_steps = 0;  // Pushes at or past this step are not applied (kDone); 0 = none.
};

struct ShardState {
  std::string name;
  std::vector<float> values;
  // Empty on initialise = zero slots, made by the shard's first update (a snapshot of a shard
  // never updated has none).
  std::vector<std::vector<float>> slots;
  // The variable the shard is part of (its name without "/part_<i>"): what the optimizer's
  // per-variable rules (weight decay and its exclusions) see. Empty: `name`.
  std::string variable = {};
};

enum class PushOutcome { kApplied, kStale, kReset, kDone };

struct PushResult {
  PushOutcome outcome = PushOutcome::kApplied;
  std::int64_t step = 0;  // The store's step after the push was handled.
  double wait_secs = 0;   // Sync: how long the push waited here for the other replicas' pushes.
};

struct Gradient {
  std::string name;
  std::span<const float> values;
};

// sum[i] += gradient[i]: synchronous aggregation (the benchmark measures this very kernel). The
// spans have the same size and do not overlap.
void Accumulate(std::span<float> sum, std::span<const float> gradient);

class ParameterStore {
 public:
  explicit ParameterStore(std::uint64_t incarnation);
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  // Replaces every shard, the optimizer and the step (chief's init or restore). Pending sync
  // pushes are released with kReset. Slots missing or of the wrong count start at zero.
  absl::Status Initialize(const TrainingSpec& spec, std::vector<ShardState> shards,
                          std::int64_t step);

  struct Status {
    std::uint64_t incarnation = 0;
    bool initialized = false;
    bool done = false;
    std::int64_t step = 0;
    std::int64_t pending = 0;   // Sync pushes waiting for the step to complete.
    std::int64_t elements = 0;  // Of all shards: the most a pull or push can carry.
  };
  Status GetStatus() const;

  // Calls `read(name, values)` for each requested shard under the lock; returns the step.
  absl::StatusOr<std::int64_t> Pull(
      const std::vector<std::string>& names,
      const std::function<void(const std::string&, std::span<const float>)>& read) const;

  // Handles one replica's push; `done` is called exactly once, possibly later from another
  // push's thread (sync mode), never under the store's lock. Errors (uninitialised, unknown shard,
  // wrong size) are reported through `done` as a non-OK status.
  // `worker` identifies the pushing replica (its rank; -1 = anonymous): in sync mode a second
  // push of the same worker for the same step is dropped as stale, so a retried push cannot
  // count twice.
  void Push(std::int64_t step, const std::vector<Gradient>& gradients,
            std::function<void(absl::StatusOr<PushResult>)> done, int worker = -1);

  // References to the current values of each named shard (never modified later: copy-on-write);
  // returns the step. Same errors as Pull.
  absl::StatusOr<std::int64_t> PullShared(
      const std::vector<std::string>& names,
      std::vector<std::shared_ptr<const std::vector<float>>>* out) const;

  class PushStream;
  struct GradientSize {
    std::string name;
    std::int64_t size = 0;  // Elements.
  };
  // A push whose gradient arrives in pieces (the gRPC path): the gradients of `shards`, in that
  // order, concatenated as raw float32 bytes, split anywhere. Validates the shard names and sizes
  // at once (same errors as Push; a shard named twice is InvalidArgument), so a push never stages
  // more than the store holds. Asynchronous mode applies each piece as it arrives, under the
  // lock (like TensorFlow's use_locking=False apply: a concurrent pull may see a push partly
  // applied); the step advances when the last piece arrived. Synchronous mode collects the pieces
  // and hands the whole gradient to Push at the end, so aggregation and staleness are unchanged.
  // A push cut short changes nothing in sync mode; in async mode the pieces applied stay (as an
  // interrupted Hogwild write) but the step does not advance.
  absl::StatusOr<std::unique_ptr<PushStream>> BeginPush(std::int64_t step,
                                                        std::vector<GradientSize> shards,
                                                        int worker = -1);

  // Copies of every shard with its slots (none for a shard initialised without slots and never
  // updated since: zeros), and the step (for checkpoints).
  absl::StatusOr<std::pair<std::int64_t, std::vector<ShardState>>> Snapshot() const;

  // Training is over: pending pushes are released with kDone, later pushes get kDone; pulls
  // still work so workers can fetch the final values.
  void MarkDone();

 private:
  struct Shard {
    std::string variable;                        // ShardState::variable, never empty
    std::shared_ptr<std::vector<float>> values;  // Copy-on-write (see PullShared).
    std::vector<std::vector<float>> slots;
    std::vector<float> accumulator;  // Sync mode: sum of this step's gradients.
  };
  using Done = std::function<void(absl::StatusOr<PushResult>)>;
  struct Waiting {
    Done done;
    std::chrono::steady_clock::time_point since;
  };
  // Answers every waiting push with `result` and the time it waited (outside the lock).
  static void Release(std::vector<Waiting>& waiting, const PushResult& result);

  absl::Status NotInitialized() const;
  absl::Status CheckGradientLocked(const std::string& name, std::size_t size) const;
  // The shard's values, made private to it first when a pull still references them.
  static std::vector<float>& MutableValues(Shard& shard);
  void ApplyLocked(Shard& shard, std::span<const float> gradient, std::size_t offset = 0);
  // A buffer of at least `floats` elements for a sync push to stage its gradient in, reused from
  // earlier pushes when one is spare: a fresh one per push would cost page faults and zeroing on
  // the step's critical path.
  std::vector<float> TakeStagingLocked(std::size_t floats);
  void ReturnStaging(std::vector<float> buffer);

  const std::uint64_t incarnation_;
  mutable std::mutex mu_;
  bool initialized_ = false;                       // guarded by mu_
  bool done_ = false;                              // guarded by mu_
  std::int64_t step_ = 0;                          // guarded by mu_
  std::uint64_t generation_ = 0;                   // guarded by mu_: counts Initialize calls
  TrainingSpec spec_;                              // guarded by mu_
  std::unique_ptr<optim::Optimizer> optimizer_;    // guarded by mu_
  std::map<std::string, Shard> shards_;            // guarded by mu_
  std::int64_t elements_ = 0;                      // guarded by mu_: sum of the shards' sizes
  std::vector<Waiting> waiting_;                   // guarded by mu_: counted pushes of this step
  std::set<int> contributors_;                     // guarded by mu_: workers counted this step
  std::vector<std::string> touched_;               // guarded by mu_: shards with accumulated grads
  std::vector<std::vector<float>> spare_staging_;  // guarded by mu_: see TakeStagingLocked
};

// One streamed push (ParameterStore::BeginPush). Thread-compatible: one thread feeds it at a time.
class ParameterStore::PushStream {
 public:
  ~PushStream();
  PushStream(const PushStream&) = delete;
  PushStream& operator=(const PushStream&) = delete;

  // The next `size` bytes of the concatenated gradients (any split, unaligned is fine).
  // InvalidArgument when they run past the announced sizes.
  absl::Status Add(const char* data, std::size_t size);

  // All pieces were added: `done` is called exactly once, as for Push (possibly later, from
  // another push's thread, in sync mode). InvalidArgument when bytes are missing.
  void Finish(std::function<void(absl::StatusOr<PushResult>)> done);

 private:
  friend class ParameterStore;
  PushStream() = default;
  absl::Status Consume(const char* data, std::size_t floats);

  ParameterStore* store_ = nullptr;
  std::int64_t step_ = 0;
  int worker_ = -1;
  bool sync_ = false;
  bool skip_ = false;  // Async: done or max steps reached at the start; pieces are dropped.
  std::uint64_t generation_ = 0;
  std::vector<GradientSize> shards_;
  std::vector<float> staged_;  // Sync: the gradients of shards_ concatenated (at least total_).
  std::size_t shard_ = 0;      // Async: shard being applied and its next element.
  std::int64_t element_ = 0;
  std::int64_t total_ = 0, received_ = 0;  // Elements.
  char partial_[sizeof(float)] = {};       // A float split between two pieces.
  std::size_t partial_size_ = 0;
  std::vector<float> bounce_;  // Async: aligned copy of a piece before it is applied.
};

}  // namespace taas::ps
