// fashion-mnist-mlp: the 784-500-10 MLP (TensorFlow's classic MNIST tutorial network: ReLU, L2
// 1e-4, SGD with exponential decay, moving averages) on Fashion-MNIST, as one trainer binary that
// runs as PS, worker, chief or evaluator from TF_CONFIG (see job.yaml). Model arguments after `--`
// are listed in taas/fashion_mnist/trainer.h.
#include "taas/fashion_mnist/trainer.h"

namespace {

class FashionMnistMlp final : public taas::fashion_mnist::FashionMnistTrainer {
 public:
  FashionMnistMlp() : FashionMnistTrainer("mlp") {}
};

}  // namespace

int main(int argc, char** argv) { return taas::RunMain<FashionMnistMlp>(argc, argv); }
