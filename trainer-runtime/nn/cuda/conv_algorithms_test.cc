// The order in which the engine tries cuDNN's convolution algorithms (label unit: pure, no GPU).
#include "taas/nn_cuda/conv_algorithms.h"

#include <doctest/doctest.h>

#include <vector>

namespace taas::nn::cuda {
namespace {

cudnnConvolutionFwdAlgoPerf_t Perf(cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math,
                                   bool deterministic, std::size_t memory = 0,
                                   cudnnStatus_t status = CUDNN_STATUS_SUCCESS) {
  cudnnConvolutionFwdAlgoPerf_t p{};
  p.algo = algo;
  p.status = status;
  p.memory = memory;
  p.determinism = deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
  p.mathType = math;
  return p;
}

std::vector<int> Algos(const std::vector<ConvAlgorithm>& ranked) {
  std::vector<int> out;
  for (const auto& a : ranked) out.push_back(a.algo);
  return out;
}

TEST_CASE("deterministic FMA algorithms first, then other deterministic ones, then the rest") {
  const std::vector<cudnnConvolutionFwdAlgoPerf_t> results = {
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_FMA_MATH, false),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_TENSOR_OP_MATH, true),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_FMA_MATH, true),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_FMA_MATH, true),
  };
  const auto ranked = RankPerfResults<cudnnConvolutionFwdAlgoPerf_t>(results);
  CHECK(Algos(ranked) ==
        std::vector<int>{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_FFT,
                         CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD});
  // Each keeps the math type cuDNN ranked it with: the one it runs with.
  CHECK(ranked[2].math == CUDNN_TENSOR_OP_MATH);
  CHECK(ranked[0].math == CUDNN_FMA_MATH);
  CHECK_FALSE(ranked[3].deterministic);
}

TEST_CASE("algorithms that failed in the heuristics or need too much workspace are left out") {
  const std::vector<cudnnConvolutionFwdAlgoPerf_t> results = {
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_FMA_MATH, true, kMaxConvWorkspaceBytes + 1),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_FMA_MATH, true, 0, CUDNN_STATUS_NOT_SUPPORTED),
      Perf(CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_FMA_MATH, true, kMaxConvWorkspaceBytes),
  };
  const auto ranked = RankPerfResults<cudnnConvolutionFwdAlgoPerf_t>(results);
  CHECK(Algos(ranked) == std::vector<int>{CUDNN_CONVOLUTION_FWD_ALGO_DIRECT});
  CHECK(ranked[0].workspace_bytes == kMaxConvWorkspaceBytes);
  CHECK(RankPerfResults<cudnnConvolutionFwdAlgoPerf_t>(
            std::vector<cudnnConvolutionFwdAlgoPerf_t>{results[0], results[1]})
            .empty());
}

}  // namespace
}  // namespace taas::nn::cuda
