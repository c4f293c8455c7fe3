// Weight initialisers with explicit seeds, as Keras/TF define them: the fill functions the layers
// and tests call directly, and `Initializer`, the value a layer's options carry to name one
// (`nn::DenseOptions::kernel_initializer = initializers::HeNormal()`).
#pragma once

#include <cstdint>
#include <optional>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"

namespace taas {

// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)) (Keras `glorot_uniform`).
void GlorotUniform(Tensor& tensor, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed);
// Normal(0, stddev) with draws beyond two standard deviations redrawn (`tf.truncated_normal`).
void TruncatedNormal(Tensor& tensor, float stddev, std::uint64_t seed);
void Constant(Tensor& tensor, float value);
inline void Zeros(Tensor& tensor) { Constant(tensor, 0.0f); }

// One of Keras's initialisers (tf.keras.initializers) with its parameters: a small value made by
// the factories in `taas::initializers` below, e.g. `initializers::TruncatedNormal(0.1f)`.
//
// Fans are Keras's: for a [in, out] kernel fan_in = in and fan_out = out; for a convolution kernel
// [kh, kw, in, out] both are multiplied by kh * kw; for a 1-D tensor [n] both are n; a fan of 0
// counts as 1. The variance-scaling kinds draw, with n = fan_in (He, LeCun) or the mean of the
// fans (Glorot) and scale 2 (He) or 1 (Glorot, LeCun):
//   *Uniform: uniform in [-sqrt(3 scale / n), sqrt(3 scale / n)]
//   *Normal:  truncated normal (redrawn beyond 2 stddev), stddev = sqrt(scale / n) / 0.8796...
//             (Keras's correction, so the truncated draws keep the variance scale / n).
//
// Seeds: every random kind draws from a std::mt19937_64 seeded with `seed` when set, else with the
// seed the layer passes (the hash of the variable's name, "dense1/kernel"), so a model builds the
// same values on every replica and every run. Values are reproducible with one standard library.
struct Initializer {
  enum class Kind {
    kZeros,            // "zeros"
    kOnes,             // "ones"
    kConstant,         // "constant": `value`
    kRandomUniform,    // "random_uniform": uniform in [minval, maxval)
    kRandomNormal,     // "random_normal": Normal(mean, stddev), not truncated
    kTruncatedNormal,  // "truncated_normal": Normal(mean, stddev), redrawn beyond 2 stddev
    kGlorotUniform,    // "glorot_uniform" (Xavier)
    kGlorotNormal,     // "glorot_normal"
    kHeUniform,        // "he_uniform"
    kHeNormal,         // "he_normal"
    kLecunUniform,     // "lecun_uniform"
    kLecunNormal,      // "lecun_normal"
  };

  Kind kind = Kind::kZeros;
  // Parameters; each kind reads only those its comment above names. Defaults are Keras's.
  float value = 0.0f;     // kConstant: finite
  float mean = 0.0f;      // kRandomNormal, kTruncatedNormal: finite
  float stddev = 0.05f;   // kRandomNormal, kTruncatedNormal: finite and > 0
  float minval = -0.05f;  // kRandomUniform: finite and < maxval
  float maxval = 0.05f;   // kRandomUniform: finite
  std::optional<std::uint64_t> seed = std::nullopt;  // unset: the seed the caller of Fill gives

  // The same initialiser with a fixed seed (Keras's `seed` argument).
  Initializer WithSeed(std::uint64_t fixed_seed) const;

  // InvalidArgument naming the parameter, what it must be and what it is ("stddev must be a finite
  // number > 0, got -1"); OK for every parameter a kind does not read.
  absl::Status Validate() const;

  // Fills `tensor` (a host tensor) with fans from its shape (above), drawing with `seed` unless
  // this initialiser has its own. Throws std::invalid_argument with Validate()'s message when the
  // parameters are invalid (a programming error, as a negative Tensor shape is): callers that take
  // parameters from input call Validate() first.
  void Fill(Tensor& tensor, std::uint64_t default_seed) const;
};

// Keras's name of `kind` ("glorot_uniform"), for messages and docs.
const char* InitializerName(Initializer::Kind kind);

// Factories named as Keras's classes. The normal kinds take the standard deviation first (the
// parameter one sets; Keras's order is mean, stddev); `WithSeed` fixes the seed.
namespace initializers {

Initializer Zeros();
Initializer Ones();
Initializer Constant(float value);
Initializer RandomUniform(float minval = -0.05f, float maxval = 0.05f);
Initializer RandomNormal(float stddev = 0.05f, float mean = 0.0f);
Initializer TruncatedNormal(float stddev = 0.05f, float mean = 0.0f);
Initializer GlorotUniform();
Initializer GlorotNormal();
Initializer HeUniform();
Initializer HeNormal();
Initializer LecunUniform();
Initializer LecunNormal();

}  // namespace initializers
}  // namespace taas
