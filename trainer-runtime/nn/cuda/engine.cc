// The CUDA engine (engine.h): per device, one cuBLAS and one cuDNN handle on the device's compute
// stream and a few scratch buffers, all under the device's lock.
//
// Layouts: tensors are row-major and NHWC, as on the host. cuBLAS is column-major, so a row-major
// product C = op(A) op(B) runs as the column-major C^T = op(B)^T op(A)^T: the same buffers, the
// operands swapped (RowMajorGemm). cuDNN takes NHWC activations directly; its NHWC filter layout
// is KRSC ([filters, kh, kw, in]) where TensorFlow's kernel is HWIO ([kh, kw, in, filters]): every
// forward pass transposes the kernel into a KRSC copy kept in the layer's state (the kernel changes
// every step, and the transpose is a cublasSgeam of at most a few hundred KB), which the backward
// pass reuses for the input gradient; the kernel's gradient comes out in KRSC and is transposed
// back into the HWIO gradient.
//
// Algorithms: ranked once per input shape and direction by cuDNN's heuristics, tried in that order
// with the math type each needs, the first that runs kept (taas/nn_cuda/conv_algorithms.h, which
// the GPU bench shares). Bias gradients are column sums through cublasSgemv with a vector of
// ones, max pooling is cuDNN's deterministic mode, and the loss and L2 sums are added by one
// device thread in a fixed order: the same inputs give the same bits on one device. Nothing here
// waits for the device or copies to the host.
#include "taas/nn_cuda/engine.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "elementwise.h"
#include "library_status.h"
#include "taas/cuda/status.h"
#include "taas/cuda/stream.h"
#include "taas/nn_cuda/conv_algorithms.h"

