// Grid-stride loops: one launch shape for every size, each thread striding over the elements.
#include <algorithm>

#include "elementwise.h"

namespace taas::nn::cuda {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill an H100 (132 SMs) several times over; larger tensors stride.
constexpr std::int64_t kMaxBlocks = 4096;

int BlocksFor(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

__device__ std::int64_t First() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::int64_t Stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

__global__ void AddBiasKernel(float* y, const float* bias, std::int64_t n, std::int64_t cols,
                              bool relu) {
  for (std::int64_t i = First(); i < n; i += Stride()) {
    const float value = y[i] + bias[i % cols];
    y[i] = relu ? fmaxf(value, 0.0f) : value;
  }
}

__global__ void FillKernel(float* x, float value, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) x[i] = value;
}

__global__ void ReluKernel(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) y[i] = fmaxf(x[i], 0.0f);
}

__global__ void ReluMaskKernel(const float* y, const float* dy, float* out, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) out[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__device__ float Uniform(std::uint64_t seed, std::int64_t i) {
  std::uint64_t z = seed + static_cast<std::uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // 24 bits: exact in a float
}

__global__ void DropoutKernel(const float* x, float rate, float scale, std::uint64_t seed,
                              float* mask, float* y, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) {
    const float keep = Uniform(seed, i) < rate ? 0.0f : scale;
    mask[i] = keep;
    y[i] = x[i] * keep;
  }
}

__global__ void MultiplyKernel(const float* a, const float* b, float* out, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) out[i] = a[i] * b[i];
}

__global__ void AxpyKernel(float alpha, const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) y[i] += alpha * x[i];
}

// One thread per row: the models' rows have ten classes, far too few to share.
__global__ void SoftmaxCrossEntropyKernel(const float* logits, const float* labels,
                                          std::int64_t rows, std::int64_t classes, float* grad,
                                          double* row_loss, float* row_correct) {
  const float inv_n = 1.0f / static_cast<float>(rows);
  for (std::int64_t r = First(); r < rows; r += Stride()) {
    const float* z = logits + r * classes;
    float* g = grad + r * classes;
    const auto label = static_cast<std::int64_t>(labels[r]);
    std::int64_t argmax = 0;
    for (std::int64_t c = 1; c < classes; ++c) {
      if (z[c] > z[argmax]) argmax = c;
    }
    const float max = z[argmax];
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) {
      g[c] = expf(z[c] - max);
      sum += g[c];
    }
    row_loss[r] = log(sum) - static_cast<double>(z[label] - max);
    const auto inv_sum = static_cast<float>(1.0 / sum);
    for (std::int64_t c = 0; c < classes; ++c) g[c] = g[c] * inv_sum * inv_n;
    g[label] -= inv_n;
    row_correct[r] = argmax == label ? 1.0f : 0.0f;
  }
}

__global__ void LossStatsKernel(const double* row_loss, const float* row_correct, std::int64_t rows,
                                float* stats) {
  double loss = 0.0;
  float correct = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r) {
    loss += row_loss[r];
    correct += row_correct[r];
  }
  stats[0] = rows > 0 ? static_cast<float>(loss / static_cast<double>(rows)) : 0.0f;
  stats[1] = correct;
  stats[2] = rows > 0 ? correct / static_cast<float>(rows) : 0.0f;
}

__global__ void AddPartialsKernel(const double* partials, float scale, float* total) {
  double sum = 0.0;
  for (int b = 0; b < kReduceBlocks; ++b) sum += partials[b];
  total[0] += static_cast<float>(static_cast<double>(scale) * sum);
}

__global__ void SumOfSquaresKernel(const float* x, std::int64_t n, double* partials) {
  __shared__ double sums[kThreads];
  double sum = 0.0;
  for (std::int64_t i = First(); i < n; i += Stride()) sum += static_cast<double>(x[i]) * x[i];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
}

__global__ void SgdKernel(float lr, float* var, const float* grad, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) var[i] -= lr * grad[i];
}

