#include "taas/nn_cuda/conv_algorithms.h"

#include <cuda_runtime_api.h>

#include <array>

#include "library_status.h"

namespace taas::nn::cuda {
namespace {

// cuDNN's ranking for one direction, through its _v7 query.
template <typename Perf, std::size_t kCount, typename Query>
absl::StatusOr<std::vector<ConvAlgorithm>> Ranked(const char* what, Query&& query) {
  std::array<Perf, kCount> results{};
  int count = 0;
  TAAS_CUDNN_RETURN_IF_ERROR(query(static_cast<int>(results.size()), &count, results.data()), what);
  std::vector<ConvAlgorithm> ranked =
      RankPerfResults<Perf>(std::span<const Perf>(results.data(), static_cast<std::size_t>(count)));
  if (ranked.empty()) {
    return absl::InternalError(std::string(what) + ": cuDNN offers no algorithm for this shape " +
                               "within a workspace of " +
                               std::to_string(kMaxConvWorkspaceBytes >> 20) + " MiB");
  }
  return ranked;
}

}  // namespace

absl::StatusOr<std::vector<ConvAlgorithm>> RankConvAlgorithms(cudnnHandle_t handle,
                                                              ConvDirection direction,
                                                              const ConvDescriptors& d) {
  TAAS_CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv, kConvMath),
                             "cudnnSetConvolutionMathType");
  switch (direction) {
    case ConvDirection::kForward:
      return Ranked<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          "cudnnGetConvolutionForwardAlgorithm_v7", [&](int n, int* count, auto* results) {
            return cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, n, count,
                                                          results);
          });
    case ConvDirection::kBackwardData:
      return Ranked<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          "cudnnGetConvolutionBackwardDataAlgorithm_v7", [&](int n, int* count, auto* results) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w, d.y, d.conv, d.x, n,
                                                               count, results);
          });
    case ConvDirection::kBackwardFilter:
      return Ranked<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7", [&](int n, int* count, auto* results) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.x, d.y, d.conv, d.w, n,
                                                                 count, results);
          });
  }
  return absl::InternalError("unknown convolution direction");
}

absl::Status RunRanked(cudnnConvolutionDescriptor_t conv, std::span<const ConvAlgorithm> ranked,
                       std::size_t& chosen, const std::string& what,
                       const std::function<cudnnStatus_t(const ConvAlgorithm&)>& run) {
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  for (std::size_t i = chosen; i < ranked.size(); ++i) {
    last = cudnnSetConvolutionMathType(conv, ranked[i].math);
    if (last == CUDNN_STATUS_SUCCESS) last = run(ranked[i]);
    if (last == CUDNN_STATUS_SUCCESS) {
      chosen = i;
      return absl::OkStatus();
    }
    // A launch that failed may leave its error as the thread's last CUDA error: not the next's.
    (void)cudaGetLastError();
  }
  return CudnnStatus(last, what + ": none of the " + std::to_string(ranked.size() - chosen) +
                               " algorithms cuDNN ranked from the chosen one on ran");
}

}  // namespace taas::nn::cuda