namespace taas::nn::cuda {
namespace {

using taas::cuda::CudaStatus;

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

// A cuDNN descriptor, destroyed with the object.
template <typename T, cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() = default;
  ~Descriptor() {
    if (value_ != nullptr) Destroy(value_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T get() const { return value_; }
  T* out() { return &value_; }

 private:
  T value_ = nullptr;
};
using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using PoolingDescriptor = Descriptor<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;

// What the engine keeps per device; used under `mu`.
struct DeviceContext {
  std::mutex mu;
  Device device;
  cudaStream_t stream = nullptr;  // the device's compute stream (taas::cuda), not owned
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  // Scratch, grown as needed, from the device's allocator: cuDNN's workspace, ones for the bias
  // gradients, the loss's labels and per-row results, the L2 sum's and the clipping's partials,
  // the clipping's total (a double) and scale (a float after it).
  Tensor workspace, ones, labels, row_loss, row_correct, partials, clip;
  std::vector<float> host_labels;
};

// A float buffer of at least `floats` elements on `device`, reallocated only to grow (throws
// std::bad_alloc when the device is full, which With turns into a Status).
float* Scratch(Tensor& buffer, std::int64_t floats, Device device) {
  if (buffer.device() != device || buffer.size() < floats) {
    buffer = Tensor({std::max<std::int64_t>(floats, 1)}, device);
  }
  return buffer.data();
}

// cuBLAS and cuDNN take int dimensions.
absl::Status FitsInt(std::int64_t value, const char* what) {
  if (value <= INT_MAX) return absl::OkStatus();
  return absl::InvalidArgumentError(std::string(what) + " " + std::to_string(value) +
                                    " exceeds what cuBLAS and cuDNN take (2^31 - 1)");
}

// Row-major C[m, n] = op(A) op(B) + beta C with op(A) [m, k], op(B) [k, n]; A is stored [m, k]
// ([k, m] when `trans_a`), B [k, n] ([n, k] when `trans_b`).
absl::Status RowMajorGemm(DeviceContext& c, bool trans_a, bool trans_b, std::int64_t m,
                          std::int64_t n, std::int64_t k, const float* a, const float* b,
                          float beta, float* out, const char* what) {
  TAAS_RETURN_IF_ERROR(FitsInt(m * k, what));
  TAAS_RETURN_IF_ERROR(FitsInt(k * n, what));
  TAAS_RETURN_IF_ERROR(FitsInt(m * n, what));
  const int lda = static_cast<int>(trans_a ? m : k);
  const int ldb = static_cast<int>(trans_b ? k : n);
  TAAS_CUBLAS_RETURN_IF_ERROR(
      cublasSgemm(c.cublas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                  trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                  static_cast<int>(k), &kOne, b, ldb, a, lda, &beta, out, static_cast<int>(n)),
      what);
  return absl::OkStatus();
}

// Row-major [rows, cols] `in` into [cols, rows] `out`.
absl::Status Transpose(DeviceContext& c, const float* in, std::int64_t rows, std::int64_t cols,
                       float* out, const char* what) {
  TAAS_RETURN_IF_ERROR(FitsInt(rows * cols, what));
  // Column-major, `in` is [cols, rows] (ld cols) and `out` [rows, cols] (ld rows): out = in^T.
  // B is `out` itself with beta 0, cuBLAS's documented in-place form.
  TAAS_CUBLAS_RETURN_IF_ERROR(
      cublasSgeam(c.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                  static_cast<int>(cols), &kOne, in, static_cast<int>(cols), &kZero, out,
                  static_cast<int>(rows), out, static_cast<int>(rows)),
      what);
  return absl::OkStatus();
}

// bias_grad[cols] = column sums of dy [rows, cols]: dy^T 1 (cuBLAS's gemv adds in a fixed order).
absl::Status ColumnSums(DeviceContext& c, const float* dy, std::int64_t rows, std::int64_t cols,
                        float* out, const char* what) {
  if (rows == 0) {
    TAAS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out, 0, sizeof(float) * cols, c.stream),
                              "cudaMemsetAsync (an empty batch's bias gradient)");
    return absl::OkStatus();
  }
  TAAS_RETURN_IF_ERROR(FitsInt(rows * cols, what));
  if (c.ones.device() != c.device || c.ones.size() < rows) {
    float* ones = Scratch(c.ones, rows, c.device);
    TAAS_CUDA_RETURN_IF_ERROR(Fill(ones, 1.0f, c.ones.size(), c.stream), "the fill kernel (ones)");
  }
  TAAS_CUBLAS_RETURN_IF_ERROR(
      cublasSgemv(c.cublas, CUBLAS_OP_N, static_cast<int>(cols), static_cast<int>(rows), &kOne, dy,
                  static_cast<int>(cols), c.ones.data(), 1, &kZero, out, 1),
      what);
  return absl::OkStatus();
}

// One direction of a convolution: its own descriptor (whose math type follows the algorithm
// run), cuDNN's ranked algorithms, and the one that ran last.
struct ConvDirectionPlan {
  ConvolutionDescriptor conv;
  std::vector<ConvAlgorithm> ranked;
  std::size_t chosen = 0;
};

// A convolution for one input shape: descriptors and each direction's algorithms.
struct ConvPlan {
  TensorDescriptor x, y;
  FilterDescriptor w;
  std::array<ConvDirectionPlan, 3> directions;  // indexed by ConvDirection

  ConvDirectionPlan& operator[](ConvDirection d) { return directions[static_cast<std::size_t>(d)]; }
};

// A convolution layer's device state: its plans by input size, and the kernel in KRSC.
struct ConvState final : DeviceState {
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::unique_ptr<ConvPlan>> plans;
  Tensor filter, filter_grad;
};

struct PoolPlan {
  TensorDescriptor x, y;
  PoolingDescriptor pool;
};

struct PoolState final : DeviceState {
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>,
           std::unique_ptr<PoolPlan>>
      plans;
};

// The layer's state as `State`, created on first use.
template <typename State>
absl::StatusOr<State*> StateOf(std::unique_ptr<DeviceState>& state) {
  if (!state) state = std::make_unique<State>();
  auto* typed = dynamic_cast<State*>(state.get());
  if (typed == nullptr) return absl::InternalError("a layer passed another kind of layer's state");
  return typed;
}

absl::Status SetNhwc(TensorDescriptor& descriptor, std::int64_t n, std::int64_t c, std::int64_t h,
                     std::int64_t w, const char* what) {
  TAAS_RETURN_IF_ERROR(FitsInt(n * c * h * w, what));
  TAAS_CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(descriptor.out()),
                             "cudnnCreateTensorDescriptor");
  TAAS_CUDNN_RETURN_IF_ERROR(
      cudnnSetTensor4dDescriptor(descriptor.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                 static_cast<int>(n), static_cast<int>(c), static_cast<int>(h),
                                 static_cast<int>(w)),
      what);
  return absl::OkStatus();
}

