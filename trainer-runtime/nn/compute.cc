#include "taas/nn/compute.h"

#include <omp.h>

#include <atomic>

namespace taas::nn {
namespace {

// The process-wide setting (0: all cores). OpenMP's own setting is per thread, so every thread
// that calls oneDNN applies this one before it does (FollowComputeThreads).
std::atomic<int> compute_threads{0};

}  // namespace

void SetComputeThreads(int threads) {
  compute_threads.store(threads > 0 ? threads : 0, std::memory_order_relaxed);
  FollowComputeThreads();
}

void FollowComputeThreads() {
  thread_local int applied = -1;
  const int wanted = compute_threads.load(std::memory_order_relaxed);
  if (wanted == applied) return;
  omp_set_num_threads(wanted > 0 ? wanted : omp_get_num_procs());
  applied = wanted;
}

int ComputeThreads() {
  FollowComputeThreads();
  return omp_get_max_threads();
}

}  // namespace taas::nn
