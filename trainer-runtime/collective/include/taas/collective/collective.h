// Collective operations across the training replicas of a job: what all-reduce training (no
// parameter servers) averages gradients and shares variables with.
//
// Every member of a group calls the same operations in the same order with buffers of the same
// length; an operation works in place. Operations are asynchronous: the call returns a Handle at
// once (or after the part that must happen on the caller's thread), and the buffer must stay
// alive and untouched until Handle::Wait returns. Operations issued on one member complete in
// the order they were issued, so a caller can issue a bucket of gradients while the previous one
// travels.
//
// Results are bit-identical on every member: each element's sum is either computed once and
// copied to the others, or computed by every member in the same fixed order in the default
// floating-point environment. Every wait is bounded by the backend's
// timeout; an error names what was awaited and from whom. Unavailable and DeadlineExceeded mean a
// peer was lost (a restart can help); any other code means the group was misused or misbuilt.
//
// Backends: the TCP ring across processes (tcp_ring.h), in-process groups for several model
// replicas inside one worker (in_process.h), and groups over a device's memory
// (device_collective.h: NCCL for CUDA, the test device's) behind this same interface.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "taas/base/status.h"

namespace taas::collective {

enum class ReduceOp {
  kSum,
  kMean,  // the sum divided by the group's size
};

// The result of one asynchronous operation.
class Handle {
 public:
  // An operation that already finished with `status` (OK by default).
  explicit Handle(absl::Status status = absl::OkStatus());

  // Blocks until the operation finished and returns its result. The backend bounds the wait by its
  // timeout, so this returns. May be called more than once (the same result).
  absl::Status Wait() const;

 private:
  friend class Completion;
  struct State {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    absl::Status status;
  };
  explicit Handle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// The backend's side of a Handle: finished exactly once, from any thread.
class Completion {
 public:
  Completion();
  Handle handle() const { return Handle(state_); }
  void Finish(absl::Status status);

 private:
  std::shared_ptr<Handle::State> state_;
};

class Collective {
 public:
  virtual ~Collective() = default;

  // This member's index in [0, size()) and the group's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // For the start-up line: "tcp ring of 3 (rank 0)".
  virtual std::string Describe() const = 0;

  // Replaces `data` on every member with the element-wise sum (or mean) over the members.
  virtual Handle AllReduce(std::span<float> data, ReduceOp op) = 0;

  // Copies `data` of member `root` into `data` on every other member, byte for byte.
  virtual Handle Broadcast(std::span<std::byte> data, int root) = 0;

  // Orders the work that this member's device does after this call (its next kernels) after the
  // operation of `handle`. A backend that runs operations on the device's own queue (NCCL on the
  // compute stream) returns at once, without waiting on the host: a failure then fails a later
  // operation. The others wait for the operation here and return its result (the default).
  virtual absl::Status AwaitOnDevice(const Handle& handle) { return handle.Wait(); }

  // Returns once every member has called it (or the wait failed).
  absl::Status Barrier();
};

// A float span seen as bytes, for broadcasting variables.
inline std::span<std::byte> AsBytes(std::span<float> data) { return std::as_writable_bytes(data); }

}  // namespace taas::collective