__global__ void MomentumKernel(float lr, float momentum, bool nesterov, float* var,
                               const float* grad, float* accum, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) {
    const float a = momentum * accum[i] + grad[i];
    accum[i] = a;
    var[i] -= nesterov ? lr * (grad[i] + momentum * a) : lr * a;
  }
}

__global__ void AdamKernel(float lr_t, float beta1, float beta2, float epsilon, float* var,
                           const float* grad, float* m, float* v, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) {
    const float g = grad[i];
    const float m_i = beta1 * m[i] + (1.0f - beta1) * g;
    const float v_i = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = m_i;
    v[i] = v_i;
    var[i] -= lr_t * m_i / (sqrtf(v_i) + epsilon);
  }
}

__global__ void RmsPropKernel(float lr, float rho, float momentum, float epsilon, float* var,
                              const float* grad, float* velocity, float* momentum_slot,
                              float* average_grad, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) {
    const float g = grad[i];
    const float vel = rho * velocity[i] + (1.0f - rho) * (g * g);
    velocity[i] = vel;
    float denominator = vel + epsilon;
    if (average_grad != nullptr) {
      const float average = rho * average_grad[i] + (1.0f - rho) * g;
      average_grad[i] = average;
      denominator = vel - average * average + epsilon;
    }
    const float increment = lr * g / sqrtf(denominator);
    if (momentum_slot != nullptr) {
      const float m = momentum * momentum_slot[i] + increment;
      momentum_slot[i] = m;
      var[i] -= m;
    } else {
      var[i] -= increment;
    }
  }
}

__global__ void AdagradKernel(float lr, float offset, float* var, const float* grad, float* accum,
                              std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) {
    const float g = grad[i];
    const float a = accum[i] + g * g;
    accum[i] = a;
    var[i] -= lr * g / sqrtf(a + offset);
  }
}

__global__ void DecayKernel(float rate, float* var, std::int64_t n) {
  for (std::int64_t i = First(); i < n; i += Stride()) var[i] -= rate * var[i];
}

__global__ void AddToTotalKernel(const double* partials, bool first, double* total) {
  double sum = first ? 0.0 : total[0];
  for (int b = 0; b < kReduceBlocks; ++b) sum += partials[b];
  total[0] = sum;
}

__global__ void ClipScaleKernel(const double* total, float clip_norm, float* scale) {
  const double norm = sqrt(total[0]);
  const double clip = clip_norm;
  scale[0] = isfinite(norm) ? static_cast<float>(clip / fmax(norm, clip)) : nanf("");
}

__global__ void ScaleByKernel(const float* scale, float* x, std::int64_t n) {
  const float s = scale[0];
  for (std::int64_t i = First(); i < n; i += Stride()) x[i] *= s;
}

// Launches `kernel` over n elements (nothing for n == 0) and returns the launch's error.
template <typename Kernel, typename... Args>
cudaError_t Launch(Kernel kernel, std::int64_t n, cudaStream_t stream, Args... args) {
  if (n <= 0) return cudaSuccess;
  kernel<<<BlocksFor(n), kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

}  // namespace

cudaError_t AddBias(float* y, const float* bias, std::int64_t rows, std::int64_t cols, bool relu,
                    cudaStream_t stream) {
  return Launch(AddBiasKernel, rows * cols, stream, y, bias, rows * cols, cols, relu);
}

cudaError_t Fill(float* x, float value, std::int64_t n, cudaStream_t stream) {
  return Launch(FillKernel, n, stream, x, value, n);
}

cudaError_t Relu(const float* x, float* y, std::int64_t n, cudaStream_t stream) {
  return Launch(ReluKernel, n, stream, x, y, n);
}

cudaError_t ReluMask(const float* y, const float* dy, float* out, std::int64_t n,
                     cudaStream_t stream) {
  return Launch(ReluMaskKernel, n, stream, y, dy, out, n);
}

cudaError_t Dropout(const float* x, float rate, std::uint64_t seed, float* mask, float* y,
                    std::int64_t n, cudaStream_t stream) {
  return Launch(DropoutKernel, n, stream, x, rate, 1.0f / (1.0f - rate), seed, mask, y, n);
}

cudaError_t Multiply(const float* a, const float* b, float* out, std::int64_t n,
                     cudaStream_t stream) {
  return Launch(MultiplyKernel, n, stream, a, b, out, n);
}

