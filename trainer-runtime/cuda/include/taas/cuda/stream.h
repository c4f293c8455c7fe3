// The streams of the CUDA device, for the CUDA engine's kernels and libraries (includes CUDA's
// headers: only trainer-runtime/cuda/ and trainer-runtime/nn/cuda/ may include this).
//
// Ordering contract (memory.cc keeps it): each device has one compute stream. Allocation zeroes
// a block on it and a freed block is reused by work enqueued on it later, so kernels that use
// tensors must run on ComputeStream(device) (or on a stream that waits for it and that it waits
// for before the tensors are freed: NCCL's). Copies between the host and a device wait for the
// work already enqueued on the compute stream and are finished when Copy returns; a copy between
// two blocks of one device is enqueued on the compute stream.
#pragma once

#include <cuda_runtime_api.h>

#include "taas/base/status.h"

namespace taas::cuda {

// The compute stream of device `ordinal`, created (with the device's memory and staging
// buffers) on first use; lives as long as the process. Thread-safe.
absl::StatusOr<cudaStream_t> ComputeStream(int ordinal);

// Makes `ordinal` the calling thread's current device for its lifetime and then restores the
// previous one (CUDA's current device is per thread; a replica's thread may run on one device and
// its copies touch another).
class ScopedDevice {
 public:
  explicit ScopedDevice(int ordinal);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  const absl::Status& status() const { return status_; }

 private:
  int previous_ = -1;
  absl::Status status_;
};

}  // namespace taas::cuda
