// Registers the CUDA engine for DeviceType::kCuda before main in every binary that links
// taas::nn_cuda (linked whole: nothing refers to this file), as taas::cuda registers its memory.
#include "taas/nn_cuda/engine.h"

namespace {

const bool registered = [] {
  taas::nn::RegisterDeviceKernels(taas::DeviceType::kCuda, &taas::nn::cuda::Kernels());
  taas::optim::RegisterDeviceUpdateRules(taas::DeviceType::kCuda, &taas::nn::cuda::UpdateRules());
  return true;
}();

}  // namespace
