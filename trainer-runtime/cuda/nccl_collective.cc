#include "nccl_collective.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "taas/contract/env.h"
#include "taas/cuda/device.h"
#include "taas/cuda/nccl_collective.h"
#include "taas/cuda/status.h"
#include "taas/cuda/stream.h"

namespace taas::cuda {

absl::Status NcclStatus(ncclResult_t result, ncclComm_t comm, std::string_view what) {
  if (result == ncclSuccess) return absl::OkStatus();
  std::string message = std::string(what) + ": " + ncclGetErrorString(result);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && *detail != '\0') message += std::string(" (") + detail + ")";
  switch (result) {
    case ncclSystemError:
    case ncclRemoteError:
      return absl::UnavailableError(message);
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

namespace {

using Clock = std::chrono::steady_clock;
using collective::Completion;
using collective::Handle;
using collective::ReduceOp;

std::string Seconds(double secs) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", secs);
  return text;
}

Clock::duration Timeout(double secs) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(secs));
}

// Sleeps a little longer each time: a short operation is seen at once, a long one costs no core.
class Backoff {
 public:
  void Pause() {
    if (polls_++ < 200) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, std::chrono::microseconds(1000));
  }

 private:
  int polls_ = 0;
  std::chrono::microseconds sleep_{20};
};

// A host buffer's way to and from NCCL: pinned host memory (so the copies are asynchronous and
// never wait, on the caller's thread, for the operations queued before them) and device memory.
struct Staging {
  void* pinned = nullptr;
  void* device = nullptr;
  std::size_t capacity = 0;
};

// One operation issued and not yet finished, in issue order.
struct Pending {
  std::string what;
  cudaEvent_t done = nullptr;  // recorded on the stream after the operation (and its copy back)
  Completion completion;
  Clock::time_point issued;
  std::span<std::byte> host;  // the caller's host buffer; empty for a device buffer
  Staging staging;
};

class NcclMember final : public collective::DeviceCollective {
 public:
  NcclMember(ncclComm_t comm, int rank, int size, const NcclOptions& options, cudaStream_t stream,
             bool owns_stream)
      : comm_(comm),
        rank_(rank),
        size_(size),
        device_(options.device),
        timeout_(Timeout(options.timeout_secs)),
        timeout_secs_(options.timeout_secs),
        stream_(stream),
        owns_stream_(owns_stream) {
    int version = 0;
    ncclGetVersion(&version);
    version_ = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
               std::to_string(version % 100);
    waiter_ = std::thread([this] { WaitLoop(); });
  }

