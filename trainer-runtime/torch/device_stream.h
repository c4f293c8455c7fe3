// Private to the torch engine: what LibTorch needs to compute on a CUDA replica, behind one seam so
// that module.cc holds no CUDA code. With CUDA (cuda/device_stream.cc): LibTorch's CUDA backend
// loaded, and its kernels queued on the runtime's compute stream; without (host_device_stream.cc):
// a CUDA device is a FailedPrecondition naming the fix.
#pragma once

#include "taas/base/status.h"
#include "taas/tensor/device.h"

namespace taas::torch_engine {

// Loads LibTorch's CUDA backend (libtorch_cuda.so, beside libtorch_cpu.so) once: it registers the
// CUDA kernels when loaded, and is loaded only when a replica uses a GPU, so that a binary runs
// on a machine without the CUDA libraries it needs. OK at once for the CPU.
absl::Status LoadBackend(Device device);

// Makes the runtime's compute stream of `device` LibTorch's current stream on the calling thread,
// so that the model's kernels, the runtime's copies and NCCL's all-reduce are ordered on one
// stream (taas/cuda/stream.h) and no step waits for the device. Nothing for the CPU.
absl::Status UseComputeStream(Device device);

}  // namespace taas::torch_engine
