// The CUDA engine: the layers' kernels (taas/nn/device_kernels.h) and the optimizers' update rules
// (taas/optim/device_rules.h) on NVIDIA GPUs, with cuBLAS for every matrix product, cuDNN for
// convolution and max pooling, and a few element-wise CUDA kernels. Linking taas::nn_cuda
// registers it for DeviceType::kCuda before main (register.cc, linked whole), beside taas::cuda's
// memory; registering touches no device, so such a binary runs on a machine without a GPU.
//
// Everything runs in float32 (no TF32: cuBLAS's default math, cuDNN's convolutions asked for FMA
// math and run with the math type of the algorithm chosen: taas/nn_cuda/conv_algorithms.h) on
// each device's compute stream (taas/cuda/stream.h). A call returns once its work is enqueued:
// the loss's statistics and the L2 sums stay on the device. Errors are Status values naming the
// library call (Internal; ResourceExhausted when the device's memory is full); nothing throws.
// Thread-safe: each device's library handles and scratch buffers are used under that device's
// lock. Needs no CUDA headers.
#pragma once

#include "taas/nn/device_kernels.h"
#include "taas/optim/device_rules.h"

namespace taas::nn::cuda {

// The process's engine (the one register.cc registers); lives as long as the process.
DeviceKernels& Kernels();
optim::DeviceUpdateRules& UpdateRules();

}  // namespace taas::nn::cuda