  ~NcclMember() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    queued_.notify_all();
    waiter_.join();  // it finishes what was issued, each wait bounded
    cudaSetDevice(device_);
    bool aborted = false;
    {
      std::lock_guard lock(comm_mu_);
      aborted = comm_aborted_;
    }
    if (!aborted) {
      // Finalize flushes what NCCL still holds; a finalize that does not finish is aborted.
      ncclResult_t result = ncclCommFinalize(comm_);
      const auto deadline = Clock::now() + timeout_;
      Backoff backoff;
      while (result == ncclInProgress && Clock::now() < deadline) {
        backoff.Pause();
        ncclCommGetAsyncError(comm_, &result);
      }
      if (result == ncclSuccess) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
    // Every operation finished or its communicator was aborted (which ends its kernels), so the
    // stream drains and the staging buffers are no longer read or written.
    cudaStreamSynchronize(stream_);
    for (const auto* list : {&free_, &retired_}) {
      for (const Staging& s : *list) {
        cudaFreeAsync(s.device, stream_);
        cudaFreeHost(s.pinned);
      }
    }
    cudaStreamSynchronize(stream_);
    if (owns_stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string Describe() const override {
    return "nccl " + version_ + " of " + std::to_string(size_) + " (rank " + std::to_string(rank_) +
           ", cuda:" + std::to_string(device_) + ")";
  }

  Handle AllReduce(std::span<float> data, ReduceOp op) override {
    const std::size_t count = data.size();
    const ncclRedOp_t nccl_op = op == ReduceOp::kMean ? ncclAvg : ncclSum;
    return Issue(std::as_writable_bytes(data),
                 "NCCL all-reduce of " + std::to_string(count) + " floats", [&](void* buffer) {
                   return ncclAllReduce(buffer, buffer, count, ncclFloat32, nccl_op, comm_,
                                        stream_);
                 });
  }

  Handle Broadcast(std::span<std::byte> data, int root) override {
    if (root < 0 || root >= size_) {
      return Handle(absl::InvalidArgumentError("NCCL broadcast: root " + std::to_string(root) +
                                               " is not a rank of the group of " +
                                               std::to_string(size_)));
    }
    const std::size_t bytes = data.size();
    return Issue(
        data,
        "NCCL broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root),
        [&](void* buffer) {
          return ncclBroadcast(buffer, buffer, bytes, ncclUint8, root, comm_, stream_);
        });
  }

  void Abort(const absl::Status& status) override {
    Fail(status.ok() ? absl::AbortedError("NCCL group aborted") : status);
  }

  // On the caller's stream (the compute stream, as the runtime forms the member) an operation on
  // a device buffer is already ordered before the work enqueued after it: nothing to wait for.
  // Handles carry no identity, so the host is made to wait whenever a host-buffer operation is
  // still in flight (`handle` may be it, and its result reaches the host buffer only from the
  // waiter), and on a stream of the member's own, which the caller's work does not follow.
  absl::Status AwaitOnDevice(const Handle& handle) override {
    std::unique_lock lock(mu_);
    if (owns_stream_ || host_ops_in_flight_ > 0) {
      lock.unlock();
      return handle.Wait();
    }
    // An operation that fails later fails the ones after it (Fail).
    return failed_;
  }

 private:
  // Enqueues one operation on the stream (through staging for a host buffer) and hands its
  // completion to the waiter.
  Handle Issue(std::span<std::byte> data, std::string what,
               const std::function<ncclResult_t(void*)>& enqueue) {
    {
      std::lock_guard lock(mu_);
      if (!failed_.ok()) return Handle(failed_);
    }
    // Every member issues the same operations with the same lengths, so all skip an empty one.
    if (data.empty()) return Handle();
    absl::Status status =
        CudaStatus(cudaSetDevice(device_), what + ": selecting cuda:" + std::to_string(device_));
    Pending op;
    op.what = what + " (rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
              ", cuda:" + std::to_string(device_) + ")";
    op.issued = Clock::now();
    void* buffer = data.data();
    if (status.ok()) {
      auto on_device = OnThisDevice(data.data(), op.what);
      if (!on_device.ok()) return Handle(on_device.status());  // misuse: the group stays usable
      if (!*on_device) {
        auto staging = Acquire(data.size());
        status = staging.status();
        if (status.ok()) {
          op.host = data;
          op.staging = *staging;
          buffer = op.staging.device;
          std::memcpy(op.staging.pinned, data.data(), data.size());
          status = CudaStatus(cudaMemcpyAsync(op.staging.device, op.staging.pinned, data.size(),
                                              cudaMemcpyHostToDevice, stream_),
                              op.what + ": copying the host buffer to the device");
        }
      }
    }
    if (status.ok()) {
      std::unique_lock lock(comm_mu_);
      status = comm_aborted_ ? absl::AbortedError(op.what + ": the NCCL group was aborted")
                             : NcclStatus(enqueue(buffer), comm_, op.what);
    }
    // A non-blocking communicator may still be enqueueing (the first operation also connects the
    // peers): the event must be recorded after the operation is on the stream.
    if (status.ok()) status = AwaitEnqueued(op.what, op.issued + timeout_);
    if (status.ok() && !op.host.empty()) {
      status = CudaStatus(cudaMemcpyAsync(op.staging.pinned, op.staging.device, data.size(),
                                          cudaMemcpyDeviceToHost, stream_),
                          op.what + ": copying the result to the host");
    }
    if (status.ok()) {
      status = CudaStatus(cudaEventCreateWithFlags(&op.done, cudaEventDisableTiming),
                          op.what + ": creating its event");
    }
    if (status.ok()) {
      status = CudaStatus(cudaEventRecord(op.done, stream_), op.what + ": recording its event");
    }
    if (!status.ok()) {
      if (op.done != nullptr) cudaEventDestroy(op.done);
      if (op.staging.pinned != nullptr) Retire(op.staging);
      Fail(status);
      return Handle(status);
    }
    Handle handle = op.completion.handle();
    {
      std::lock_guard lock(mu_);
      if (!op.host.empty()) ++host_ops_in_flight_;
      queue_.push_back(std::move(op));
    }
    queued_.notify_one();
    return handle;
  }

  // Whether `data` is memory of this member's GPU (true) or of the host (false).
  absl::StatusOr<bool> OnThisDevice(const void* data, const std::string& what) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
      (void)cudaGetLastError();  // clears the error: memory CUDA does not know is the host's
      return false;
    }
    // Managed memory (which the engine never allocates) is staged like the host's.
    if (attributes.type != cudaMemoryTypeDevice) return false;
    if (attributes.device != device_) {
      return absl::InvalidArgumentError(
          what + ": the buffer is memory of cuda:" + std::to_string(attributes.device) +
          ", not of this member's GPU: a replica's collective "
          "works on the replica's own device");
    }
    return true;
  }

