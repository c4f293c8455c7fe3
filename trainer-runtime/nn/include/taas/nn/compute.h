// The CPU compute device that layers run on: one oneDNN engine and one in-order stream.
//
// Passed explicitly to every layer (no global engine). oneDNN threads with OpenMP over all cores
// of the process; a ComputeContext and its layers are used from one thread at a time.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace taas::nn {

// Sets how many threads oneDNN uses for the primitives and sgemm calls of every thread of the
// process, those started later included (several model replicas, each on its own thread, train
// with the setting their build_model chose on the main thread); 0 means all cores. The runtime
// has already chosen from TAAS_COMPUTE_THREADS or the CPUs the process may use
// (taas::SetHostComputeThreads); call this only to override that choice. On a busy machine one
// thread can be much faster than two: a preempted thread stalls every barrier.
void SetComputeThreads(int threads);
// Applies that setting to the calling thread (OpenMP's nthreads is per thread); layers call it
// before they compute, through ComputeContext::stream() or directly.
void FollowComputeThreads();
// The threads oneDNN calls from this thread will use.
int ComputeThreads();

class ComputeContext {
 public:
  ComputeContext() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}
  ComputeContext(const ComputeContext&) = delete;
  ComputeContext& operator=(const ComputeContext&) = delete;

  dnnl::engine& engine() { return engine_; }
  dnnl::stream& stream() {
    FollowComputeThreads();
    return stream_;
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
};

}  // namespace taas::nn
