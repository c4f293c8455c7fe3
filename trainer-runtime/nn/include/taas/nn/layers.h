// Every layer of taas::nn, for a model that wants them all: this header only includes the
// per-layer headers (one per layer, each with its options and initialisers documented); the
// contract all layers share is in layer.h.
#pragma once

#include "taas/nn/chunked_conv_pool.h"
#include "taas/nn/conv2d.h"
#include "taas/nn/dense.h"
#include "taas/nn/dropout.h"
#include "taas/nn/flatten.h"
#include "taas/nn/l2.h"
#include "taas/nn/layer.h"
#include "taas/nn/max_pool2d.h"
#include "taas/nn/relu.h"
#include "taas/nn/softmax_cross_entropy.h"
#include "taas/nn/target_losses.h"