  absl::Status AwaitEnqueued(const std::string& what, Clock::time_point deadline) {
    Backoff backoff;
    for (;;) {
      ncclResult_t result = ncclSuccess;
      {
        std::lock_guard lock(comm_mu_);
        if (comm_aborted_) return absl::AbortedError(what + ": the NCCL group was aborted");
        ncclCommGetAsyncError(comm_, &result);
      }
      if (result != ncclInProgress) return NcclStatus(result, nullptr, what);
      if (Clock::now() >= deadline) {
        return absl::DeadlineExceededError(what + ": NCCL did not enqueue it within " +
                                           Seconds(timeout_secs_) +
                                           " s (it connects to the peers on the first operation: "
                                           "a peer is missing or unreachable)");
      }
      backoff.Pause();
    }
  }

  // Finishes the issued operations in order, each once its event fired; a failure or a wait past
  // the deadline aborts the communicator.
  void WaitLoop() {
    cudaSetDevice(device_);
    Clock::time_point previous_done = Clock::now();
    for (;;) {
      Pending op;
      {
        std::unique_lock lock(mu_);
        queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        op = std::move(queue_.front());
        queue_.pop_front();
      }
      absl::Status status = AwaitDone(op, std::max(op.issued, previous_done) + timeout_);
      previous_done = Clock::now();
      if (status.ok() && !op.host.empty()) {
        std::memcpy(op.host.data(), op.staging.pinned, op.host.size());
      }
      cudaEventDestroy(op.done);
      if (op.staging.pinned != nullptr) {
        if (status.ok()) {
          Release(op.staging);
        } else {
          Retire(op.staging);  // an aborted operation's copies may still run: freed at the end
        }
      }
      if (!status.ok()) Fail(status);
      op.completion.Finish(std::move(status));
      if (!op.host.empty()) {
        std::lock_guard lock(mu_);
        --host_ops_in_flight_;  // after Finish: its result is in the caller's buffer
      }
    }
  }

  absl::Status AwaitDone(const Pending& op, Clock::time_point deadline) {
    Backoff backoff;
    for (int poll = 0;; ++poll) {
      const cudaError_t query = cudaEventQuery(op.done);
      if (query == cudaSuccess) return absl::OkStatus();
      if (query != cudaErrorNotReady) return CudaStatus(query, op.what);
      {
        std::lock_guard lock(mu_);
        if (!failed_.ok()) return failed_;
      }
      // A peer lost shows here (NCCL's proxy thread notices it) long before the deadline.
      if (poll % 16 == 0) {
        ncclResult_t result = ncclSuccess;
        {
          std::lock_guard lock(comm_mu_);
          if (!comm_aborted_) ncclCommGetAsyncError(comm_, &result);
        }
        if (result != ncclSuccess && result != ncclInProgress) {
          return NcclStatus(result, nullptr, op.what);
        }
      }
      if (Clock::now() >= deadline) {
        return absl::DeadlineExceededError(
            op.what + " did not finish within " + Seconds(timeout_secs_) +
            " s: a member of the NCCL group stopped taking part (its process or GPU was lost, "
            "or it issued other operations)");
      }
      backoff.Pause();
    }
  }

  // The first failure wins; it aborts the communicator once, which ends the operations on the
  // device, and fails every later one.
  void Fail(absl::Status status) {
    {
      std::lock_guard lock(mu_);
      if (!failed_.ok()) return;
      failed_ = std::move(status);
    }
    {
      std::lock_guard lock(comm_mu_);
      if (!comm_aborted_) {
        cudaSetDevice(device_);
        ncclCommAbort(comm_);
        comm_aborted_ = true;
      }
    }
    queued_.notify_all();
  }

  absl::StatusOr<Staging> Acquire(std::size_t bytes) {
    {
      std::lock_guard lock(pool_mu_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->capacity >= bytes && (best == free_.end() || it->capacity < best->capacity)) {
          best = it;
        }
      }
      if (best != free_.end()) {
        Staging staging = *best;
        free_.erase(best);
        return staging;
      }
    }
    Staging staging;
    staging.capacity = std::max<std::size_t>(std::bit_ceil(bytes), std::size_t{64} << 10);
    const std::string what = "allocating " + std::to_string(staging.capacity) +
                             " bytes of NCCL staging on cuda:" + std::to_string(device_);
    TAAS_RETURN_IF_ERROR(CudaStatus(cudaMallocHost(&staging.pinned, staging.capacity), what));
    // Stream-ordered: valid for the copies that follow on the same stream, and never waits for
    // the operations queued before it.
    absl::Status status =
        CudaStatus(cudaMallocAsync(&staging.device, staging.capacity, stream_), what);
    if (!status.ok()) {
      cudaFreeHost(staging.pinned);
      return status;
    }
    return staging;
  }
  void Release(const Staging& staging) {
    std::lock_guard lock(pool_mu_);
    free_.push_back(staging);
  }
  void Retire(const Staging& staging) {
    std::lock_guard lock(pool_mu_);
    retired_.push_back(staging);
  }

  const ncclComm_t comm_;
  const int rank_;
  const int size_;
  const int device_;
  const Clock::duration timeout_;
  const double timeout_secs_;
  const cudaStream_t stream_;
  const bool owns_stream_;
  std::string version_;

  std::mutex comm_mu_;
  bool comm_aborted_ = false;  // guarded by comm_mu_; no NCCL call on comm_ once set

  std::mutex mu_;
  std::condition_variable queued_;
  std::deque<Pending> queue_;   // guarded by mu_
  absl::Status failed_;         // guarded by mu_
  bool stopping_ = false;       // guarded by mu_
  int host_ops_in_flight_ = 0;  // guarded by mu_: issued on host buffers, not yet finished

  std::mutex pool_mu_;
  std::vector<Staging> free_;     // guarded by pool_mu_
  std::vector<Staging> retired_;  // guarded by pool_mu_

  std::thread waiter_;  // last: started once everything it reads exists
};

}  // namespace

