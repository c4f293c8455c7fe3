// The CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies: ordinals count the visible
// ones). Thread-safe. Including this needs no CUDA headers.
#pragma once

#include <string>

#include "taas/base/status.h"

namespace taas::cuda {

// How many devices CUDA enumerates; 0 (not an error) when there is no device or no driver.
int VisibleDeviceCount();

// "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" for the startup line and messages.
absl::StatusOr<std::string> DescribeDevice(int ordinal);

// Runs the probe kernel on `ordinal` and waits for it: fails with kFailedPrecondition when this
// binary has no code for the device (it is built for sm_80 and sm_90, with their PTX for newer
// devices) or the driver is too old for it.
absl::Status ProbeDevice(int ordinal);

}  // namespace taas::cuda
