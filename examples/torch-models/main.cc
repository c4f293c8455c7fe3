// fashion-mnist-torch: the LibTorch models of taas/torch_models (a ResNet-style CNN, an LSTM) on
// Fashion-MNIST, as one trainer binary that runs as PS, worker, chief or evaluator from TF_CONFIG
// (see the job*.yaml beside it). Model arguments after `--`: taas/torch_models/trainer.h.
#include "taas/torch_models/trainer.h"

int main(int argc, char** argv) {
  return taas::RunMain<taas::torch_models::TorchTrainer>(argc, argv);
}
