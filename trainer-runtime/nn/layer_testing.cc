#include "layer_testing.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace taas::nn::testing {
namespace {

// f = sum(layer(x) * weights) in double, so finite differences are accurate.
double Objective(Layer& layer, const Tensor& x, const Tensor& weights) {
  const Tensor& y = Ok(layer.Forward(x, true));
  double sum = 0.0;
  for (std::int64_t i = 0; i < y.size(); ++i)
    sum += static_cast<double>(y.data()[i]) * weights.data()[i];
  return sum;
}

}  // namespace

Tensor Random(const Shape& shape, std::uint64_t seed, float scale) {
  Tensor t(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (float& v : t.values()) v = uniform(rng);
  return t;
}

void CheckClose(double analytic, double numeric, const std::string& what) {
  INFO(what << " analytic " << analytic << " numeric " << numeric);
  CHECK(std::abs(analytic - numeric) <= 2e-2 * std::max(1.0, std::abs(numeric)));
}

void GradientCheck(Layer& layer, Tensor x, std::uint64_t seed) {
  const Tensor& y0 = Ok(layer.Forward(x, true));
  Tensor weights = Random(y0.shape(), seed + 1);
  Tensor input_grad = Ok(layer.Backward(weights));
  std::vector<Tensor> var_grads;
  for (Variable* v : layer.variables()) var_grads.push_back(v->gradient);

  const float eps = 1e-2f;
  auto numeric = [&](float& cell) {
    const float saved = cell;
    cell = saved + eps;
    const double plus = Objective(layer, x, weights);
    cell = saved - eps;
    const double minus = Objective(layer, x, weights);
    cell = saved;
    return (plus - minus) / (2.0 * eps);
  };
  REQUIRE(input_grad.shape() == x.shape());
  for (std::int64_t i = 0; i < x.size(); i += std::max<std::int64_t>(1, x.size() / 40)) {
    CheckClose(input_grad.data()[i], numeric(x.data()[i]),
               layer.name() + " input " + std::to_string(i));
  }
  auto vars = layer.variables();
  for (std::size_t v = 0; v < vars.size(); ++v) {
    Tensor& value = vars[v]->value;
    for (std::int64_t i = 0; i < value.size(); i += std::max<std::int64_t>(1, value.size() / 40)) {
      CheckClose(var_grads[v].data()[i], numeric(value.data()[i]),
                 vars[v]->name + " " + std::to_string(i));
    }
  }
}

const Tensor& Ok(const absl::StatusOr<const Tensor*>& result) {
  REQUIRE_MESSAGE(result.ok(), result.status().ToString());
  return **result;
}

}  // namespace taas::nn::testing
