#include "taas/nn/compute.h"

#include <omp.h>

namespace taas::nn {

void SetComputeThreads(int threads) {
  omp_set_num_threads(threads > 0 ? threads : omp_get_num_procs());
}

int ComputeThreads() { return omp_get_max_threads(); }

}  // namespace taas::nn
