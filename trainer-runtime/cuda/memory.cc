#include "taas/cuda/memory.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "block_cache.h"
#include "taas/contract/env.h"
#include "taas/cuda/device.h"
#include "taas/cuda/status.h"
#include "taas/cuda/stream.h"

namespace taas::cuda {
namespace {

std::string Name(int ordinal) { return "cuda:" + std::to_string(ordinal); }

// DeviceMemory's Copy and Allocate cannot return a status: a CUDA failure there (a device fault,
// a lost device) becomes an exception naming it, as Tensor's own failures are.
void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw std::runtime_error(std::string(status.message()));
}

// One device: its allocator, its two streams and its pinned staging buffers.
class DeviceContext {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(int ordinal) {
    auto context = std::unique_ptr<DeviceContext>(new DeviceContext(ordinal));
    TAAS_RETURN_IF_ERROR(context->Init());
    return context;
  }
  // Never destroyed (the process's memory outlives every tensor, also static ones): the driver
  // frees everything at exit.

  int ordinal() const { return ordinal_; }
  cudaStream_t compute() const { return compute_; }
  BlockCache& cache() { return cache_; }
  // Copies between the host and this device so far, each way: what a test counts to prove that
  // a step leaves its state on the device.
  struct Traffic {
    std::size_t to_host_copies = 0, to_host_bytes = 0;
    std::size_t to_device_copies = 0, to_device_bytes = 0;
  };
  Traffic traffic() const {
    return {to_host_copies_.load(), to_host_bytes_.load(), to_device_copies_.load(),
            to_device_bytes_.load()};
  }

  // Makes the copy stream wait for the work enqueued on `stream` so far.
  absl::Status CopyWaitsFor(cudaStream_t stream) {
    cudaEvent_t event = nullptr;
    TAAS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                              Name(ordinal_) + ": creating an event");
    absl::Status status =
        CudaStatus(cudaEventRecord(event, stream), Name(ordinal_) + ": recording");
    if (status.ok()) {
      status = CudaStatus(cudaStreamWaitEvent(copy_, event, 0), Name(ordinal_) + ": waiting");
    }
    (void)cudaEventDestroy(event);  // released once it has happened
    return status;
  }

  // Host (pageable) -> device, through the staging buffers, finished on return.
  absl::Status ToDevice(void* to, const void* from, std::size_t bytes) {
    std::lock_guard lock(copy_mu_);
    ScopedDevice device(ordinal_);
    TAAS_RETURN_IF_ERROR(device.status());
    TAAS_RETURN_IF_ERROR(CopyWaitsFor(compute_));
    const std::string what =
        Name(ordinal_) + ": copying " + std::to_string(bytes) + " bytes from the host";
    ++to_device_copies_;
    to_device_bytes_ += bytes;
    for (std::size_t offset = 0, piece = 0; offset < bytes; offset += kStagingBytes, ++piece) {
      const std::size_t n = std::min(kStagingBytes, bytes - offset);
      const int b = static_cast<int>(piece % 2);
      // The buffer's previous piece has left it (an event never recorded counts as happened).
      TAAS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(staged_[b]), what);
      std::memcpy(staging_[b], static_cast<const char*>(from) + offset, n);
      TAAS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(to) + offset, staging_[b], n,
                                                cudaMemcpyHostToDevice, copy_),
                                what);
      TAAS_CUDA_RETURN_IF_ERROR(cudaEventRecord(staged_[b], copy_), what);
    }
    TAAS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(copy_), what);
    return absl::OkStatus();
  }

  // Device -> host (pageable), through the staging buffers, finished on return: piece k+1 moves
  // over PCIe while piece k is copied out of its buffer.
  absl::Status ToHost(void* to, const void* from, std::size_t bytes) {
    std::lock_guard lock(copy_mu_);
    ScopedDevice device(ordinal_);
    TAAS_RETURN_IF_ERROR(device.status());
    TAAS_RETURN_IF_ERROR(CopyWaitsFor(compute_));
    const std::string what =
        Name(ordinal_) + ": copying " + std::to_string(bytes) + " bytes to the host";
    ++to_host_copies_;
    to_host_bytes_ += bytes;
    const std::size_t pieces = (bytes + kStagingBytes - 1) / kStagingBytes;
    const auto copy_out = [&](std::size_t piece) -> absl::Status {
      const int b = static_cast<int>(piece % 2);
      const std::size_t offset = piece * kStagingBytes;
      TAAS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(staged_[b]), what);
      std::memcpy(static_cast<char*>(to) + offset, staging_[b],
                  std::min(kStagingBytes, bytes - offset));
      return absl::OkStatus();
    };
    for (std::size_t piece = 0; piece < pieces; ++piece) {
      const int b = static_cast<int>(piece % 2);
      const std::size_t offset = piece * kStagingBytes;
      TAAS_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(staging_[b], static_cast<const char*>(from) + offset,
                          std::min(kStagingBytes, bytes - offset), cudaMemcpyDeviceToHost, copy_),
          what);
      TAAS_CUDA_RETURN_IF_ERROR(cudaEventRecord(staged_[b], copy_), what);
      // The other buffer's piece is out of the device once its event has happened; copying it
      // out frees that buffer for piece + 1.
      if (piece > 0) TAAS_RETURN_IF_ERROR(copy_out(piece - 1));
    }
    if (pieces > 0) TAAS_RETURN_IF_ERROR(copy_out(pieces - 1));
    return absl::OkStatus();
  }

 private:
  explicit DeviceContext(int ordinal)
      : ordinal_(ordinal),
        cache_({[ordinal](std::size_t bytes) -> void* {
                  ScopedDevice device(ordinal);
                  void* block = nullptr;
                  if (!device.status().ok() || cudaMalloc(&block, bytes) != cudaSuccess) {
                    (void)cudaGetLastError();  // out of memory: the cache retries or says so
                    return nullptr;
                  }
                  return block;
                },
                [ordinal](void* block) {
                  ScopedDevice device(ordinal);
                  (void)cudaFree(block);  // synchronises the device: only when the cache empties
                }}) {}

  absl::Status Init() {
    const std::string name = Name(ordinal_);
    ScopedDevice device(ordinal_);
    TAAS_RETURN_IF_ERROR(device.status());
    // Non-blocking: the legacy default stream (which cudaMalloc's neighbours in other libraries
    // may use) does not serialise against ours.
    TAAS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking),
                              name + ": creating the compute stream");
    TAAS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking),
                              name + ": creating the copy stream");
    for (int b = 0; b < 2; ++b) {
      TAAS_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&staging_[b], kStagingBytes, cudaHostAllocDefault),
                                name + ": allocating pinned staging buffers");
      TAAS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&staged_[b], cudaEventDisableTiming),
                                name + ": creating the staging events");
    }
    return absl::OkStatus();
  }

  const int ordinal_;
  BlockCache cache_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  std::mutex copy_mu_;  // guards the staging buffers and their events
  std::atomic<std::size_t> to_host_copies_{0}, to_host_bytes_{0};
  std::atomic<std::size_t> to_device_copies_{0}, to_device_bytes_{0};
  void* staging_[2] = {nullptr, nullptr};
  cudaEvent_t staged_[2] = {nullptr, nullptr};
};

