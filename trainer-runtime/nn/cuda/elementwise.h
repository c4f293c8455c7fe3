// The engine's own CUDA kernels (elementwise.cu): element-wise ops, the loss, a deterministic sum
// and the optimizers' update rules; everything else is cuBLAS and cuDNN. Each function launches
// grid-stride kernels on `stream` and returns the launch's error; `n` counts elements (0 launches
// nothing). Includes CUDA's headers: private to trainer-runtime/nn/cuda/.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace taas::nn::cuda {

// y[r, c] += bias[c] over rows x cols, then max(y, 0) when `relu`.
cudaError_t AddBias(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu,
                    cudaStream_t stream);
// x[i] = value.
cudaError_t Fill(float* x, float value, std::int64_t n, cudaStream_t stream);
// y = max(x, 0).
cudaError_t Relu(const float* x, float* y, std::int64_t n, cudaStream_t stream);
// out = y > 0 ? dy : 0.
cudaError_t ReluMask(const float* y, const float* dy, float* out, std::int64_t n,
                     cudaStream_t stream);
// mask = (uniform(seed, i) < rate) ? 0 : 1 / (1 - rate); y = x * mask. The uniform is a hash of
// the seed and the index (SplitMix64), so the same seed gives the same mask on any device.
cudaError_t Dropout(const float* x, float rate, std::uint64_t seed, float* mask, float* y,
                    std::int64_t n, cudaStream_t stream);
// out = a * b.
cudaError_t Multiply(const float* a, const float* b, float* out, std::int64_t n,
                     cudaStream_t stream);
// y += alpha * x.
cudaError_t Axpy(float alpha, const float* x, float* y, std::int64_t n, cudaStream_t stream);

// Per row of logits [rows, classes] with labels (as floats, exact for any class count below
// 2^24): grad = (softmax - onehot) / rows, row_loss = -log softmax[label] (in double),
// row_correct = 1 when the first largest logit is the label's, else 0.
cudaError_t SoftmaxCrossEntropy(const float* logits, const float* labels, std::int64_t rows,
                                std::int64_t classes, float* grad, double* row_loss,
                                float* row_correct, cudaStream_t stream);

// One thread adds the rows' results in row order (the same sum on every run), on the device:
// stats[0] = sum(row_loss) / rows, stats[1] = the correct rows, stats[2] = their fraction; zeros
// for no rows.
cudaError_t LossStats(const double* row_loss, const float* row_correct, std::int64_t rows,
                      float* stats, cudaStream_t stream);

// kReduceBlocks partial sums of x^2 (in double) into `partials`, each a fixed share of the
// elements, then one thread adds them in order and total[0] += scale * their sum: the same sum
// on every run, left on the device.
inline constexpr int kReduceBlocks = 256;
cudaError_t AddSumOfSquares(const float* x, std::int64_t n, float scale, double* partials,
                            float* total, cudaStream_t stream);

// The update rules of optimizer.cc, element for element.
cudaError_t SgdUpdate(float lr, float* var, const float* grad, std::int64_t n, cudaStream_t stream);
cudaError_t MomentumUpdate(float lr, float momentum, bool nesterov, float* var, const float* grad,
                           float* accum, std::int64_t n, cudaStream_t stream);
cudaError_t AdamUpdate(float lr_t, float beta1, float beta2, float epsilon, float* var,
                       const float* grad, float* m, float* v, std::int64_t n, cudaStream_t stream);
// `momentum_slot` and `average_grad` null when RMSprop keeps no such slot.
cudaError_t RmsPropUpdate(float lr, float rho, float momentum, float epsilon, float* var,
                          const float* grad, float* velocity, float* momentum_slot,
                          float* average_grad, std::int64_t n, cudaStream_t stream);
cudaError_t AdagradUpdate(float lr, float offset, float* var, const float* grad, float* accum,
                          std::int64_t n, cudaStream_t stream);
cudaError_t DecayUpdate(float rate, float* var, std::int64_t n, cudaStream_t stream);

// Clipping by global norm, in three steps that never leave the device: AddSquares for each
// tensor (kReduceBlocks partials in double, then one thread adds them in order to total[0], which
// the first tensor's call starts from zero), ClipScale (scale[0] = clip_norm / max(norm,
// clip_norm) with norm = sqrt(total[0]), NaN when it is not finite), then ScaleBy for each tensor
// (x *= scale[0]): the same sum on every run.
cudaError_t AddSquares(const float* x, std::int64_t n, bool first, double* partials, double* total,
                       cudaStream_t stream);
cudaError_t ClipScale(const double* total, float clip_norm, float* scale, cudaStream_t stream);
cudaError_t ScaleBy(const float* scale, float* x, std::int64_t n, cudaStream_t stream);

}  // namespace taas::nn::cuda
