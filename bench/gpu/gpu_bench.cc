// The GPU figures bench/gpu/run.sh prints beside the trainer's own: what cuBLAS and cuDNN reach
// on this device against its peak, what they allow for the Fashion-MNIST CNN (the sum of its
// layers' kernel times: the ceiling a trainer on this device can approach), and the bus
// bandwidth of the NCCL backend's all-reduce across the visible GPUs.
//
//   gpu_bench [--what gemm,conv,cnn,nccl] [--batch 100] [--device 0]
//
// Every figure is one line `name: value unit (detail)`; times are CUDA events around 20 runs
// after 3 warm-ups. FP32 means no tensor cores (CUBLAS_DEFAULT_MATH; cuDNN's algorithms as the CUDA
// engine chooses them, taas/nn_cuda/conv_algorithms.h); TF32 means tensor cores with TF32 inputs
// (what cuDNN and cuBLAS may use for float when allowed).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "taas/collective/in_process.h"
#include "taas/cuda/device.h"
#include "taas/cuda/nccl_collective.h"
#include "taas/nn_cuda/conv_algorithms.h"

namespace {

constexpr int kWarmups = 3;
constexpr int kRuns = 20;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "gpu_bench: %s\n", message.c_str());
  std::exit(1);
}
void Cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(std::string(what) + ": " + cudaGetErrorString(e));
}
void Cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) Die(std::string(what) + ": " + cublasGetStatusString(s));
}
void Cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) Die(std::string(what) + ": " + cudnnGetErrorString(s));
}

// The device's peak float throughput in TFLOP/s, and where the figure comes from.
struct Peak {
  double fp32 = 0;
  double tf32 = 0;  // dense tensor-core TF32; 0 when unknown
  std::string source;
};

Peak PeakOf(int device) {
  cudaDeviceProp prop{};
  Cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const std::string name = prop.name;
  // NVIDIA's data sheets (dense, boost clock). Checked most specific first.
  struct Row {
    const char* match;
    double fp32, tf32;
  };
  static const Row kTable[] = {
      {"H200 NVL", 60.0, 417.5},  {"H200", 66.9, 494.7}, {"H100 NVL", 60.0, 417.5},
      {"H100 PCIe", 51.2, 378.0}, {"H100", 66.9, 494.7}, {"A100", 19.5, 156.0},
  };
  for (const Row& row : kTable) {
    if (name.find(row.match) != std::string::npos) {
      return {row.fp32, row.tf32, "data sheet of " + std::string(row.match)};
    }
  }
  // Otherwise from the device's properties: SMs x FP32 lanes per SM x 2 (an FMA) x clock.
  int sms = 0, khz = 0;
  Cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  Cuda(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device), "clock rate");
  const int lanes = prop.major == 8 && prop.minor == 0 ? 64 : prop.major >= 8 ? 128 : 64;
  return {sms * lanes * 2.0 * khz * 1e3 / 1e12, 0,
          std::to_string(sms) + " SMs x " + std::to_string(lanes) + " lanes x 2 x " +
              std::to_string(khz / 1000) + " MHz (no table row for this name)"};
}

// Mean milliseconds of `run` over kRuns, after kWarmups.
double TimeMs(const std::function<void()>& run) {
  for (int i = 0; i < kWarmups; ++i) run();
  cudaEvent_t start, stop;
  Cuda(cudaEventCreate(&start), "cudaEventCreate");
  Cuda(cudaEventCreate(&stop), "cudaEventCreate");
  Cuda(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < kRuns; ++i) run();
  Cuda(cudaEventRecord(stop), "cudaEventRecord");
  Cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  Cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / kRuns;
}

// The visible GPUs; dies naming the driver's problem when CUDA cannot count them.
int VisibleGpus() {
  const absl::StatusOr<int> gpus = taas::cuda::VisibleDeviceCount();
  if (!gpus.ok()) Die(gpus.status().ToString());
  return *gpus;
}

float* DeviceFloats(std::size_t n) {
  void* p = nullptr;
  Cuda(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(float)), "cudaMalloc");
  Cuda(cudaMemset(p, 0, std::max<std::size_t>(n, 1) * sizeof(float)), "cudaMemset");
  return static_cast<float*>(p);
}