// A convolution descriptor of `g` (its math type is set per algorithm: conv_algorithms.h).
absl::Status SetConvolution(ConvolutionDescriptor& conv, const ConvGeometry& g) {
  TAAS_CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(conv.out()),
                             "cudnnCreateConvolutionDescriptor");
  TAAS_CUDNN_RETURN_IF_ERROR(
      cudnnSetConvolution2dDescriptor(conv.get(), static_cast<int>(g.pad_top),
                                      static_cast<int>(g.pad_left), static_cast<int>(g.strides),
                                      static_cast<int>(g.strides), 1, 1, CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor");
  return absl::OkStatus();
}

absl::StatusOr<ConvPlan*> ConvPlanFor(DeviceContext& c, ConvState& state, const ConvGeometry& g) {
  auto& slot = state.plans[{g.n, g.h, g.w}];
  if (slot) return slot.get();
  if (g.pad_top != g.pad_bottom || g.pad_left != g.pad_right) {
    // cuDNN pads symmetrically; TF's SAME pads one more at the bottom or right when the total is
    // odd (an even kernel, or a stride that does not divide the input).
    return absl::UnimplementedError(
        "padding " + std::to_string(g.pad_top) + "+" + std::to_string(g.pad_bottom) + " x " +
        std::to_string(g.pad_left) + "+" + std::to_string(g.pad_right) +
        " is asymmetric, which cuDNN does not take: use an odd kernel with strides that divide "
        "the input, or VALID padding");
  }
  auto plan = std::make_unique<ConvPlan>();
  TAAS_RETURN_IF_ERROR(SetNhwc(plan->x, g.n, g.c, g.h, g.w, "cudnnSetTensor4dDescriptor (x)"));
  TAAS_RETURN_IF_ERROR(
      SetNhwc(plan->y, g.n, g.filters, g.out_h, g.out_w, "cudnnSetTensor4dDescriptor (y)"));
  TAAS_CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(plan->w.out()),
                             "cudnnCreateFilterDescriptor");
  TAAS_CUDNN_RETURN_IF_ERROR(
      cudnnSetFilter4dDescriptor(plan->w.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC,
                                 static_cast<int>(g.filters), static_cast<int>(g.c),
                                 static_cast<int>(g.kernel_size), static_cast<int>(g.kernel_size)),
      "cudnnSetFilter4dDescriptor");
  for (ConvDirectionPlan& direction : plan->directions) {
    TAAS_RETURN_IF_ERROR(SetConvolution(direction.conv, g));
  }
  std::array<int, 4> out{};
  TAAS_CUDNN_RETURN_IF_ERROR(
      cudnnGetConvolution2dForwardOutputDim(plan->directions[0].conv.get(), plan->x.get(),
                                            plan->w.get(), &out[0], &out[1], &out[2], &out[3]),
      "cudnnGetConvolution2dForwardOutputDim");
  if (out != std::array<int, 4>{static_cast<int>(g.n), static_cast<int>(g.filters),
                                static_cast<int>(g.out_h), static_cast<int>(g.out_w)}) {
    return absl::InternalError("cuDNN's output size " + std::to_string(out[2]) + "x" +
                               std::to_string(out[3]) + " is not the layer's " +
                               std::to_string(g.out_h) + "x" + std::to_string(g.out_w));
  }
  for (ConvDirection d :
       {ConvDirection::kForward, ConvDirection::kBackwardData, ConvDirection::kBackwardFilter}) {
    ConvDirectionPlan& direction = (*plan)[d];
    TAAS_ASSIGN_OR_RETURN(direction.ranked, RankConvAlgorithms(c.cudnn, d,
                                                               {.x = plan->x.get(),
                                                                .w = plan->w.get(),
                                                                .conv = direction.conv.get(),
                                                                .y = plan->y.get()}));
  }
  slot = std::move(plan);
  return slot.get();
}

