// How the CUDA engine chooses cuDNN's convolution algorithms (engine.cc), shared with the GPU
// bench (bench/gpu/gpu_bench.cc) so that its kernels-only ceiling times what the engine runs.
// Includes cuDNN's header: only trainer-runtime/nn/cuda/ and the GPU bench include it.
//
// Per direction of a convolution (forward, backward data, backward filter), cuDNN's heuristics
// (cudnnGet*Algorithm_v7: no timing runs, so the choice is the same on every run) rank the
// algorithms for the convolution's shapes, asked for full float32 (CUDNN_FMA_MATH: no TF32
// tensor cores). They are tried in that order, those cuDNN reports deterministic and in FMA math
// first, and the first that runs is kept: one that cuDNN ranked but refuses to run
// (CUDNN_STATUS_NOT_SUPPORTED, a failed launch) falls back to the next. Each runs with the
// convolution descriptor's math type set to its own, as cuDNN reported it, since the math type
// is part of what cuDNN chose (PyTorch sets it so too); each direction has a descriptor of its
// own, so their math types never mix.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::nn::cuda {

// The most workspace one convolution algorithm may ask for.
inline constexpr std::size_t kMaxConvWorkspaceBytes = std::size_t{256} << 20;
// The math the engine asks cuDNN's heuristics for: full float32.
inline constexpr cudnnMathType_t kConvMath = CUDNN_FMA_MATH;

enum class ConvDirection { kForward, kBackwardData, kBackwardFilter };

// One algorithm of a direction, as cuDNN ranked it.
struct ConvAlgorithm {
  int algo = 0;  // the direction's cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = kConvMath;
  std::size_t workspace_bytes = 0;
  bool deterministic = false;
};

// The descriptors of one convolution; `conv` is the direction's own (its math type changes).
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnTensorDescriptor_t y = nullptr;
};

// cuDNN's perf results (cudnnConvolution*AlgoPerf_t: the same fields for every direction) in the
// order they are tried: those that ran in cuDNN's heuristics and fit kMaxConvWorkspaceBytes;
// deterministic in FMA math first, then the other deterministic ones, then the rest, each group
// in cuDNN's order. Pure: no cuDNN call.
template <typename Perf>
std::vector<ConvAlgorithm> RankPerfResults(std::span<const Perf> results) {
  std::vector<ConvAlgorithm> ranked[3];
  for (const Perf& p : results) {
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxConvWorkspaceBytes) continue;
    const bool deterministic = p.determinism == CUDNN_DETERMINISTIC;
    const int group = deterministic ? (p.mathType == CUDNN_FMA_MATH ? 0 : 1) : 2;
    ranked[group].push_back({static_cast<int>(p.algo), p.mathType, p.memory, deterministic});
  }
  for (int group : {1, 2})
    ranked[0].insert(ranked[0].end(), ranked[group].begin(), ranked[group].end());
  return ranked[0];
}

// The algorithms of `direction` for `d`, ranked (RankPerfResults) from cuDNN's heuristics asked
// with `d.conv`'s math type set to kConvMath. Internal naming the query when cuDNN offers none.
absl::StatusOr<std::vector<ConvAlgorithm>> RankConvAlgorithms(cudnnHandle_t handle,
                                                              ConvDirection direction,
                                                              const ConvDescriptors& d);

// Runs the direction's algorithm `ranked[chosen]`: sets `conv`'s math type to its own and calls
// `run` with it; when cuDNN does not run it, the next, and so on, leaving in `chosen` the index
// of the one that ran, where later calls start. Internal naming `what`, how many were tried and
// the last one's error when none runs (`chosen` unchanged).
absl::Status RunRanked(cudnnConvolutionDescriptor_t conv, std::span<const ConvAlgorithm> ranked,
                       std::size_t& chosen, const std::string& what,
                       const std::function<cudnnStatus_t(const ConvAlgorithm&)>& run);

}  // namespace taas::nn::cuda