cudaError_t Axpy(float alpha, const float* x, float* y, std::int64_t n, cudaStream_t stream) {
  return Launch(AxpyKernel, n, stream, alpha, x, y, n);
}

cudaError_t SoftmaxCrossEntropy(const float* logits, const float* labels, std::int64_t rows,
                                std::int64_t classes, float* grad, double* row_loss,
                                float* row_correct, cudaStream_t stream) {
  return Launch(SoftmaxCrossEntropyKernel, rows, stream, logits, labels, rows, classes, grad,
                row_loss, row_correct);
}

cudaError_t LossStats(const double* row_loss, const float* row_correct, std::int64_t rows,
                      float* stats, cudaStream_t stream) {
  LossStatsKernel<<<1, 1, 0, stream>>>(row_loss, row_correct, rows, stats);
  return cudaGetLastError();
}

cudaError_t AddSumOfSquares(const float* x, std::int64_t n, float scale, double* partials,
                            float* total, cudaStream_t stream) {
  // Always all blocks, so that every partial is written (zero for an empty tensor).
  SumOfSquaresKernel<<<kReduceBlocks, kThreads, 0, stream>>>(x, n, partials);
  if (const cudaError_t launched = cudaGetLastError(); launched != cudaSuccess) return launched;
  AddPartialsKernel<<<1, 1, 0, stream>>>(partials, scale, total);
  return cudaGetLastError();
}

cudaError_t SgdUpdate(float lr, float* var, const float* grad, std::int64_t n,
                      cudaStream_t stream) {
  return Launch(SgdKernel, n, stream, lr, var, grad, n);
}

cudaError_t MomentumUpdate(float lr, float momentum, bool nesterov, float* var, const float* grad,
                           float* accum, std::int64_t n, cudaStream_t stream) {
  return Launch(MomentumKernel, n, stream, lr, momentum, nesterov, var, grad, accum, n);
}

cudaError_t AdamUpdate(float lr_t, float beta1, float beta2, float epsilon, float* var,
                       const float* grad, float* m, float* v, std::int64_t n, cudaStream_t stream) {
  return Launch(AdamKernel, n, stream, lr_t, beta1, beta2, epsilon, var, grad, m, v, n);
}

cudaError_t RmsPropUpdate(float lr, float rho, float momentum, float epsilon, float* var,
                          const float* grad, float* velocity, float* momentum_slot,
                          float* average_grad, std::int64_t n, cudaStream_t stream) {
  return Launch(RmsPropKernel, n, stream, lr, rho, momentum, epsilon, var, grad, velocity,
                momentum_slot, average_grad, n);
}

cudaError_t AdagradUpdate(float lr, float offset, float* var, const float* grad, float* accum,
                          std::int64_t n, cudaStream_t stream) {
  return Launch(AdagradKernel, n, stream, lr, offset, var, grad, accum, n);
}

cudaError_t DecayUpdate(float rate, float* var, std::int64_t n, cudaStream_t stream) {
  return Launch(DecayKernel, n, stream, rate, var, n);
}

cudaError_t AddSquares(const float* x, std::int64_t n, bool first, double* partials, double* total,
                       cudaStream_t stream) {
  // Always all blocks, so that every partial is written (zero for an empty tensor).
  SumOfSquaresKernel<<<kReduceBlocks, kThreads, 0, stream>>>(x, n, partials);
  if (const cudaError_t launched = cudaGetLastError(); launched != cudaSuccess) return launched;
  AddToTotalKernel<<<1, 1, 0, stream>>>(partials, first, total);
  return cudaGetLastError();
}

cudaError_t ClipScale(const double* total, float clip_norm, float* scale, cudaStream_t stream) {
  ClipScaleKernel<<<1, 1, 0, stream>>>(total, clip_norm, scale);
  return cudaGetLastError();
}

cudaError_t ScaleBy(const float* scale, float* x, std::int64_t n, cudaStream_t stream) {
  return Launch(ScaleByKernel, n, stream, scale, x, n);
}

}  // namespace taas::nn::cuda
