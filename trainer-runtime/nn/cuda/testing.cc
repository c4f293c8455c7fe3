#include "taas/nn_cuda/testing.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

namespace taas::nn::cuda::testing {

void ExpectClose(const Tensor& cuda, const Tensor& cpu, double tolerance, const std::string& what) {
  INFO(what);
  REQUIRE(cuda.device() == kCuda0);
  REQUIRE(cpu.device().is_cpu());
  REQUIRE(cuda.shape() == cpu.shape());
  const Tensor host = cuda.To(Device::Cpu());
  double scale = 1.0, worst = 0.0;
  for (float v : cpu.values()) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (std::int64_t i = 0; i < cpu.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(host.values()[i]) - cpu.values()[i]));
  }
  CHECK_MESSAGE(worst <= tolerance * scale,
                what << ": max difference " << worst << " > " << tolerance << " * " << scale);
}

void MoveTo(const std::vector<Variable*>& variables, Device device) {
  for (Variable* variable : variables) {
    variable->value = variable->value.To(device);
    variable->gradient = variable->gradient.To(device);
  }
}

}  // namespace taas::nn::cuda::testing
