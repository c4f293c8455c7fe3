#include "taas/nn/compute.h"

#include <omp.h>

#include "taas/tensor/device.h"

namespace taas::nn {

void SetComputeThreads(int threads) {
  SetHostComputeThreads(threads);
  FollowComputeThreads();
}

// The setting is process-wide (taas::HostComputeThreads, 0: all cores) but OpenMP's is per
// thread, so every thread that calls oneDNN applies it before it does.
void FollowComputeThreads() {
  thread_local int applied = -1;
  const int wanted = HostComputeThreads();
  if (wanted == applied) return;
  omp_set_num_threads(wanted > 0 ? wanted : omp_get_num_procs());
  applied = wanted;
}

int ComputeThreads() {
  FollowComputeThreads();
  return omp_get_max_threads();
}

}  // namespace taas::nn
