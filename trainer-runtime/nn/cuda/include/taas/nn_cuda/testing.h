// What the `gpu` tests comparing the CUDA engine with the CPU engine share (doctest assertions).
// Needs no CUDA headers.
#pragma once

#include <string>
#include <vector>

#include "taas/tensor/device.h"
#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas::nn::cuda::testing {

inline constexpr Device kCuda0{DeviceType::kCuda, 0};

// Checks max |cuda - cpu| <= tolerance * max(1, max |cpu|): `cuda` on cuda:0, `cpu` on the host,
// of one shape. Reports `what`, the largest difference and the bound.
void ExpectClose(const Tensor& cuda, const Tensor& cpu, double tolerance, const std::string& what);

// Moves each variable's value and gradient to `device`.
void MoveTo(const std::vector<Variable*>& variables, Device device);

}  // namespace taas::nn::cuda::testing
