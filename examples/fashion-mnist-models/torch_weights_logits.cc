// The test tool of torch_weights_test.py: warm-starts the example MLP (784-500-10) from a
// safetensors file in PyTorch's names and layouts (nn.Linear: fc1.weight [500, 784], fc1.bias,
// fc2.weight [10, 500], fc2.bias), through taas::WarmStartVariables with a name map and the
// kernels transposed, then writes the logits of the first N Fashion-MNIST test images (raw
// float32, [N, 10]) and a taas checkpoint of the warm-started variables.
//
// Usage: fashion-mnist-torch-weights WEIGHTS.safetensors LOGITS.f32 MODEL_DIR N
// A warm start that fails prints its error and exits 1.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "taas/checkpoint/checkpoint.h"
#include "taas/data/idx.h"
#include "taas/fashion_mnist/models.h"
#include "taas/runtime/warm_start.h"

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s WEIGHTS.safetensors LOGITS.f32 MODEL_DIR N\n", argv[0]);
    return 2;
  }
  const std::string weights = argv[1], logits_path = argv[2], model_dir = argv[3];
  const std::int64_t n = std::atoll(argv[4]);
  taas::fashion_mnist::Mlp mlp;
  auto copied =
      taas::WarmStartVariables({.ckpt_to_initialize_from = weights,
                                .var_name_to_prev_var_name = {{"hidden/kernel", "fc1.weight"},
                                                              {"hidden/bias", "fc1.bias"},
                                                              {"logits/kernel", "fc2.weight"},
                                                              {"logits/bias", "fc2.bias"}},
                                .vars_to_transpose = {".*/kernel$"}},
                               mlp.variables());
  if (!copied.ok()) return Fail(copied.status());

  auto test = taas::data::LoadMnistSplit(taas::data::kFashionMnistDir, "test");
  if (!test.ok()) return Fail(test.status());
  if (n <= 0 || n > test->count) return Fail(absl::InvalidArgumentError("N out of range"));
  const std::int64_t pixels = test->rows * test->cols;
  taas::Tensor images({n, pixels});
  for (std::int64_t i = 0; i < n * pixels; ++i) {
    images.data()[i] = static_cast<float>(test->pixels[static_cast<std::size_t>(i)]) / 255.0f;
  }
  auto out = mlp.network().Forward(images, /*training=*/false);
  if (!out.ok()) return Fail(out.status());
  std::ofstream file(logits_path, std::ios::binary);
  file.write(reinterpret_cast<const char*>((*out)->data()),
             static_cast<std::streamsize>((*out)->size() * sizeof(float)));
  if (!file) return Fail(absl::InternalError("cannot write " + logits_path));

  std::vector<taas::checkpoint::Entry> entries;
  for (const taas::Variable* v : mlp.variables()) {
    auto values = v->value.values();
    entries.push_back({v->name, {values.begin(), values.end()}, v->value.shape()});
  }
  auto saved = taas::checkpoint::Save(model_dir, 1, entries, 1);
  if (!saved.ok()) return Fail(saved.status());
  return 0;
}
