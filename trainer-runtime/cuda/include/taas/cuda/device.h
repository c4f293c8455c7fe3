// The CUDA devices this process sees: NVIDIA's container runtime exposes to a container only the
// GPUs NVIDIA_VISIBLE_DEVICES names (NVIDIA's device plugin sets it in a pod), and
// CUDA_VISIBLE_DEVICES, when set, narrows them further; ordinals count the visible ones from 0.
// Thread-safe. Including this needs no CUDA headers.
#pragma once

#include <string>

#include "taas/base/status.h"

namespace taas::cuda {

// How many devices CUDA enumerates. 0 when there truly is none: CUDA reports no device
// (cudaErrorNoDevice), or the machine has no NVIDIA driver at all (no libcuda.so.1 to load, as
// on the build machines). Every other failure is an error, kFailedPrecondition, naming CUDA's
// error, the CUDA versions of the driver and of this binary's runtime, and the fix: a driver too
// old for this build (cudaErrorInsufficientDriver with a driver installed), one that cannot start
// or whose devices are unavailable must not look like a machine without GPUs, where a job would
// quietly train on its CPU.
absl::StatusOr<int> VisibleDeviceCount();

// "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" for the startup line and messages.
absl::StatusOr<std::string> DescribeDevice(int ordinal);

// Runs the probe kernel on `ordinal` and waits for it: fails with kFailedPrecondition when this
// binary has no code for the device (it is built for sm_80 and sm_90, with their PTX for newer
// devices) or the driver is too old for it.
absl::Status ProbeDevice(int ordinal);

}  // namespace taas::cuda