absl::StatusOr<PoolPlan*> PoolPlanFor(PoolState& state, const PoolGeometry& g) {
  auto& slot = state.plans[{g.n, g.h, g.w, g.c}];
  if (slot) return slot.get();
  auto plan = std::make_unique<PoolPlan>();
  TAAS_RETURN_IF_ERROR(SetNhwc(plan->x, g.n, g.c, g.h, g.w, "cudnnSetTensor4dDescriptor (x)"));
  TAAS_RETURN_IF_ERROR(
      SetNhwc(plan->y, g.n, g.c, g.out_h, g.out_w, "cudnnSetTensor4dDescriptor (y)"));
  TAAS_CUDNN_RETURN_IF_ERROR(cudnnCreatePoolingDescriptor(plan->pool.out()),
                             "cudnnCreatePoolingDescriptor");
  TAAS_CUDNN_RETURN_IF_ERROR(
      cudnnSetPooling2dDescriptor(plan->pool.get(), CUDNN_POOLING_MAX_DETERMINISTIC,
                                  CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(g.window),
                                  static_cast<int>(g.window), 0, 0, static_cast<int>(g.strides),
                                  static_cast<int>(g.strides)),
      "cudnnSetPooling2dDescriptor");
  slot = std::move(plan);
  return slot.get();
}

class CudaEngine final : public DeviceKernels, public optim::DeviceUpdateRules {
 public:
  absl::Status DenseForward(const Tensor& x, const Tensor& kernel, const Tensor& bias, bool relu,
                            Tensor& y) override {
    return With(x.device(), [&](DeviceContext& c) -> absl::Status {
      const std::int64_t n = x.shape()[0], in = x.shape()[1], out = kernel.shape()[1];
      if (n == 0) return absl::OkStatus();
      TAAS_RETURN_IF_ERROR(RowMajorGemm(c, false, false, n, out, in, x.data(), kernel.data(), 0.0f,
                                        y.data(), "cublasSgemm (y = x kernel)"));
      TAAS_CUDA_RETURN_IF_ERROR(AddBias(y.data(), bias.data(), n, out, relu, c.stream),
                                "the bias kernel");
      return absl::OkStatus();
    });
  }

  absl::Status DenseBackward(const Tensor& x, const Tensor& kernel, const Tensor& dy,
                             Tensor& kernel_grad, Tensor& bias_grad, Tensor* dx) override {
    return With(x.device(), [&](DeviceContext& c) -> absl::Status {
      const std::int64_t n = x.shape()[0], in = x.shape()[1], out = kernel.shape()[1];
      // With an empty batch cuBLAS would leave beta-0 outputs unwritten: zero them.
      if (n == 0) {
        TAAS_CUDA_RETURN_IF_ERROR(
            cudaMemsetAsync(kernel_grad.data(), 0, sizeof(float) * kernel_grad.size(), c.stream),
            "cudaMemsetAsync (an empty batch's kernel gradient)");
      } else {
        TAAS_RETURN_IF_ERROR(RowMajorGemm(c, true, false, in, out, n, x.data(), dy.data(), 0.0f,
                                          kernel_grad.data(), "cublasSgemm (dkernel = x^T dy)"));
      }
      TAAS_RETURN_IF_ERROR(
          ColumnSums(c, dy.data(), n, out, bias_grad.data(), "cublasSgemv (dbias = dy^T 1)"));
      if (dx != nullptr && n > 0) {
        TAAS_RETURN_IF_ERROR(RowMajorGemm(c, false, true, n, in, out, dy.data(), kernel.data(),
                                          0.0f, dx->data(), "cublasSgemm (dx = dy kernel^T)"));
      }
      return absl::OkStatus();
    });
  }

  absl::Status ConvForward(std::unique_ptr<DeviceState>& state, const ConvGeometry& g,
                           const Tensor& x, const Tensor& kernel, const Tensor& bias, bool relu,
                           Tensor& y) override {
    return With(x.device(), [&](DeviceContext& c) -> absl::Status {
      TAAS_ASSIGN_OR_RETURN(ConvState * s, StateOf<ConvState>(state));
      if (g.n == 0) return absl::OkStatus();
      TAAS_ASSIGN_OR_RETURN(ConvPlan * plan, ConvPlanFor(c, *s, g));
      const std::int64_t k = g.kernel_size;
      if (s->filter.shape() != Shape{g.filters, k, k, g.c} || s->filter.device() != c.device) {
        s->filter = Tensor({g.filters, k, k, g.c}, c.device);
      }
      TAAS_RETURN_IF_ERROR(Transpose(c, kernel.data(), k * k * g.c, g.filters, s->filter.data(),
                                     "cublasSgeam (kernel HWIO -> KRSC)"));
      ConvDirectionPlan& forward = (*plan)[ConvDirection::kForward];
      TAAS_RETURN_IF_ERROR(RunRanked(forward.conv.get(), forward.ranked, forward.chosen,
                                     "cudnnConvolutionForward", [&](const ConvAlgorithm& a) {
                                       return cudnnConvolutionForward(
                                           c.cudnn, &kOne, plan->x.get(), x.data(), plan->w.get(),
                                           s->filter.data(), forward.conv.get(),
                                           static_cast<cudnnConvolutionFwdAlgo_t>(a.algo),
                                           Workspace(c, a.workspace_bytes), a.workspace_bytes,
                                           &kZero, plan->y.get(), y.data());
                                     }));
      TAAS_CUDA_RETURN_IF_ERROR(
          AddBias(y.data(), bias.data(), g.n * g.out_h * g.out_w, g.filters, relu, c.stream),
          "the bias kernel");
      return absl::OkStatus();
    });
  }

