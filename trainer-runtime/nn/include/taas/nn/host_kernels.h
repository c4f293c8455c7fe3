// The CPU engine's kernels behind the device seam (device_kernels.h): what the layers run for
// host tensors, and what a test device (taas::sim_device) runs on its own memory, so both compute
// the same bits.
//
// Dense layers, activations, dropout, copies, the loss and L2 are these kernels' code. A
// convolution and a max pooling on the host are their layers' own oneDNN code (Conv2D and
// MaxPool2D keep primitives per input shape); ConvForward and the pooling kernels here run such a
// layer, kept in the DeviceState, over the tensors they are given, for callers that hold their
// tensors elsewhere (the test device). Stateless besides that state: any thread may call it.
#pragma once

#include "taas/nn/device_kernels.h"

namespace taas::nn {

// The host's kernels; KernelsFor(DeviceType::kCpu) returns them too.
DeviceKernels& HostKernels();

}  // namespace taas::nn
