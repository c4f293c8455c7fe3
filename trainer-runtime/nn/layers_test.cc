#include "taas/nn/layers.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "taas/tensor/initializers.h"
#include "taas/nn/sequential.h"

namespace taas::nn {
namespace {

Tensor Random(const Shape& shape, std::uint64_t seed, float scale = 1.0f) {
  Tensor t(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (float& v : t.values()) v = uniform(rng);
  return t;
}

// f = sum(layer(x) * weights) in double, so finite differences are accurate.
double Objective(Layer& layer, const Tensor& x, const Tensor& weights) {
  const Tensor& y = layer.Forward(x, true);
  double sum = 0.0;
  for (std::int64_t i = 0; i < y.size(); ++i)
    sum += static_cast<double>(y.data()[i]) * weights.data()[i];
  return sum;
}

void CheckClose(double analytic, double numeric, const std::string& what) {
  INFO(what << " analytic " << analytic << " numeric " << numeric);
  CHECK(std::abs(analytic - numeric) <= 2e-2 * std::max(1.0, std::abs(numeric)));
}

// Compares the layer's input and variable gradients with central differences.
void GradientCheck(Layer& layer, Tensor x, std::uint64_t seed) {
  const Tensor& y0 = layer.Forward(x, true);
  Tensor weights = Random(y0.shape(), seed + 1);
  Tensor input_grad = layer.Backward(weights);
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

TEST_CASE("compute threads can be set per calling thread") {
  SetComputeThreads(1);
  CHECK(ComputeThreads() == 1);
  SetComputeThreads(0);
  CHECK(ComputeThreads() >= 1);
}

TEST_CASE("dense forward matches a hand computation") {
  Dense dense("d", 2, 2, Activation::kRelu);
  float w[] = {1, -1, 2, 0.5f};
  std::copy_n(w, 4, dense.kernel().value.data());
  dense.bias().value.data()[0] = 0.5f;
  Tensor x({1, 2}, std::vector<float>{1.0f, 2.0f});
  const Tensor& y = dense.Forward(x, false);
  CHECK(y.data()[0] == doctest::Approx(5.5));  // 1*1 + 2*2 + 0.5
  CHECK(y.data()[1] == doctest::Approx(0.0));  // relu(-1 + 1)
}

TEST_CASE("dense gradients match finite differences") {
  Dense dense("dense", 5, 4, Activation::kNone);
  GradientCheck(dense, Random({3, 5}, 1), 2);
  Dense relu("dense_relu", 5, 4, Activation::kRelu);
  relu.bias().value.data()[1] = 0.3f;
  GradientCheck(relu, Random({3, 5}, 3), 4);
}

TEST_CASE("conv2d forward: a 2x2 kernel of ones sums windows") {
  ComputeContext context;
  Conv2D conv("c", context, 1, 1, 2, 1, Padding::kValid, Activation::kNone);
  Constant(conv.kernel().value, 1.0f);
  Tensor x({1, 3, 3, 1}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor& y = conv.Forward(x, false);
  REQUIRE(y.shape() == Shape{1, 2, 2, 1});
  CHECK(y.data()[0] == doctest::Approx(12));
  CHECK(y.data()[3] == doctest::Approx(28));
  Conv2D same("s", context, 1, 1, 3, 2, Padding::kSame, Activation::kNone);
  Constant(same.kernel().value, 1.0f);
  const Tensor& z = same.Forward(x, false);
  REQUIRE(z.shape() == Shape{1, 2, 2, 1});
  CHECK(z.data()[0] == doctest::Approx(12));  // TF same: pad 1 on each side for 3 -> 2
  CHECK(z.data()[3] == doctest::Approx(28));
}

TEST_CASE("conv2d gradients match finite differences (valid, same, stride, relu)") {
  ComputeContext context;
  Conv2D valid("conv_valid", context, 3, 4, 3, 1, Padding::kValid, Activation::kNone);
  GradientCheck(valid, Random({2, 6, 6, 3}, 5), 6);
  Conv2D same("conv_same", context, 2, 3, 3, 2, Padding::kSame, Activation::kNone);
  GradientCheck(same, Random({2, 5, 5, 2}, 7), 8);
  Conv2D relu("conv_relu", context, 2, 3, 3, 1, Padding::kValid, Activation::kRelu);
  GradientCheck(relu, Random({1, 5, 5, 2}, 9), 10);
  CHECK(relu.ImplementationInfo().find("fwd:") != std::string::npos);
}

TEST_CASE("maxpool forward and gradients") {
  ComputeContext context;
  MaxPool2D pool("pool", context, 2, 2);
  Tensor x({1, 2, 2, 1}, std::vector<float>{1, 4, 3, 2});
  CHECK(pool.Forward(x, false).data()[0] == doctest::Approx(4));
  // Distinct values 0.05 apart, so a finite-difference step never changes a window's maximum.
  Tensor distinct({2, 5, 5, 3});
  for (std::int64_t i = 0; i < distinct.size(); ++i)
    distinct.data()[i] = 0.05f * static_cast<float>((i * 37) % distinct.size());
  MaxPool2D pool2("pool2", context, 2, 2);
  GradientCheck(pool2, distinct, 12);
}

TEST_CASE("relu, flatten and dropout") {
  ReLU relu("relu");
  GradientCheck(relu, Random({4, 7}, 13), 14);
  Flatten flatten("flatten");
  Tensor x = Random({2, 3, 3, 2}, 15);
  CHECK(flatten.Forward(x, true).shape() == Shape{2, 18});
  GradientCheck(flatten, x, 16);

  Dropout dropout("dropout", 0.5f, 17);
  Tensor ones({1, 1000});
  Constant(ones, 1.0f);
  const Tensor& kept = dropout.Forward(ones, true);
  int zeros = 0;
  for (float v : kept.values()) {
    CHECK((v == 0.0f || v == doctest::Approx(2.0)));
    zeros += v == 0.0f;
  }
  CHECK(zeros > 400);
  CHECK(zeros < 600);
  Tensor grad = dropout.Backward(ones);
  for (std::int64_t i = 0; i < 1000; ++i) CHECK(grad.data()[i] == kept.data()[i]);
  CHECK(dropout.Forward(ones, false).data()[0] == 1.0f);
}

TEST_CASE("softmax cross-entropy loss, accuracy and gradient") {
  SoftmaxCrossEntropy loss;
  Tensor logits({2, 3}, std::vector<float>{1, 2, 3, 0, 0, 0});
  std::vector<std::int32_t> labels = {2, 1};
  auto result = loss.Forward(logits, labels).value();
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  const double l1 = std::log(3.0);
  CHECK(result.loss == doctest::Approx((l0 + l1) / 2));
  CHECK(result.correct == 1);  // row 1 is a tie, argmax picks class 0
  // Finite differences of the mean loss.
  for (int i = 0; i < 6; ++i) {
    Tensor plus = logits, minus = logits;
    plus.data()[i] += 1e-2f;
    minus.data()[i] -= 1e-2f;
    SoftmaxCrossEntropy probe;
    const double numeric =
        (probe.Forward(plus, labels)->loss - probe.Forward(minus, labels)->loss) / 2e-2;
    CheckClose(loss.Backward().data()[i], numeric, "logit " + std::to_string(i));
  }
  // Labels are the batch's data: outside the classes, or not one per row, they are an error value.
  for (const std::vector<std::int32_t>& bad :
       {std::vector<std::int32_t>{3, 0}, {0, -1}, {0, 2147483647}, {0}}) {
    auto refused = loss.Forward(logits, bad);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(loss.Forward(logits, std::vector<std::int32_t>{3, 0}).status().message() ==
        "softmax_cross_entropy: label 3 at row 0 is outside [0, 3)");
}

TEST_CASE("l2 regularisation is scale * sum(w^2) / 2 with gradient scale * w") {
  Variable w{"w", Tensor({2}, std::vector<float>{1.0f, -2.0f}), Tensor({2})};
  CHECK(L2Loss({&w}, 0.1f) == doctest::Approx(0.25));
  AddL2Gradients({&w}, 0.1f);
  CHECK(w.gradient.data()[1] == doctest::Approx(-0.2));
}

TEST_CASE("initialisers are seeded and bounded") {
  Tensor a({1000}), b({1000});
  GlorotUniform(a, 10, 20, 42);
  GlorotUniform(b, 10, 20, 42);
  const float limit = std::sqrt(6.0f / 30.0f);
  for (std::int64_t i = 0; i < 1000; ++i) {
    CHECK(a.data()[i] == b.data()[i]);
    CHECK(std::abs(a.data()[i]) <= limit);
  }
  TruncatedNormal(a, 0.1f, 7);
  double sum_sq = 0;
  for (float v : a.values()) {
    CHECK(std::abs(v) <= 0.2f);
    sum_sq += v * v;
  }
  CHECK(std::sqrt(sum_sq / 1000) > 0.06);
  Zeros(a);
  CHECK(a.data()[999] == 0.0f);
}

TEST_CASE("sequential names variables uniquely and in order; first layer skips input grad") {
  ComputeContext context;
  Sequential model;
  model.Add(
      std::make_unique<Conv2D>("conv1", context, 1, 2, 3, 1, Padding::kValid, Activation::kRelu));
  model.Add(std::make_unique<Flatten>("flatten"));
  model.Add(std::make_unique<Dense>("dense1", 2 * 3 * 3, 3, Activation::kNone));
  auto vars = model.variables();
  REQUIRE(vars.size() == 4);
  CHECK(vars[0]->name == "conv1/kernel");
  CHECK(vars[1]->name == "conv1/bias");
  CHECK(vars[2]->name == "dense1/kernel");
  CHECK(vars[3]->name == "dense1/bias");
  Tensor x = Random({2, 5, 5, 1}, 21);
  const Tensor& logits = model.Forward(x, true);
  CHECK(logits.shape() == Shape{2, 3});
  Tensor grad = Random({2, 3}, 22);
  model.Backward(grad);
  double norm = 0;
  for (float g : vars[0]->gradient.values()) norm += g * g;
  CHECK(norm > 0);
}

TEST_CASE("a pool after a ReLU conv masks its small gradient instead: same gradients") {
  ComputeContext context;
  auto build = [&](Sequential& model) {
    auto& conv = model.Add(
        std::make_unique<Conv2D>("conv", context, 2, 3, 3, 1, Padding::kValid, Activation::kRelu));
    Constant(conv.bias().value, -0.3f);  // many windows entirely zero after the ReLU
    model.Add(std::make_unique<MaxPool2D>("pool", context, 2, 2));
    model.Add(std::make_unique<Flatten>("flatten"));
    model.Add(std::make_unique<Dense>("dense", 3 * 3 * 3, 2, Activation::kNone));
  };
  Sequential fused;
  build(fused);
  Tensor x = Random({2, 8, 8, 2}, 31);
  Tensor r = Random({2, 2}, 32);
  fused.Forward(x, true);
  fused.Backward(r);
  Tensor fused_grad = fused.variables()[0]->gradient;

  // The same layers driven one by one, so each applies its own ReLU mask.
  Conv2D conv("conv", context, 2, 3, 3, 1, Padding::kValid, Activation::kRelu);
  Constant(conv.bias().value, -0.3f);
  MaxPool2D pool("pool", context, 2, 2);
  Flatten flatten("flatten");
  Dense dense("dense", 27, 2, Activation::kNone);
  conv.set_input_gradient(false);
  dense.Forward(flatten.Forward(pool.Forward(conv.Forward(x, true), true), true), true);
  conv.Backward(pool.Backward(flatten.Backward(dense.Backward(r))));
  for (std::int64_t i = 0; i < fused_grad.size(); ++i) {
    CHECK(fused_grad.data()[i] == doctest::Approx(conv.kernel().gradient.data()[i]));
  }
  int zero_windows = 0;
  for (float v : pool.Forward(conv.Forward(x, true), true).values()) zero_windows += v == 0.0f;
  CHECK(zero_windows > 0);

  // And against finite differences through the whole network.
  // A small step: a kernel weight moves all 216 pre-activations, so a large one crosses kinks.
  Variable* kernel = fused.variables()[0];
  const float eps = 1e-3f;
  for (std::int64_t i = 0; i < kernel->value.size(); i += 5) {
    auto objective = [&] {
      const Tensor& y = fused.Forward(x, true);
      double sum = 0;
      for (std::int64_t k = 0; k < y.size(); ++k) sum += double(y.data()[k]) * r.data()[k];
      return sum;
    };
    const float saved = kernel->value.data()[i];
    kernel->value.data()[i] = saved + eps;
    const double plus = objective();
    kernel->value.data()[i] = saved - eps;
    const double minus = objective();
    kernel->value.data()[i] = saved;
    CheckClose(fused_grad.data()[i], (plus - minus) / (2 * eps), "kernel " + std::to_string(i));
  }
}

TEST_CASE("chunked conv+pool equals conv then pool, forward and backward") {
  ComputeContext context;
  auto conv = [&] {
    auto layer =
        std::make_unique<Conv2D>("conv", context, 2, 3, 3, 1, Padding::kValid, Activation::kRelu);
    Constant(layer->bias().value, -0.2f);
    return layer;
  };
  Sequential plain;
  plain.Add(conv());
  plain.Add(std::make_unique<MaxPool2D>("pool", context, 2, 2));
  ChunkedConvPool chunked(conv(), std::make_unique<MaxPool2D>("pool", context, 2, 2), 2);
  chunked.set_input_gradient(true);
  plain.layers()[0]->set_input_gradient(true);
  REQUIRE(chunked.variables().size() == 2);
  CHECK(chunked.variables()[0]->name == "conv/kernel");

  Tensor x = Random({5, 8, 8, 2}, 41);  // 5 = chunks of 2, 2 and 1
  const Tensor& expected = plain.Forward(x, true);
  const Tensor& actual = chunked.Forward(x, true);
  REQUIRE(actual.shape() == expected.shape());
  for (std::int64_t i = 0; i < actual.size(); ++i)
    CHECK(actual.data()[i] == doctest::Approx(expected.data()[i]));

  Tensor r = Random(expected.shape(), 42);
  const Tensor& plain_input_grad = plain.layers()[0]->Backward(plain.layers()[1]->Backward(r));
  const Tensor& chunked_input_grad = chunked.Backward(r);
  REQUIRE(chunked_input_grad.shape() == x.shape());
  for (std::int64_t i = 0; i < x.size(); ++i) {
    CHECK(chunked_input_grad.data()[i] == doctest::Approx(plain_input_grad.data()[i]));
  }
  for (int v = 0; v < 2; ++v) {
    const Tensor& want = plain.variables()[v]->gradient;
    const Tensor& got = chunked.variables()[v]->gradient;
    for (std::int64_t i = 0; i < want.size(); ++i)
      CHECK(got.data()[i] == doctest::Approx(want.data()[i]));
  }
}

}  // namespace
}  // namespace taas::nn
