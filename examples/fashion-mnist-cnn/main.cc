// fashion-mnist-cnn: the Keras ConvNet (Conv32-Pool-Conv64-Pool-Conv64-Dense64-Dense10, Adam)
// on Fashion-MNIST, as one trainer binary that runs as PS, worker, chief or evaluator from
// TF_CONFIG (see job.yaml). Model arguments after `--` are listed in
// taas/fashion_mnist/trainer.h.
#include "taas/fashion_mnist/trainer.h"

namespace {

class FashionMnistCnn final : public taas::fashion_mnist::FashionMnistTrainer {
 public:
  FashionMnistCnn() : FashionMnistTrainer("cnn") {}
};

}  // namespace

int main(int argc, char** argv) { return taas::RunMain<FashionMnistCnn>(argc, argv); }