absl::StatusOr<std::unique_ptr<collective::DeviceCollective>> ConnectNccl(
    collective::Collective& cpu, const NcclOptions& options) {
  if (!(options.timeout_secs > 0)) {
    return absl::InvalidArgumentError("NcclOptions.timeout_secs must be > 0, got " +
                                      std::to_string(options.timeout_secs));
  }
  TAAS_ASSIGN_OR_RETURN(const int devices, VisibleDeviceCount());
  if (options.device < 0 || options.device >= devices) {
    return absl::FailedPreconditionError(
        "NCCL: no GPU cuda:" + std::to_string(options.device) + " in this process (it sees " +
        std::to_string(devices) + "; " + std::string(contract::kNvidiaVisibleDevicesEnv) + " and " +
        std::string(contract::kCudaVisibleDevicesEnv) + " choose them)");
  }
  const int rank = cpu.rank(), size = cpu.size();
  const std::string who = "rank " + std::to_string(rank) + " of " + std::to_string(size) +
                          ", cuda:" + std::to_string(options.device);
  TAAS_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(options.device), "NCCL (" + who + ")"));

  // The id names rank 0's bootstrap listener; the CPU collective carries it to everyone. Rank 0
  // broadcasts even when creating it failed (an empty id), so nobody waits for it: the others
  // then fail in ncclCommInitRank, and rank 0 reports why.
  ncclUniqueId id{};
  absl::Status created;
  if (rank == 0) created = NcclStatus(ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId");
  TAAS_RETURN_IF_ERROR(cpu.Broadcast(std::as_writable_bytes(std::span(id.internal)), 0).Wait());
  TAAS_RETURN_IF_ERROR(created);

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that forming, and every later call, is a wait we can bound
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  const auto deadline = Clock::now() + Timeout(options.timeout_secs);
  Backoff backoff;
  while (result == ncclInProgress) {
    if (Clock::now() >= deadline) {
      ncclCommAbort(comm);
      return absl::DeadlineExceededError(
          "NCCL communicator (" + who + ") did not form within " + Seconds(options.timeout_secs) +
          " s: a member did not join or cannot be reached (NCCL_DEBUG=INFO shows which address "
          "it tried; NCCL_SOCKET_IFNAME picks the interface)");
    }
    backoff.Pause();
    ncclCommGetAsyncError(comm, &result);
  }
  if (result != ncclSuccess) {
    absl::Status status = NcclStatus(result, comm, "forming the NCCL communicator (" + who + ")");
    if (comm != nullptr) ncclCommAbort(comm);
    return status;
  }

  cudaStream_t stream = static_cast<cudaStream_t>(options.stream);
  const bool owns_stream = stream == nullptr;
  if (owns_stream) {
    absl::Status status = CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                                     "NCCL (" + who + "): creating its stream");
    if (!status.ok()) {
      ncclCommAbort(comm);
      return status;
    }
  }
  return std::unique_ptr<collective::DeviceCollective>(
      std::make_unique<NcclMember>(comm, rank, size, options, stream, owns_stream));
}

void RegisterNcclCollective() {
  collective::RegisterDeviceCollective(
      DeviceType::kCuda,
      [](collective::Collective& cpu, const collective::DeviceCollectiveOptions& options)
          -> absl::StatusOr<std::unique_ptr<collective::DeviceCollective>> {
        // On the device's compute stream, where the replica's kernels produce the gradients and
        // later read the results (stream.h's ordering contract): no event between them needed.
        TAAS_ASSIGN_OR_RETURN(cudaStream_t stream, ComputeStream(options.device.index));
        NcclOptions nccl;
        nccl.device = options.device.index;
        nccl.stream = stream;
        nccl.timeout_secs = options.timeout_secs;
        return ConnectNccl(cpu, nccl);
      });
}

}  // namespace taas::cuda