void Print(const std::string& name, double value, const char* unit, const std::string& detail) {
  std::printf("%s: %.2f %s (%s)\n", name.c_str(), value, unit, detail.c_str());
  std::fflush(stdout);
}

std::string Percent(double value, double peak) {
  if (peak <= 0) return "peak unknown";
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f%% of %.1f", 100 * value / peak, peak);
  return text;
}

// C[m x n] = A[m x k] B[k x n], column-major as cuBLAS sees it.
double GemmMs(cublasHandle_t blas, int m, int n, int k, const float* a, const float* b, float* c,
              cublasOperation_t ta = CUBLAS_OP_N, cublasOperation_t tb = CUBLAS_OP_N) {
  const float one = 1, zero = 0;
  const int lda = ta == CUBLAS_OP_N ? m : k, ldb = tb == CUBLAS_OP_N ? k : n;
  return TimeMs([&] {
    Cublas(cublasSgemm(blas, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, m), "cublasSgemm");
  });
}

void BenchGemm(const Peak& peak) {
  cublasHandle_t blas;
  Cublas(cublasCreate(&blas), "cublasCreate");
  const int n = 8192;
  float* a = DeviceFloats(std::size_t{n} * n);
  float* b = DeviceFloats(std::size_t{n} * n);
  float* c = DeviceFloats(std::size_t{n} * n);
  for (auto [math, label, top] : {std::tuple{CUBLAS_DEFAULT_MATH, "FP32", peak.fp32},
                                  std::tuple{CUBLAS_TF32_TENSOR_OP_MATH, "TF32", peak.tf32}}) {
    Cublas(cublasSetMathMode(blas, math), "cublasSetMathMode");
    const double ms = GemmMs(blas, n, n, n, a, b, c);
    const double tflops = 2.0 * n * n * n / (ms * 1e-3) / 1e12;
    Print(std::string("cuBLAS SGEMM 8192^3 ") + label, tflops, "TFLOP/s",
          Percent(tflops, top) + " TFLOP/s peak");
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cublasDestroy(blas);
}

// One convolution's descriptors and buffers (NHWC, stride 1, square kernel).
struct Conv {
  int n, h, w, c, k, r, pad;
  int oh() const { return h + 2 * pad - r + 1; }
  int ow() const { return w + 2 * pad - r + 1; }
  double flops() const { return 2.0 * n * oh() * ow() * k * r * r * c; }
};

// Which algorithms a convolution runs: the CUDA engine's choice (taas/nn_cuda/conv_algorithms.h:
// full float32, cuDNN's ranking with fallback, each with its own math type), or cuDNN's first
// choice with tensor cores allowed (TF32), for the device's peak.
enum class ConvChoice { kEngine, kTensorCores };

// cuDNN's first choice for `direction` with tensor cores allowed (CUDNN_DEFAULT_MATH: TF32 for
// float on Ampere and later), for the device's peak: not what the engine runs.
taas::nn::cuda::ConvAlgorithm TensorCoreAlgorithm(cudnnHandle_t dnn,
                                                  const taas::nn::cuda::ConvDescriptors& d,
                                                  taas::nn::cuda::ConvDirection direction) {
  using taas::nn::cuda::ConvDirection;
  Cudnn(cudnnSetConvolutionMathType(d.conv, CUDNN_DEFAULT_MATH), "math type");
  int found = 0;
  const auto algorithm = [](const auto& perf) {
    return taas::nn::cuda::ConvAlgorithm{.algo = static_cast<int>(perf.algo),
                                         .math = perf.mathType,
                                         .workspace_bytes = perf.memory,
                                         .deterministic = perf.determinism == CUDNN_DETERMINISTIC};
  };
  if (direction == ConvDirection::kForward) {
    cudnnConvolutionFwdAlgoPerf_t perf{};
    Cudnn(cudnnGetConvolutionForwardAlgorithm_v7(dnn, d.x, d.w, d.conv, d.y, 1, &found, &perf),
          "fwd algo");
    return algorithm(perf);
  }
  if (direction == ConvDirection::kBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf{};
    Cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, d.w, d.y, d.conv, d.x, 1, &found, &perf),
          "bwd data algo");
    return algorithm(perf);
  }
  cudnnConvolutionBwdFilterAlgoPerf_t perf{};
  Cudnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, d.x, d.y, d.conv, d.w, 1, &found, &perf),
        "bwd filter algo");
  return algorithm(perf);
}

