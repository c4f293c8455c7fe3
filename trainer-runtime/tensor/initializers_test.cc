#include "taas/tensor/initializers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace taas {
namespace {

std::vector<float> Values(const Tensor& tensor) {
  return {tensor.values().begin(), tensor.values().end()};
}

struct Moments {
  double mean = 0, stddev = 0, max_abs = 0;
};
Moments MomentsOf(const Tensor& tensor) {
  Moments m;
  for (float v : tensor.values()) m.mean += v;
  m.mean /= static_cast<double>(tensor.size());
  for (float v : tensor.values()) {
    m.stddev += (v - m.mean) * (v - m.mean);
    m.max_abs = std::max(m.max_abs, std::abs(static_cast<double>(v)));
  }
  m.stddev = std::sqrt(m.stddev / static_cast<double>(tensor.size()));
  return m;
}

// Layers' defaults must not change a single value: the kinds the layers and the Fashion-MNIST
// models used before Initializer existed fill exactly as the old calls did.
TEST_CASE("glorot_uniform and truncated_normal fill as the fill functions do") {
  Tensor expected({10, 20}), got({10, 20});
  GlorotUniform(expected, 10, 20, 42);
  initializers::GlorotUniform().Fill(got, 42);
  CHECK(Values(got) == Values(expected));

  // A convolution kernel [kh, kw, in, out]: fans are kh * kw * in and kh * kw * out.
  Tensor conv_expected({3, 3, 2, 4}), conv_got({3, 3, 2, 4});
  GlorotUniform(conv_expected, 18, 36, 7);
  initializers::GlorotUniform().Fill(conv_got, 7);
  CHECK(Values(conv_got) == Values(conv_expected));

  TruncatedNormal(expected, 0.1f, 3);
  initializers::TruncatedNormal(0.1f).Fill(got, 3);
  CHECK(Values(got) == Values(expected));
}

TEST_CASE("the seed is the caller's unless the initialiser fixes one") {
  Tensor a({100}), b({100}), c({100});
  initializers::HeNormal().Fill(a, 1);
  initializers::HeNormal().Fill(b, 1);
  CHECK(Values(a) == Values(b));
  initializers::HeNormal().Fill(b, 2);
  CHECK(Values(a) != Values(b));
  initializers::HeNormal().WithSeed(9).Fill(b, 1);
  initializers::HeNormal().WithSeed(9).Fill(c, 2);
  CHECK(Values(b) == Values(c));
  CHECK(Values(a) != Values(b));
}

TEST_CASE("constant kinds") {
  Tensor t({2, 3});
  initializers::Ones().Fill(t, 0);
  CHECK(Values(t) == std::vector<float>(6, 1.0f));
  initializers::Constant(0.25f).Fill(t, 0);
  CHECK(Values(t) == std::vector<float>(6, 0.25f));
  initializers::Zeros().Fill(t, 0);
  CHECK(Values(t) == std::vector<float>(6, 0.0f));
  Initializer defaulted;  // a default Initializer is zeros
  CHECK(defaulted.kind == Initializer::Kind::kZeros);
}

// Keras's formulas, checked on enough draws that the sample moments are within a few percent.
TEST_CASE("variance scaling kinds have Keras's bounds and spread") {
  const std::int64_t fan_in = 200, fan_out = 50;
  Tensor t({fan_in, fan_out});
  auto spread = [&](const Initializer& init) {
    init.Fill(t, 5);
    return MomentsOf(t);
  };
  // Bounds get a relative 1e-6: a draw just below a bound may round up to it as a float.
  const double he_limit = std::sqrt(6.0 / fan_in), lecun_limit = std::sqrt(3.0 / fan_in);
  const double slack = 1.0 + 1e-6;
  Moments m = spread(initializers::HeUniform());
  CHECK(m.max_abs <= he_limit * slack);
  CHECK(m.stddev == doctest::Approx(he_limit / std::sqrt(3.0)).epsilon(0.03));
  m = spread(initializers::LecunUniform());
  CHECK(m.max_abs <= lecun_limit * slack);
  CHECK(m.stddev == doctest::Approx(lecun_limit / std::sqrt(3.0)).epsilon(0.03));
  m = spread(initializers::HeNormal());
  CHECK(m.stddev == doctest::Approx(std::sqrt(2.0 / fan_in)).epsilon(0.03));
  CHECK(m.max_abs <= 2 * std::sqrt(2.0 / fan_in) / 0.87962566103423978 * slack);
  m = spread(initializers::LecunNormal());
  CHECK(m.stddev == doctest::Approx(std::sqrt(1.0 / fan_in)).epsilon(0.03));
  m = spread(initializers::GlorotNormal());
  CHECK(m.stddev == doctest::Approx(std::sqrt(2.0 / (fan_in + fan_out))).epsilon(0.03));
  m = spread(initializers::GlorotUniform());
  CHECK(m.max_abs <= std::sqrt(6.0 / (fan_in + fan_out)) * slack);
}

TEST_CASE("random kinds use their parameters") {
  Tensor t({20000});
  initializers::RandomNormal(0.5f, 3.0f).Fill(t, 1);
  Moments m = MomentsOf(t);
  CHECK(m.mean == doctest::Approx(3.0).epsilon(0.01));
  CHECK(m.stddev == doctest::Approx(0.5).epsilon(0.03));
  CHECK(m.max_abs > 3.0 + 2 * 0.5);  // not truncated: some draws lie beyond 2 stddev

  initializers::TruncatedNormal(0.5f, -1.0f).Fill(t, 1);
  m = MomentsOf(t);
  CHECK(m.mean == doctest::Approx(-1.0).epsilon(0.01));
  for (float v : t.values()) CHECK(std::abs(v + 1.0f) <= 1.0f + 1e-6f);

  initializers::RandomUniform(2.0f, 3.0f).Fill(t, 1);
  for (float v : t.values()) {
    CHECK(v >= 2.0f);
    CHECK(v <= 3.0f);
  }
  CHECK(MomentsOf(t).mean == doctest::Approx(2.5).epsilon(0.01));
}

TEST_CASE("an empty tensor is filled with nothing, whatever the kind") {
  Tensor empty({0, 5});
  initializers::HeNormal().Fill(empty, 1);
  initializers::GlorotUniform().Fill(empty, 1);
  CHECK(empty.size() == 0);
}

TEST_CASE("bad parameters name the parameter; Fill refuses them") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto message = [](const Initializer& init) { return std::string(init.Validate().message()); };
  CHECK(initializers::TruncatedNormal(-0.1f).Validate().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(message(initializers::TruncatedNormal(-0.1f)) ==
        "stddev must be a finite number > 0, got -0.1");
  CHECK(message(initializers::RandomNormal(0.0f)).find("stddev") == 0);
  CHECK(message(initializers::RandomNormal(nan)).find("stddev") == 0);
  CHECK(message(initializers::RandomNormal(1.0f, nan)).find("mean must be a finite") == 0);
  CHECK(message(initializers::Constant(inf)).find("value must be a finite") == 0);
  CHECK(message(initializers::RandomUniform(1.0f, 1.0f)) ==
        "maxval must be > minval, got minval 1 and maxval 1");
  CHECK(message(initializers::RandomUniform(nan, 1.0f)).find("minval") == 0);
  // Parameters a kind does not read are not checked.
  Initializer glorot = initializers::GlorotUniform();
  glorot.stddev = -1.0f;
  CHECK(glorot.Validate().ok());

  Tensor t({4});
  CHECK_THROWS_WITH_AS(initializers::TruncatedNormal(-1.0f).Fill(t, 0),
                       "truncated_normal: stddev must be a finite number > 0, got -1",
                       std::invalid_argument);
}

TEST_CASE("Keras's names") {
  CHECK(std::string(InitializerName(Initializer::Kind::kGlorotUniform)) == "glorot_uniform");
  CHECK(std::string(InitializerName(Initializer::Kind::kTruncatedNormal)) == "truncated_normal");
  CHECK(std::string(InitializerName(Initializer::Kind::kLecunNormal)) == "lecun_normal");
}

}  // namespace
}  // namespace taas
