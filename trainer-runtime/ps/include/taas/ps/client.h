// The training replicas' side of the PS protocol: one channel per PS, calls to all PS in flight
// at once. Engine-agnostic: parameters are named float buffers (a value to fill on pull, a
// gradient to send on push), laid out by a placement (placement.h).
//
// Lanes: a PS task may keep its variables in several independent stores ("lanes", each with its
// own shards, step and sync aggregation), each reached over its own connection. One HTTP/2
// connection is read, written and handed to the store by one thread at a time, so with one lane a
// large push moves and is applied on one core; with two, the halves of a partitioned variable
// travel and are applied side by side. The client sees each lane as one PS: PS index
// `task * lanes + lane`, so placement (PlaceVariables with `lanes`), sync aggregation, steps and
// restores work per lane exactly as across PS tasks. A lane other than 0 that holds nothing of
// the model gets no calls, so a small model costs one call per task and step, as without lanes.
//
// Errors: gRPC codes map one-to-one onto absl codes. UNAVAILABLE / DEADLINE_EXCEEDED mean a peer
// is gone or slow (transient); FAILED_PRECONDITION means a PS holds no variables yet (wait for
// the chief); UNAUTHENTICATED / PERMISSION_DENIED a token that is not the job's (permanent, as
// are model mismatches and bad requests). Every call has a deadline (the `timeout_secs` given),
// so every wait here ends by then. Thread-compatible: one thread
// uses a client at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "taas/base/fence.h"
#include "taas/base/log.h"
#include "taas/base/stall_watch.h"
#include "taas/base/status.h"
#include "taas/optim/optimizer.h"
#include "taas/ps/auth.h"
#include "taas/ps/placement.h"
#include "taas/ps/store.h"

namespace taas::ps {

struct ParamBuffers {
  std::span<float> value;           // Filled by Pull.
  std::span<const float> gradient;  // Sent by Push.
};

struct PsStatus {
  std::uint64_t incarnation = 0;
  bool initialized = false;
  bool done = false;
  std::int64_t step = 0;
};

struct PullInfo {
  std::int64_t global_step = 0;        // PS 0's step.
  std::vector<std::int64_t> ps_steps;  // Each PS's step, to tag the next push.
  std::vector<std::uint64_t> incarnations;
  bool done = false;
};

struct PushInfo {
  int applied = 0, stale = 0, reset = 0;
  bool done = false;
  std::int64_t global_step = 0;
  // Sync: the longest time a PS held this push waiting for the other replicas (the rest of the
  // push's time is transfer and update).
  double wait_secs = 0;
  // Push(pull_values): when every PS applied the push and returned its values, they are in
  // params[i].value, tagged as a Pull would have (the caller needs no Pull before the next step).
  std::optional<PullInfo> pulled;
};

struct PsClientOptions {
  // Pulls and pushes travel in pieces of at most this, all in flight at once (gRPC moves ~1-4 MB
  // messages far faster than one huge one).
  static constexpr std::int64_t kPieceBytes = 4 << 20;
  std::int64_t chunk_bytes = kPieceBytes;
  int lanes = 1;  // Served by each PS task (above).
  // Every call carries tokens.job; Initialize, Snapshot and Shutdown tokens.chief too (the
  // chief's; a worker has none and does not make those calls).
  PsTokens tokens;
  // Who calls: every call names this replica and its incarnation, so that a PS refuses an older
  // incarnation of it than one it has seen (taas/base/fence.h); a caller with no name (the PS
  // bench) is not fenced.
  ReplicaIncarnation caller;
  PsLimits limits;  // What a reply may make this client receive.
  // Where a call that waits long on a PS is reported, naming the PS tasks still awaited ("ps-0");
  // not owned, may be null (no reports).
  StallWatch* stalls = nullptr;
};

class PsClient {
 public:
  // PS tasks at `addresses`; PS 0 (task 0, lane 0) holds the global step.
  PsClient(std::vector<std::string> addresses, const PsClientOptions& options,
           const Logger& logger);
  ~PsClient();
  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;

  // PS as placement, pulls and pushes see them: every lane of every task.
  int num_ps() const { return static_cast<int>(addresses_.size()) * lanes_; }
  int lanes() const { return lanes_; }
  // Every PS task as the stall lines name them: "ps-0, ps-1".
  std::string Peers() const;
  // The address of the task that serves PS `ps`.
  const std::string& address(int ps) const {
    return addresses_[static_cast<std::size_t>(ps / lanes_)];
  }

  // Status of every PS, asking all at once; the first error wins.
  absl::StatusOr<std::vector<PsStatus>> Statuses(double timeout_secs);

  // Retries Statuses with backoff until every PS answers; logs one line naming the missing PS
  // while waiting. DeadlineExceeded after `timeout_secs`; Cancelled within a quarter of a second
  // of `stopped` (when given) returning true (the replica is terminating: docs/trainer-runtime.md,
  // "Faults").
  absl::StatusOr<std::vector<PsStatus>> WaitForServers(
      double timeout_secs, const std::function<bool()>& stopped = nullptr);

  // Replaces PS `ps`'s whole state (chief: init or restore).
  absl::Status Initialize(int ps, const TrainingSpec& spec, std::int64_t step,
                          std::vector<ShardState> shards, double timeout_secs);

  // Fills every params[i].value from the shards of placement[i] on all PS.
  absl::StatusOr<PullInfo> Pull(const std::vector<VariablePlacement>& placement,
                                const std::vector<ParamBuffers>& params, double timeout_secs);

  // Sends every params[i].gradient to the PS holding its shards, one push per PS tagged with
  // ps_steps[ps] and this replica's rank `worker`. In sync mode returns when the step completed
  // (or the push was dropped). With `pull_values`, each PS that applied the push answers with
  // the values after it in the same call, written into params[i].value (see PushInfo::pulled;
  // when a PS dropped the push, some values may be written and `pulled` is empty: Pull).
  absl::StatusOr<PushInfo> Push(const std::vector<VariablePlacement>& placement,
                                const std::vector<ParamBuffers>& params,
                                const std::vector<std::int64_t>& ps_steps, int worker,
                                double timeout_secs, bool pull_values = false);

  // PS `ps`'s shards with slots, and its step.
  absl::StatusOr<std::pair<std::int64_t, std::vector<ShardState>>> Snapshot(int ps,
                                                                            double timeout_secs);

  // Marks training done on PS `ps`; with `exit`, the PS process exits shortly after.
  absl::Status Shutdown(int ps, bool exit, double timeout_secs);

  // Tells PS `ps` that the chief saved the job's state at `step` (on a termination signal, or
  // its final checkpoint): a PS that is terminating exits then (it need not serve until its
  // deadline). Training goes on.
  absl::Status CheckpointSaved(int ps, std::int64_t step, double timeout_secs);

  struct Impl;

 private:
  int lane(int ps) const { return ps % lanes_; }
  std::string Describe(int ps) const;  // "ps T lane L at host:port", for errors.
  std::string PeerOf(int ps) const { return PeerName("ps", ps / lanes_); }  // "ps-T"

  std::vector<std::string> addresses_;
  Logger logger_;
  std::int64_t chunk_bytes_;
  int lanes_;
  PsTokens tokens_;
  ReplicaIncarnation caller_;
  PsLimits limits_;
  StallWatch* stalls_;
  std::unique_ptr<Impl> impl_;
};

// True for errors a restart of this process can outlive (peer gone, timeout).
bool IsTransient(const absl::Status& status);

}  // namespace taas::ps