// Milliseconds of `run` with the algorithm `choice` picks for `direction`; `run` returns cuDNN's
// status for one call with the given algorithm and workspace.
double DirectionMs(cudnnHandle_t dnn, const taas::nn::cuda::ConvDescriptors& d,
                   taas::nn::cuda::ConvDirection direction, ConvChoice choice,
                   const std::function<cudnnStatus_t(const taas::nn::cuda::ConvAlgorithm&,
                                                     void* workspace)>& run) {
  using taas::nn::cuda::ConvAlgorithm;
  std::vector<ConvAlgorithm> ranked;
  if (choice == ConvChoice::kEngine) {
    auto engine = taas::nn::cuda::RankConvAlgorithms(dnn, direction, d);
    if (!engine.ok()) Die(engine.status().ToString());
    ranked = std::move(*engine);
  } else {
    ranked.push_back(TensorCoreAlgorithm(dnn, d, direction));
  }
  std::size_t workspace_bytes = 1;
  for (const ConvAlgorithm& a : ranked)
    workspace_bytes = std::max(workspace_bytes, a.workspace_bytes);
  void* workspace = nullptr;
  Cuda(cudaMalloc(&workspace, workspace_bytes), "workspace");
  // The engine's first call: the first algorithm that runs, its math type left on d.conv.
  std::size_t chosen = 0;
  const absl::Status ran =
      taas::nn::cuda::RunRanked(d.conv, ranked, chosen, "convolution",
                                [&](const ConvAlgorithm& a) { return run(a, workspace); });
  if (!ran.ok()) Die(ran.ToString());
  const double ms = TimeMs([&] { Cudnn(run(ranked[chosen], workspace), "convolution"); });
  cudaFree(workspace);
  return ms;
}

// Times forward, backward-data and backward-filter of `conv` with the algorithms `choice` picks;
// returns {fwd, bwd_data, bwd_filter} milliseconds.
std::array<double, 3> ConvMs(cudnnHandle_t dnn, const Conv& conv, ConvChoice choice) {
  using taas::nn::cuda::ConvAlgorithm;
  using taas::nn::cuda::ConvDirection;
  taas::nn::cuda::ConvDescriptors d;
  Cudnn(cudnnCreateTensorDescriptor(&d.x), "tensor descriptor");
  Cudnn(cudnnCreateTensorDescriptor(&d.y), "tensor descriptor");
  Cudnn(cudnnCreateFilterDescriptor(&d.w), "filter descriptor");
  Cudnn(cudnnCreateConvolutionDescriptor(&d.conv), "convolution descriptor");
  Cudnn(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, conv.n, conv.c, conv.h,
                                   conv.w),
        "input");
  Cudnn(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, conv.n, conv.k,
                                   conv.oh(), conv.ow()),
        "output");
  Cudnn(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, conv.k, conv.c, conv.r,
                                   conv.r),
        "filter");
  Cudnn(cudnnSetConvolution2dDescriptor(d.conv, conv.pad, conv.pad, 1, 1, 1, 1,
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "convolution");
  float* xd = DeviceFloats(std::size_t(conv.n) * conv.h * conv.w * conv.c);
  float* yd = DeviceFloats(std::size_t(conv.n) * conv.oh() * conv.ow() * conv.k);
  float* fd = DeviceFloats(std::size_t(conv.k) * conv.r * conv.r * conv.c);
  const float one = 1, zero = 0;
  std::array<double, 3> ms{};
  ms[0] = DirectionMs(
      dnn, d, ConvDirection::kForward, choice, [&](const ConvAlgorithm& a, void* workspace) {
        return cudnnConvolutionForward(dnn, &one, d.x, xd, d.w, fd, d.conv,
                                       static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), workspace,
                                       a.workspace_bytes, &zero, d.y, yd);
      });
  ms[1] = DirectionMs(
      dnn, d, ConvDirection::kBackwardData, choice, [&](const ConvAlgorithm& a, void* workspace) {
        return cudnnConvolutionBackwardData(dnn, &one, d.w, fd, d.y, yd, d.conv,
                                            static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo),
                                            workspace, a.workspace_bytes, &zero, d.x, xd);
      });
  ms[2] = DirectionMs(
      dnn, d, ConvDirection::kBackwardFilter, choice, [&](const ConvAlgorithm& a, void* workspace) {
        return cudnnConvolutionBackwardFilter(dnn, &one, d.x, xd, d.y, yd, d.conv,
                                              static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo),
                                              workspace, a.workspace_bytes, &zero, d.w, fd);
      });
  cudaFree(xd);
  cudaFree(yd);
  cudaFree(fd);
  cudnnDestroyConvolutionDescriptor(d.conv);
  cudnnDestroyFilterDescriptor(d.w);
  cudnnDestroyTensorDescriptor(d.x);
  cudnnDestroyTensorDescriptor(d.y);
  return ms;
}