class CudaMemory final : public DeviceMemory {
 public:
  // The context of `ordinal`, created on first use; an error for an ordinal no device has, or
  // when the devices cannot be counted (device.h).
  absl::StatusOr<DeviceContext*> Context(int ordinal) {
    std::lock_guard lock(mu_);
    if (!counted_) {
      count_ = VisibleDeviceCount();
      if (count_.ok()) contexts_.resize(static_cast<std::size_t>(*count_));
      counted_ = true;
    }
    TAAS_RETURN_IF_ERROR(count_.status());
    if (ordinal < 0 || ordinal >= *count_) {
      return absl::FailedPreconditionError(
          Name(ordinal) + ": no such CUDA device (" + std::to_string(*count_) + " visible; " +
          std::string(contract::kNvidiaVisibleDevicesEnv) + " and " +
          std::string(contract::kCudaVisibleDevicesEnv) + " select them, " +
          std::string(contract::kDeviceEnv) + "=cpu runs without)");
    }
    auto& context = contexts_[static_cast<std::size_t>(ordinal)];
    if (context == nullptr) {
      TAAS_ASSIGN_OR_RETURN(context, DeviceContext::Create(ordinal));
    }
    return context.get();
  }

  void* Allocate(Device device, std::size_t bytes) override {
    auto context = Context(device.index);
    ThrowIfError(context.status());
    void* block = (*context)->cache().Allocate(bytes);
    if (block == nullptr) return nullptr;  // Tensor says std::bad_alloc
    // Zeroed as DeviceMemory promises, in stream order: before any kernel that uses it. The
    // stream is the device's: the calling thread's current device may be another.
    ScopedDevice current(device.index);
    ThrowIfError(current.status());
    ThrowIfError(CudaStatus(cudaMemsetAsync(block, 0, bytes, (*context)->compute()),
                            Name(device.index) + ": zeroing " + std::to_string(bytes) + " bytes"));
    return block;
  }

  void Free(Device device, void* memory) override {
    if (memory == nullptr) return;
    auto context = Context(device.index);
    if (!context.ok() || !(*context)->cache().Free(memory)) {
      // A pointer this allocator did not hand out is a bug that would corrupt the device's heap.
      std::fprintf(stderr, "taas: freeing %p on %s, which its allocator did not hand out\n", memory,
                   Name(device.index).c_str());
      std::abort();
    }
  }

