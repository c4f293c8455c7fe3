// NCCL as a backend of taas::collective::Collective: the all-reduce and broadcast of model
// replicas that live on GPUs, within a worker across its GPUs and across workers.
//
// A group is formed over a CPU collective the replicas already share (the in-process group of a
// worker, whose member 0 joins the TCP ring across workers): member 0 of the whole job creates
// NCCL's unique id and broadcasts it over that collective, and every member joins the NCCL
// communicator with the CPU collective's rank and size. So no rendezvous service or configured
// port is needed; NCCL itself still opens its bootstrap and socket-transport connections on
// ephemeral ports of the pod's address (NCCL_SOCKET_IFNAME picks the interface).
//
// One member per GPU, each driven by its own thread (the runtime's one thread per replica):
// every member calls ConnectNccl from its thread at the same time, and ncclCommInitRank of each
// rank runs on the thread that will issue its operations. One thread per rank, rather than one
// thread driving every local GPU between ncclGroupStart and ncclGroupEnd, keeps the replicas
// independent: each issues its step's buckets when its own backward pass produced them, as with
// the in-process group, and a slow replica never holds up the issuing of another's kernels.
//
// Buffers may be device memory of the member's GPU (used in place, the fast path) or host memory
// (copied through pinned and device staging buffers of the member, so the runtime's host-side
// control values, checksums and barriers work unchanged). Device buffers are read and written on
// the member's stream: work producing them must be ordered before the call (enqueued earlier on
// that stream, or synchronised), and nothing may touch them until Handle::Wait returns, or, on
// the member's stream, until AwaitOnDevice returned: that work follows the operation in stream
// order, so AwaitOnDevice returns at once, without waiting on the host (the member's failure if
// it has failed; an operation that fails later fails the next one). AwaitOnDevice waits on the
// host as Handle::Wait does while an operation on a host buffer is in flight (its result reaches
// the buffer from the host), and always for a member on a stream of its own.
//
// One stream, not a communication stream beside the compute stream: the runtime forms each
// member on its device's compute stream, so NCCL's kernels queue behind the backward kernels
// that produced a bucket and ahead of the update that reads it, with no event and no wait, and
// the caching allocator's stream-ordered reuse (stream.h) holds for the buffers NCCL touches. A
// second stream would let a bucket's all-reduce run while backward still computes the next
// layers; it is not done because nothing here would gain from it yet: the Fashion-MNIST CNN's
// 0.37 MB of gradients fit one bucket (TAAS_ALLREDUCE_BUCKET_BYTES, 4 MiB by default), issued
// when backward has finished, and at NVLink speeds an all-reduce of that size costs NCCL's
// latency, tens of microseconds against a step of milliseconds; one GPU runs no NCCL at all. For
// a model whose gradients span many buckets, it would take, per operation: an event recorded on
// the compute stream at issue that the NCCL stream waits for (cudaStreamWaitEvent), an event
// recorded on the NCCL stream after it, which AwaitOnDevice makes the compute stream wait for
// (kept alive until that wait is enqueued, not destroyed by the waiter when it fires), and the
// compute stream made to wait before any buffer NCCL used is freed.
//
// Every wait is bounded: the communicator must form within `timeout_secs`, and each operation
// must finish within `timeout_secs` of the moment the one before it finished (or of its issue).
// A wait that runs out, an error NCCL reports asynchronously (a peer lost) or Abort() aborts the
// communicator (ncclCommAbort) and fails that operation and every later one; DeadlineExceeded and
// Unavailable mean a peer was lost, as for the other backends. Results are the same bits on every
// member (NCCL computes each element's sum once); a mean is ncclAvg, which scales each input by
// 1/size before the sum, so it may differ from the CPU groups' sum-then-divide in the last bit.
#pragma once

#include <memory>

#include "taas/base/status.h"
#include "taas/collective/device_collective.h"

namespace taas::cuda {

struct NcclOptions {
  // The CUDA ordinal of this member's GPU (as the process sees it, after CUDA_VISIBLE_DEVICES).
  int device = 0;
  // The cudaStream_t the member's operations run on, typically the stream its replica computes
  // on (then device buffers need no other synchronisation, and AwaitOnDevice does not wait);
  // null makes the member create a stream of its own. Not owned; it must outlive the member.
  void* stream = nullptr;
  // Longest wait for the group to form and for any one operation.
  double timeout_secs = 600;
};

// Joins this member to the NCCL group of `cpu`'s members (see above); blocks until every member
// joined or `timeout_secs` passed. `cpu` is used only during the call. Fails with
// FailedPrecondition when the process sees no GPU `options.device`. Abort() aborts the
// communicator: the other members' operations fail as NCCL sees the peer go, or at their
// deadline.
absl::StatusOr<std::unique_ptr<collective::DeviceCollective>> ConnectNccl(
    collective::Collective& cpu, const NcclOptions& options);

// Registers ConnectNccl as the DeviceCollectiveFactory of kCuda (taas/collective/
// device_collective.h): register.cc calls it before main, as it registers the CUDA memory, so the
// runtime forms NCCL groups for replicas on GPUs without depending on this library. Each member
// then runs on its device's compute stream (taas/cuda/stream.h).
void RegisterNcclCollective();

}  // namespace taas::cuda