void BenchConv(const Peak& peak) {
  cudnnHandle_t dnn;
  Cudnn(cudnnCreate(&dnn), "cudnnCreate");
  // A ResNet-style layer large enough to fill the device.
  const Conv big{64, 56, 56, 256, 256, 3, 1};
  for (auto [choice, label, top] : {std::tuple{ConvChoice::kEngine, "FP32", peak.fp32},
                                    std::tuple{ConvChoice::kTensorCores, "TF32", peak.tf32}}) {
    const auto ms = ConvMs(dnn, big, choice);
    const double tflops = big.flops() / (ms[0] * 1e-3) / 1e12;
    Print(std::string("cuDNN conv fwd 64x56x56x256 3x3x256 ") + label, tflops, "TFLOP/s",
          Percent(tflops, top) + " TFLOP/s peak");
  }
  cudnnDestroy(dnn);
}

// The CNN's layers at `batch` (Keras valid padding): the compute a training step cannot avoid,
// as cuDNN and cuBLAS do it with the engine's math and algorithms (full float32: cuBLAS's default
// math, cuDNN's algorithms as the engine chooses and runs them).
void BenchCnn(int batch) {
  cudnnHandle_t dnn;
  cublasHandle_t blas;
  Cudnn(cudnnCreate(&dnn), "cudnnCreate");
  Cublas(cublasCreate(&blas), "cublasCreate");
  const Conv convs[] = {
      {batch, 28, 28, 1, 32, 3, 0}, {batch, 13, 13, 32, 64, 3, 0}, {batch, 5, 5, 64, 64, 3, 0}};
  double total_ms = 0, flops = 0;
  for (std::size_t i = 0; i < std::size(convs); ++i) {
    const auto ms = ConvMs(dnn, convs[i], ConvChoice::kEngine);
    // The first layer needs no gradient of its input.
    const double step = ms[0] + (i == 0 ? 0 : ms[1]) + ms[2];
    total_ms += step;
    flops += convs[i].flops() * (i == 0 ? 2 : 3);
    Print("CNN conv" + std::to_string(i + 1) + " fwd+bwd", step, "ms",
          "fwd " + std::to_string(ms[0]) + ", bwd data " + std::to_string(ms[1]) + ", bwd filter " +
              std::to_string(ms[2]));
  }
  // Dense 576->64 and 64->10: forward, gradient of the input, gradient of the weights.
  const int dense[][2] = {{576, 64}, {64, 10}};
  for (const auto& d : dense) {
    const int in = d[0], out = d[1];
    float* x = DeviceFloats(std::size_t(batch) * in);
    float* w = DeviceFloats(std::size_t(in) * out);
    float* y = DeviceFloats(std::size_t(batch) * out);
    const double ms = GemmMs(blas, out, batch, in, w, x, y) +
                      GemmMs(blas, in, batch, out, w, y, x, CUBLAS_OP_T, CUBLAS_OP_N) +
                      GemmMs(blas, out, in, batch, y, x, w, CUBLAS_OP_N, CUBLAS_OP_T);
    total_ms += ms;
    flops += 3 * 2.0 * batch * in * out;
    Print("CNN dense " + std::to_string(in) + "x" + std::to_string(out) + " fwd+bwd", ms, "ms",
          "3 SGEMMs");
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
  }
  Print("CNN kernels-only ceiling at batch " + std::to_string(batch), batch / (total_ms * 1e-3),
        "examples/s",
        std::to_string(total_ms) + " ms of convolutions and GEMMs per step, " +
            std::to_string(flops / batch / 1e6) +
            " MFLOP per example; pooling, activations, loss and updates not counted");
  cublasDestroy(blas);
  cudnnDestroy(dnn);
}