  absl::Status ConvBackward(std::unique_ptr<DeviceState>& state, const ConvGeometry& g,
                            const Tensor& x, const Tensor&, const Tensor& dy, Tensor& kernel_grad,
                            Tensor& bias_grad, Tensor* dx) override {
    return With(x.device(), [&](DeviceContext& c) -> absl::Status {
      TAAS_ASSIGN_OR_RETURN(ConvState * s, StateOf<ConvState>(state));
      TAAS_RETURN_IF_ERROR(ColumnSums(c, dy.data(), g.n * g.out_h * g.out_w, g.filters,
                                      bias_grad.data(), "cublasSgemv (dbias = dy^T 1)"));
      if (g.n == 0) {
        TAAS_CUDA_RETURN_IF_ERROR(
            cudaMemsetAsync(kernel_grad.data(), 0, sizeof(float) * kernel_grad.size(), c.stream),
            "cudaMemsetAsync (an empty batch's kernel gradient)");
        return absl::OkStatus();
      }
      TAAS_ASSIGN_OR_RETURN(ConvPlan * plan, ConvPlanFor(c, *s, g));
      if (s->filter.shape() != Shape{g.filters, g.kernel_size, g.kernel_size, g.c}) {
        return absl::InternalError("convolution backward without its forward pass");
      }
      if (s->filter_grad.shape() != s->filter.shape() || s->filter_grad.device() != c.device) {
        s->filter_grad = Tensor(s->filter.shape(), c.device);
      }
      ConvDirectionPlan& filter = (*plan)[ConvDirection::kBackwardFilter];
      TAAS_RETURN_IF_ERROR(RunRanked(filter.conv.get(), filter.ranked, filter.chosen,
                                     "cudnnConvolutionBackwardFilter", [&](const ConvAlgorithm& a) {
                                       return cudnnConvolutionBackwardFilter(
                                           c.cudnn, &kOne, plan->x.get(), x.data(), plan->y.get(),
                                           dy.data(), filter.conv.get(),
                                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                                           Workspace(c, a.workspace_bytes), a.workspace_bytes,
                                           &kZero, plan->w.get(), s->filter_grad.data());
                                     }));
      TAAS_RETURN_IF_ERROR(Transpose(c, s->filter_grad.data(), g.filters,
                                     g.kernel_size * g.kernel_size * g.c, kernel_grad.data(),
                                     "cublasSgeam (kernel gradient KRSC -> HWIO)"));
      if (dx != nullptr) {
        // The KRSC kernel of the forward pass: the layer's variables do not change in between.
        ConvDirectionPlan& data = (*plan)[ConvDirection::kBackwardData];
        TAAS_RETURN_IF_ERROR(RunRanked(data.conv.get(), data.ranked, data.chosen,
                                       "cudnnConvolutionBackwardData", [&](const ConvAlgorithm& a) {
                                         return cudnnConvolutionBackwardData(
                                             c.cudnn, &kOne, plan->w.get(), s->filter.data(),
                                             plan->y.get(), dy.data(), data.conv.get(),
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo),
                                             Workspace(c, a.workspace_bytes), a.workspace_bytes,
                                             &kZero, plan->x.get(), dx->data());
                                       }));
      }
      return absl::OkStatus();
    });
  }

  absl::Status MaxPoolForward(std::unique_ptr<DeviceState>& state, const PoolGeometry& g,
                              const Tensor& x, Tensor& y) override {
    return With(x.device(), [&](DeviceContext& c) -> absl::Status {
      TAAS_ASSIGN_OR_RETURN(PoolState * s, StateOf<PoolState>(state));
      if (g.n == 0 || g.c == 0) return absl::OkStatus();
      TAAS_ASSIGN_OR_RETURN(PoolPlan * plan, PoolPlanFor(*s, g));
      TAAS_CUDNN_RETURN_IF_ERROR(
          cudnnPoolingForward(c.cudnn, plan->pool.get(), &kOne, plan->x.get(), x.data(), &kZero,
                              plan->y.get(), y.data()),
          "cudnnPoolingForward");
      return absl::OkStatus();
    });
  }

  absl::Status MaxPoolBackward(std::unique_ptr<DeviceState>& state, const PoolGeometry& g,
                               const Tensor& x, const Tensor& y, const Tensor& dy,
                               Tensor& dx) override {
    return With(x.device(), [&](DeviceContext& c) -> absl::Status {
      TAAS_ASSIGN_OR_RETURN(PoolState * s, StateOf<PoolState>(state));
      if (g.n == 0 || g.c == 0) return absl::OkStatus();
      TAAS_ASSIGN_OR_RETURN(PoolPlan * plan, PoolPlanFor(*s, g));
      TAAS_CUDNN_RETURN_IF_ERROR(
          cudnnPoolingBackward(c.cudnn, plan->pool.get(), &kOne, plan->y.get(), y.data(),
                               plan->y.get(), dy.data(), plan->x.get(), x.data(), &kZero,
                               plan->x.get(), dx.data()),
          "cudnnPoolingBackward");
      return absl::OkStatus();
    });
  }

  absl::Status Relu(const Tensor& x, Tensor& y) override {
    return With(x.device(), [&](DeviceContext& c) {
      return CudaStatus(cuda::Relu(x.data(), y.data(), x.size(), c.stream), "the ReLU kernel");
    });
  }

  absl::Status ReluMask(const Tensor& y, const Tensor& dy, Tensor& out) override {
    return With(y.device(), [&](DeviceContext& c) {
      return CudaStatus(cuda::ReluMask(y.data(), dy.data(), out.data(), dy.size(), c.stream),
                        "the ReLU mask kernel");
    });
  }

  absl::Status Dropout(const Tensor& x, float rate, std::uint64_t seed, Tensor& mask,
                       Tensor& y) override {
    return With(x.device(), [&](DeviceContext& c) {
      return CudaStatus(
          cuda::Dropout(x.data(), rate, seed, mask.data(), y.data(), x.size(), c.stream),
          "the dropout kernel");
    });
  }

  absl::Status Multiply(const Tensor& a, const Tensor& b, Tensor& out) override {
    return With(a.device(), [&](DeviceContext& c) {
      return CudaStatus(cuda::Multiply(a.data(), b.data(), out.data(), a.size(), c.stream),
                        "the multiply kernel");
    });
  }

  absl::Status Copy(const Tensor& from, Tensor& to) override {
    return With(from.device(), [&](DeviceContext& c) {
      return CudaStatus(cudaMemcpyAsync(to.data(), from.data(), sizeof(float) * from.size(),
                                        cudaMemcpyDeviceToDevice, c.stream),
                        "cudaMemcpyAsync (device to device)");
    });
  }

  absl::Status SoftmaxCrossEntropy(const Tensor& logits, std::span<const std::int32_t> labels,
                                   Tensor& grad, Tensor& stats) override {
    return With(logits.device(), [&](DeviceContext& c) -> absl::Status {
      const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
      if (rows == 0) {
        TAAS_CUDA_RETURN_IF_ERROR(
            cudaMemsetAsync(stats.data(), 0, sizeof(float) * stats.size(), c.stream),
            "cudaMemsetAsync (an empty batch's loss)");
        return absl::OkStatus();
      }
      c.host_labels.assign(labels.begin(), labels.end());
      float* device_labels = Scratch(c.labels, rows, c.device);
      // Two floats per double: the allocator aligns every block to 64 bytes.
      auto* row_loss = reinterpret_cast<double*>(Scratch(c.row_loss, 2 * rows, c.device));
      float* row_correct = Scratch(c.row_correct, rows, c.device);
      // From pageable memory: the call returns once the driver staged the labels, without
      // waiting for the stream.
      TAAS_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(device_labels, c.host_labels.data(), sizeof(float) * rows,
                          cudaMemcpyHostToDevice, c.stream),
          "cudaMemcpyAsync (labels to the device)");
      TAAS_CUDA_RETURN_IF_ERROR(
          cuda::SoftmaxCrossEntropy(logits.data(), device_labels, rows, classes, grad.data(),
                                    row_loss, row_correct, c.stream),
          "the softmax cross-entropy kernel");
      TAAS_CUDA_RETURN_IF_ERROR(LossStats(row_loss, row_correct, rows, stats.data(), c.stream),
                                "the loss statistics kernel");
      return absl::OkStatus();
    });
  }

  absl::Status AddSumOfSquares(const Tensor& x, float scale, Tensor& total) override {
    return With(x.device(), [&](DeviceContext& c) -> absl::Status {
      auto* partials = reinterpret_cast<double*>(Scratch(c.partials, 2 * kReduceBlocks, c.device));
      TAAS_CUDA_RETURN_IF_ERROR(
          cuda::AddSumOfSquares(x.data(), x.size(), scale, partials, total.data(), c.stream),
          "the sum-of-squares kernels");
      return absl::OkStatus();
    });
  }

  absl::Status Axpy(float alpha, const Tensor& x, Tensor& y) override {
    return With(x.device(), [&](DeviceContext& c) {
      return CudaStatus(cuda::Axpy(alpha, x.data(), y.data(), x.size(), c.stream),
                        "the axpy kernel");
    });
  }

  absl::Status Sgd(float lr, Tensor& var, const Tensor& grad) override {
    return With(var.device(), [&](DeviceContext& c) {
      return CudaStatus(SgdUpdate(lr, var.data(), grad.data(), var.size(), c.stream),
                        "the SGD update kernel");
    });
  }

  absl::Status Momentum(float lr, float momentum, bool nesterov, Tensor& var, const Tensor& grad,
                        Tensor& accum) override {
    return With(var.device(), [&](DeviceContext& c) {
      return CudaStatus(MomentumUpdate(lr, momentum, nesterov, var.data(), grad.data(),
                                       accum.data(), var.size(), c.stream),
                        "the momentum update kernel");
    });
  }

  absl::Status Adam(float lr_t, float beta1, float beta2, float epsilon, Tensor& var,
                    const Tensor& grad, Tensor& m, Tensor& v) override {
    return With(var.device(), [&](DeviceContext& c) {
      return CudaStatus(AdamUpdate(lr_t, beta1, beta2, epsilon, var.data(), grad.data(), m.data(),
                                   v.data(), var.size(), c.stream),
                        "the Adam update kernel");
    });
  }

  absl::Status RmsProp(float lr, float rho, float momentum, float epsilon, Tensor& var,
                       const Tensor& grad, Tensor& velocity, Tensor* momentum_slot,
                       Tensor* average_grad) override {
    return With(var.device(), [&](DeviceContext& c) {
      return CudaStatus(
          RmsPropUpdate(lr, rho, momentum, epsilon, var.data(), grad.data(), velocity.data(),
                        momentum_slot != nullptr ? momentum_slot->data() : nullptr,
                        average_grad != nullptr ? average_grad->data() : nullptr, var.size(),
                        c.stream),
          "the RMSprop update kernel");
    });
  }

  absl::Status Adagrad(float lr, float offset, Tensor& var, const Tensor& grad,
                       Tensor& accum) override {
    return With(var.device(), [&](DeviceContext& c) {
      return CudaStatus(
          AdagradUpdate(lr, offset, var.data(), grad.data(), accum.data(), var.size(), c.stream),
          "the Adagrad update kernel");
    });
  }

  absl::Status Decay(float rate, Tensor& var) override {
    return With(var.device(), [&](DeviceContext& c) {
      return CudaStatus(DecayUpdate(rate, var.data(), var.size(), c.stream),
                        "the weight decay kernel");
    });
  }

  absl::Status ClipByGlobalNorm(float clip_norm, std::span<Tensor* const> tensors) override {
    if (tensors.empty()) return absl::OkStatus();
    return With(tensors[0]->device(), [&](DeviceContext& c) -> absl::Status {
      auto* partials = reinterpret_cast<double*>(Scratch(c.partials, 2 * kReduceBlocks, c.device));
      float* clip = Scratch(c.clip, 3, c.device);  // 64-byte aligned: the double first
      auto* total = reinterpret_cast<double*>(clip);
      float* scale = clip + 2;
      for (std::size_t k = 0; k < tensors.size(); ++k) {
        TAAS_CUDA_RETURN_IF_ERROR(
            AddSquares(tensors[k]->data(), tensors[k]->size(), k == 0, partials, total, c.stream),
            "the global norm's sum-of-squares kernels");
      }
      TAAS_CUDA_RETURN_IF_ERROR(ClipScale(total, clip_norm, scale, c.stream),
                                "the clipping scale kernel");
      for (Tensor* tensor : tensors) {
        TAAS_CUDA_RETURN_IF_ERROR(ScaleBy(scale, tensor->data(), tensor->size(), c.stream),
                                  "the clipping kernel");
      }
      return absl::OkStatus();
    });
  }

 private:
  // Runs `body(context)` for `device` with its context locked and the device current; the body's
  // result, an error from setting them up, or ResourceExhausted when the device's memory ran out.
  template <typename Body>
  auto With(Device device, Body&& body) -> decltype(body(std::declval<DeviceContext&>())) {
    TAAS_ASSIGN_OR_RETURN(DeviceContext * context, ContextFor(device));
    std::lock_guard lock(context->mu);
    taas::cuda::ScopedDevice current(device.index);
    TAAS_RETURN_IF_ERROR(current.status());
    try {
      return body(*context);
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(DeviceName(device) +
                                          " is out of memory for the engine's scratch buffers");
    }
  }

  // The context of `device`, created with its handles on first use.
  absl::StatusOr<DeviceContext*> ContextFor(Device device) {
    std::lock_guard lock(mu_);
    auto& slot = contexts_[device.index];
    if (slot) return slot.get();
    auto context = std::make_unique<DeviceContext>();
    context->device = device;
    TAAS_ASSIGN_OR_RETURN(context->stream, taas::cuda::ComputeStream(device.index));
    taas::cuda::ScopedDevice current(device.index);
    TAAS_RETURN_IF_ERROR(current.status());
    // The handles live as long as the process, as the engine does: destroying them at exit,
    // after the CUDA runtime may have unloaded, is what crashes.
    TAAS_CUBLAS_RETURN_IF_ERROR(cublasCreate(&context->cublas), "cublasCreate");
    TAAS_CUBLAS_RETURN_IF_ERROR(cublasSetStream(context->cublas, context->stream),
                                "cublasSetStream");
    // Float32 throughout: the default math uses no TF32 for float GEMMs (only
    // CUBLAS_TF32_TENSOR_OP_MATH would, and pedantic math would also forgo cuBLAS's fast float
    // kernels); no atomics, so the results repeat bit for bit.
    TAAS_CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(context->cublas, CUBLAS_DEFAULT_MATH),
                                "cublasSetMathMode");
    TAAS_CUBLAS_RETURN_IF_ERROR(cublasSetAtomicsMode(context->cublas, CUBLAS_ATOMICS_NOT_ALLOWED),
                                "cublasSetAtomicsMode");
    TAAS_CUDNN_RETURN_IF_ERROR(cudnnCreate(&context->cudnn), "cudnnCreate");
    TAAS_CUDNN_RETURN_IF_ERROR(cudnnSetStream(context->cudnn, context->stream), "cudnnSetStream");
    slot = std::move(context);
    return slot.get();
  }

  // cuDNN's workspace of at least `bytes` (nullptr for none).
  static void* Workspace(DeviceContext& c, std::size_t bytes) {
    if (bytes == 0) return nullptr;
    return Scratch(c.workspace, static_cast<std::int64_t>((bytes + 3) / 4), c.device);
  }

  std::mutex mu_;
  std::map<int, std::unique_ptr<DeviceContext>> contexts_;  // guarded by mu_
};

CudaEngine& Engine() {
  // Never destroyed: see ContextFor.
  static auto* engine = new CudaEngine();
  return *engine;
}

}  // namespace

DeviceKernels& Kernels() { return Engine(); }
optim::DeviceUpdateRules& UpdateRules() { return Engine(); }

}  // namespace taas::nn::cuda