  void Copy(void* to, Device to_device, const void* from, Device from_device,
            std::size_t bytes) override {
    if (bytes == 0) return;
    if (to_device.is_cpu() && from_device.is_cpu()) {
      std::memcpy(to, from, bytes);
      return;
    }
    if (from_device.is_cpu() || to_device.is_cpu()) {
      const Device device = from_device.is_cpu() ? to_device : from_device;
      auto context = Context(device.index);
      ThrowIfError(context.status());
      ThrowIfError(from_device.is_cpu() ? (*context)->ToDevice(to, from, bytes)
                                        : (*context)->ToHost(to, from, bytes));
      return;
    }
    ThrowIfError(DeviceToDevice(to, to_device.index, from, from_device.index, bytes));
  }

  absl::StatusOr<int> DeviceCount() override { return VisibleDeviceCount(); }

  absl::StatusOr<std::string> Prepare(Device device) override {
    TAAS_RETURN_IF_ERROR(ProbeDevice(device.index));
    TAAS_RETURN_IF_ERROR(Context(device.index).status());
    TAAS_ASSIGN_OR_RETURN(std::string description, DescribeDevice(device.index));
    return DeviceName(device) + " " + description;
  }

 private:
  // Stream-ordered on both devices' compute streams: the destination's waits for the source's
  // work so far, the copy runs on the destination's, and the source's waits for the copy (its
  // block may be freed and reused by its next kernels).
  absl::Status DeviceToDevice(void* to, int to_ordinal, const void* from, int from_ordinal,
                              std::size_t bytes) {
    TAAS_ASSIGN_OR_RETURN(DeviceContext * dst, Context(to_ordinal));
    TAAS_ASSIGN_OR_RETURN(DeviceContext * src, Context(from_ordinal));
    const std::string what = Name(from_ordinal) + " -> " + Name(to_ordinal) + ": copying " +
                             std::to_string(bytes) + " bytes";
    ScopedDevice device(to_ordinal);
    TAAS_RETURN_IF_ERROR(device.status());
    if (dst == src) {
      TAAS_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, dst->compute()), what);
      return absl::OkStatus();
    }
    TAAS_RETURN_IF_ERROR(StreamWaits(dst->compute(), src->compute(), what));
    TAAS_CUDA_RETURN_IF_ERROR(
        cudaMemcpyPeerAsync(to, to_ordinal, from, from_ordinal, bytes, dst->compute()), what);
    return StreamWaits(src->compute(), dst->compute(), what);
  }

  static absl::Status StreamWaits(cudaStream_t waiter, cudaStream_t on, const std::string& what) {
    cudaEvent_t event = nullptr;
    TAAS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), what);
    absl::Status status = CudaStatus(cudaEventRecord(event, on), what);
    if (status.ok()) status = CudaStatus(cudaStreamWaitEvent(waiter, event, 0), what);
    (void)cudaEventDestroy(event);
    return status;
  }

  std::mutex mu_;
  bool counted_ = false;                                  // mu_
  absl::StatusOr<int> count_ = 0;                         // mu_
  std::vector<std::unique_ptr<DeviceContext>> contexts_;  // mu_; never shrinks
};

CudaMemory& TheMemory() {
  // Never destroyed: tensors in static storage may be freed after main returns.
  static CudaMemory* memory = new CudaMemory;
  return *memory;
}

}  // namespace

DeviceMemory& Memory() { return TheMemory(); }

absl::StatusOr<cudaStream_t> ComputeStream(int ordinal) {
  TAAS_ASSIGN_OR_RETURN(DeviceContext * context, TheMemory().Context(ordinal));
  return context->compute();
}

absl::StatusOr<MemoryStats> StatsOf(int ordinal) {
  TAAS_ASSIGN_OR_RETURN(DeviceContext * context, TheMemory().Context(ordinal));
  const BlockCache::Stats stats = context->cache().stats();
  const DeviceContext::Traffic traffic = context->traffic();
  return MemoryStats{.in_use_bytes = stats.in_use_bytes,
                     .cached_bytes = stats.cached_bytes,
                     .peak_in_use_bytes = stats.peak_in_use_bytes,
                     .device_allocations = stats.backend_allocations,
                     .reuses = stats.reuses,
                     .to_host_copies = traffic.to_host_copies,
                     .to_host_bytes = traffic.to_host_bytes,
                     .to_device_copies = traffic.to_device_copies,
                     .to_device_bytes = traffic.to_device_bytes};
}

ScopedDevice::ScopedDevice(int ordinal) {
  status_ = CudaStatus(cudaGetDevice(&previous_), "reading the current CUDA device");
  if (status_.ok() && previous_ != ordinal) {
    status_ = CudaStatus(cudaSetDevice(ordinal), Name(ordinal) + ": selecting it");
  }
  if (!status_.ok() || previous_ == ordinal) previous_ = -1;  // nothing to restore
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

}  // namespace taas::cuda
