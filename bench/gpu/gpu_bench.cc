// The GPU figures bench/gpu/run.sh prints beside the trainer's own: what cuBLAS and cuDNN reach
// on this device against its peak, what they allow for the Fashion-MNIST CNN (the sum of its
// layers' kernel times: the ceiling a trainer on this device can approach), and the bus
// bandwidth of the NCCL backend's all-reduce across the visible GPUs.
//
//   gpu_bench [--what gemm,conv,cnn,nccl] [--batch 100] [--device 0]
//
// Every figure is one line `name: value unit (detail)`; times are CUDA events around 20 runs
// after 3 warm-ups. FP32 means no tensor cores (CUBLAS_DEFAULT_MATH, CUDNN_FMA_MATH); TF32 means
// tensor cores with TF32 inputs (what cuDNN and cuBLAS may use for float when allowed).
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
#include "taas/cuda/nccl_collective.h"

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

// Times forward, backward-data and backward-filter of `conv` with cuDNN's heuristically best
// algorithms; returns {fwd, bwd_data, bwd_filter} milliseconds.
std::array<double, 3> ConvMs(cudnnHandle_t dnn, const Conv& conv, cudnnMathType_t math) {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t f;
  cudnnConvolutionDescriptor_t cd;
  Cudnn(cudnnCreateTensorDescriptor(&x), "tensor descriptor");
  Cudnn(cudnnCreateTensorDescriptor(&y), "tensor descriptor");
  Cudnn(cudnnCreateFilterDescriptor(&f), "filter descriptor");
  Cudnn(cudnnCreateConvolutionDescriptor(&cd), "convolution descriptor");
  Cudnn(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, conv.n, conv.c, conv.h,
                                   conv.w),
        "input");
  Cudnn(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, conv.n, conv.k,
                                   conv.oh(), conv.ow()),
        "output");
  Cudnn(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, conv.k, conv.c, conv.r,
                                   conv.r),
        "filter");
  Cudnn(cudnnSetConvolution2dDescriptor(cd, conv.pad, conv.pad, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        "convolution");
  Cudnn(cudnnSetConvolutionMathType(cd, math), "math type");
  float* xd = DeviceFloats(std::size_t(conv.n) * conv.h * conv.w * conv.c);
  float* yd = DeviceFloats(std::size_t(conv.n) * conv.oh() * conv.ow() * conv.k);
  float* fd = DeviceFloats(std::size_t(conv.k) * conv.r * conv.r * conv.c);
  const float one = 1, zero = 0;
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd{};
  cudnnConvolutionBwdDataAlgoPerf_t bwd_data{};
  cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter{};
  Cudnn(cudnnGetConvolutionForwardAlgorithm_v7(dnn, x, f, cd, y, 1, &found, &fwd), "fwd algo");
  Cudnn(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, f, y, cd, x, 1, &found, &bwd_data),
        "bwd data algo");
  Cudnn(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, x, y, cd, f, 1, &found, &bwd_filter),
        "bwd filter algo");
  const std::size_t workspace_bytes =
      std::max({fwd.memory, bwd_data.memory, bwd_filter.memory, std::size_t{1}});
  void* workspace = nullptr;
  Cuda(cudaMalloc(&workspace, workspace_bytes), "workspace");
  std::array<double, 3> ms{};
  ms[0] = TimeMs([&] {
    Cudnn(cudnnConvolutionForward(dnn, &one, x, xd, f, fd, cd, fwd.algo, workspace, workspace_bytes,
                                  &zero, y, yd),
          "cudnnConvolutionForward");
  });
  ms[1] = TimeMs([&] {
    Cudnn(cudnnConvolutionBackwardData(dnn, &one, f, fd, y, yd, cd, bwd_data.algo, workspace,
                                       workspace_bytes, &zero, x, xd),
          "cudnnConvolutionBackwardData");
  });
  ms[2] = TimeMs([&] {
    Cudnn(cudnnConvolutionBackwardFilter(dnn, &one, x, xd, y, yd, cd, bwd_filter.algo, workspace,
                                         workspace_bytes, &zero, f, fd),
          "cudnnConvolutionBackwardFilter");
  });
  cudaFree(workspace);
  cudaFree(xd);
  cudaFree(yd);
  cudaFree(fd);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyFilterDescriptor(f);
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(y);
  return ms;
}

void BenchConv(const Peak& peak) {
  cudnnHandle_t dnn;
  Cudnn(cudnnCreate(&dnn), "cudnnCreate");
  // A ResNet-style layer large enough to fill the device.
  const Conv big{64, 56, 56, 256, 256, 3, 1};
  for (auto [math, label, top] : {std::tuple{CUDNN_FMA_MATH, "FP32", peak.fp32},
                                  std::tuple{CUDNN_DEFAULT_MATH, "TF32", peak.tf32}}) {
    const auto ms = ConvMs(dnn, big, math);
    const double tflops = big.flops() / (ms[0] * 1e-3) / 1e12;
    Print(std::string("cuDNN conv fwd 64x56x56x256 3x3x256 ") + label, tflops, "TFLOP/s",
          Percent(tflops, top) + " TFLOP/s peak");
  }
  cudnnDestroy(dnn);
}

// The CNN's layers at `batch` (Keras valid padding): the compute a training step cannot avoid,
// as cuDNN and cuBLAS do it with the engine's math (float, TF32 allowed by cuDNN's default).
void BenchCnn(int batch) {
  cudnnHandle_t dnn;
  cublasHandle_t blas;
  Cudnn(cudnnCreate(&dnn), "cudnnCreate");
  Cublas(cublasCreate(&blas), "cublasCreate");
  const Conv convs[] = {
      {batch, 28, 28, 1, 32, 3, 0}, {batch, 13, 13, 32, 64, 3, 0}, {batch, 5, 5, 64, 64, 3, 0}};
  double total_ms = 0, flops = 0;
  for (std::size_t i = 0; i < std::size(convs); ++i) {
    const auto ms = ConvMs(dnn, convs[i], CUDNN_DEFAULT_MATH);
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
  int gpus = 0;
  Cuda(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
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
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) Die("no GPU visible");
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
