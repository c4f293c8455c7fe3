#include "taas/tensor/initializers.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace taas {
namespace {

void FillUniform(Tensor& tensor, double low, double high, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  for (float& value : tensor.values()) value = static_cast<float>(uniform(rng));
}

void FillNormal(Tensor& tensor, double mean, double stddev, bool truncated, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (float& value : tensor.values()) {
    double draw = normal(rng);
    while (truncated && std::abs(draw) > 2.0) draw = normal(rng);
    value = static_cast<float>(mean + draw * stddev);
  }
}

// Keras's fans (initializers.h), for a tensor with at least one element.
struct Fans {
  std::int64_t in = 1, out = 1;
};
Fans FansOf(const Shape& shape) {
  if (shape.empty()) return {};
  if (shape.size() == 1) return {shape[0], shape[0]};
  std::int64_t receptive = 1;
  for (std::size_t i = 0; i + 2 < shape.size(); ++i) receptive *= shape[i];
  return {receptive * shape[shape.size() - 2], receptive * shape.back()};
}

// Keras's VarianceScaling, mode fan_in (scale 1: LeCun, 2: He) or fan_avg (Glorot, scale 1).
void FillVarianceScaling(Tensor& tensor, double scale, double n, bool uniform, std::uint64_t seed) {
  if (uniform) {
    const double limit = std::sqrt(3.0 * scale / n);
    FillUniform(tensor, -limit, limit, seed);
  } else {
    // The standard deviation of a unit normal truncated at +-2 is 0.8796...: dividing by it keeps
    // the variance at scale / n.
    FillNormal(tensor, 0.0, std::sqrt(scale / n) / 0.87962566103423978, true, seed);
  }
}

std::string Number(float value) {
  std::string text = std::to_string(value);
  // to_string writes 6 decimals ("-1.000000"); the trailing zeros say nothing.
  if (text.find('.') != std::string::npos && std::isfinite(value)) {
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

absl::Status CheckFinite(const char* field, float value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string(field) + " must be a finite number, got " +
                                    Number(value));
}

}  // namespace

void GlorotUniform(Tensor& tensor, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  FillUniform(tensor, -limit, limit, seed);
}

void TruncatedNormal(Tensor& tensor, float stddev, std::uint64_t seed) {
  FillNormal(tensor, 0.0, stddev, true, seed);
}

void Constant(Tensor& tensor, float value) {
  std::fill(tensor.values().begin(), tensor.values().end(), value);
}

Initializer Initializer::WithSeed(std::uint64_t fixed_seed) const {
  Initializer copy = *this;
  copy.seed = fixed_seed;
  return copy;
}

absl::Status Initializer::Validate() const {
  switch (kind) {
    case Kind::kConstant:
      return CheckFinite("value", value);
    case Kind::kRandomUniform:
      TAAS_RETURN_IF_ERROR(CheckFinite("minval", minval));
      TAAS_RETURN_IF_ERROR(CheckFinite("maxval", maxval));
      if (!(minval < maxval)) {
        return absl::InvalidArgumentError("maxval must be > minval, got minval " + Number(minval) +
                                          " and maxval " + Number(maxval));
      }
      return absl::OkStatus();
    case Kind::kRandomNormal:
    case Kind::kTruncatedNormal:
      TAAS_RETURN_IF_ERROR(CheckFinite("mean", mean));
      if (!(std::isfinite(stddev) && stddev > 0.0f)) {
        return absl::InvalidArgumentError("stddev must be a finite number > 0, got " +
                                          Number(stddev));
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();  // no parameters
  }
}

void Initializer::Fill(Tensor& tensor, std::uint64_t default_seed) const {
  if (absl::Status status = Validate(); !status.ok()) {
    throw std::invalid_argument(std::string(InitializerName(kind)) + ": " +
                                std::string(status.message()));
  }
  const std::uint64_t draw_seed = seed.value_or(default_seed);
  const Fans fans = FansOf(tensor.shape());
  const double fan_in = static_cast<double>(fans.in);
  const double fan_avg = static_cast<double>(fans.in + fans.out) / 2.0;
  if (tensor.size() == 0) return;  // every fan is >= 1 below
  switch (kind) {
    case Kind::kZeros:
      return Constant(tensor, 0.0f);
    case Kind::kOnes:
      return Constant(tensor, 1.0f);
    case Kind::kConstant:
      return Constant(tensor, value);
    case Kind::kRandomUniform:
      return FillUniform(tensor, minval, maxval, draw_seed);
    case Kind::kRandomNormal:
      return FillNormal(tensor, mean, stddev, false, draw_seed);
    case Kind::kTruncatedNormal:
      return FillNormal(tensor, mean, stddev, true, draw_seed);
    case Kind::kGlorotUniform:
      // The layers' default since before Initializer: the same call keeps their values.
      return GlorotUniform(tensor, fans.in, fans.out, draw_seed);
    case Kind::kGlorotNormal:
      return FillVarianceScaling(tensor, 1.0, fan_avg, false, draw_seed);
    case Kind::kHeUniform:
      return FillVarianceScaling(tensor, 2.0, fan_in, true, draw_seed);
    case Kind::kHeNormal:
      return FillVarianceScaling(tensor, 2.0, fan_in, false, draw_seed);
    case Kind::kLecunUniform:
      return FillVarianceScaling(tensor, 1.0, fan_in, true, draw_seed);
    case Kind::kLecunNormal:
      return FillVarianceScaling(tensor, 1.0, fan_in, false, draw_seed);
  }
}

const char* InitializerName(Initializer::Kind kind) {
  using Kind = Initializer::Kind;
  switch (kind) {
    case Kind::kZeros:
      return "zeros";
    case Kind::kOnes:
      return "ones";
    case Kind::kConstant:
      return "constant";
    case Kind::kRandomUniform:
      return "random_uniform";
    case Kind::kRandomNormal:
      return "random_normal";
    case Kind::kTruncatedNormal:
      return "truncated_normal";
    case Kind::kGlorotUniform:
      return "glorot_uniform";
    case Kind::kGlorotNormal:
      return "glorot_normal";
    case Kind::kHeUniform:
      return "he_uniform";
    case Kind::kHeNormal:
      return "he_normal";
    case Kind::kLecunUniform:
      return "lecun_uniform";
    case Kind::kLecunNormal:
      return "lecun_normal";
  }
  return "unknown";
}

namespace initializers {

using Kind = Initializer::Kind;
Initializer Zeros() { return {.kind = Kind::kZeros}; }
Initializer Ones() { return {.kind = Kind::kOnes}; }
Initializer Constant(float value) { return {.kind = Kind::kConstant, .value = value}; }
Initializer RandomUniform(float minval, float maxval) {
  return {.kind = Kind::kRandomUniform, .minval = minval, .maxval = maxval};
}
Initializer RandomNormal(float stddev, float mean) {
  return {.kind = Kind::kRandomNormal, .mean = mean, .stddev = stddev};
}
Initializer TruncatedNormal(float stddev, float mean) {
  return {.kind = Kind::kTruncatedNormal, .mean = mean, .stddev = stddev};
}
Initializer GlorotUniform() { return {.kind = Kind::kGlorotUniform}; }
Initializer GlorotNormal() { return {.kind = Kind::kGlorotNormal}; }
Initializer HeUniform() { return {.kind = Kind::kHeUniform}; }
Initializer HeNormal() { return {.kind = Kind::kHeNormal}; }
Initializer LecunUniform() { return {.kind = Kind::kLecunUniform}; }
Initializer LecunNormal() { return {.kind = Kind::kLecunNormal}; }

}  // namespace initializers
}  // namespace taas