// The NCCL backend's all-reduce across every visible GPU, one thread per GPU as in the runtime;
// bus bandwidth as nccl-tests defines it: algorithm bandwidth x 2(n-1)/n.
void BenchNccl() {
  const int gpus = VisibleGpus();
  taas::collective::InProcessOptions options;
  options.members = gpus;
  options.timeout_secs = 120;
  auto group = taas::collective::InProcessGroup::Create(std::move(options));
  if (!group.ok()) Die(group.status().ToString());
  const std::vector<std::size_t> sizes = {std::size_t{1} << 20, std::size_t{16} << 20,
                                          std::size_t{64} << 20, std::size_t{256} << 20};
  // secs[size][member]: seconds per all-reduce.
  std::vector<std::vector<double>> secs(sizes.size(),
                                        std::vector<double>(static_cast<std::size_t>(gpus)));
  std::vector<std::thread> threads;
  for (int m = 0; m < gpus; ++m) {
    threads.emplace_back([&, m] {
      taas::cuda::NcclOptions nccl_options;
      nccl_options.device = m;
      nccl_options.timeout_secs = 120;
      auto nccl = taas::cuda::ConnectNccl((*group)->member(m), nccl_options);
      if (!nccl.ok()) Die(nccl.status().ToString());
      for (std::size_t s = 0; s < sizes.size(); ++s) {
        float* data = DeviceFloats(sizes[s] / sizeof(float));
        std::span<float> span(data, sizes[s] / sizeof(float));
        auto run = [&] {
          absl::Status status = (*nccl)->AllReduce(span, taas::collective::ReduceOp::kSum).Wait();
          if (!status.ok()) Die(status.ToString());
        };
        for (int i = 0; i < kWarmups; ++i) run();
        if (absl::Status b = (*nccl)->Barrier(); !b.ok()) Die(b.ToString());
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kRuns; ++i) run();
        secs[s][static_cast<std::size_t>(m)] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kRuns;
        cudaFree(data);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const double t = *std::max_element(secs[s].begin(), secs[s].end());
    const double alg = static_cast<double>(sizes[s]) / t / 1e9;
    const double bus = alg * 2.0 * (gpus - 1) / gpus;
    Print("NCCL all-reduce " + std::to_string(sizes[s] >> 20) + " MiB on " + std::to_string(gpus) +
              " GPUs bus bandwidth",
          bus, "GB/s",
          "algorithm bandwidth " + std::to_string(alg) + " GB/s, " + std::to_string(t * 1e3) +
              " ms per all-reduce" + (gpus == 1 ? "; one GPU moves nothing" : ""));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = "gemm,conv,cnn,nccl";
  int batch = 100, device = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) Die("flag " + arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--what") {
      what = value;
    } else if (arg == "--batch") {
      batch = std::atoi(value.c_str());
      if (batch < 1 || batch > 65536) Die("--batch must be 1..65536, got " + value);
    } else if (arg == "--device") {
      device = std::atoi(value.c_str());
    } else {
      Die("unknown flag " + arg + " (--what gemm,conv,cnn,nccl --batch N --device N)");
    }
  }
  const int gpus = VisibleGpus();
  if (gpus == 0) Die("no GPU visible");
  if (device < 0 || device >= gpus) Die("--device must be 0.." + std::to_string(gpus - 1));
  Cuda(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  Cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const Peak peak = PeakOf(device);
  std::printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB; peak FP32 %.1f / TF32 %.1f TFLOP/s (%s)\n",
              device, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.totalGlobalMem / double(1 << 30), peak.fp32, peak.tf32, peak.source.c_str());
  auto wants = [&](const char* part) { return what.find(part) != std::string::npos; };
  if (wants("gemm")) BenchGemm(peak);
  if (wants("conv")) BenchConv(peak);
  if (wants("cnn")) BenchCnn(batch);
  if (wants("nccl")) BenchNccl();
  return 0;
}
