// The NCCL backend on the GPUs this process sees: one member per GPU, each on its own thread,
// formed over an in-process group as the runtime forms it. Values are small integers, so every
// sum is exact in float and must equal the CPU's sum bit for bit; a mean (ncclAvg multiplies by
// 1/n before summing) is compared within 1e-6 relative.
#include "taas/cuda/nccl_collective.h"

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include "taas/collective/in_process.h"
#include "taas/cuda/stream.h"
#include "taas/cuda/testing.h"

namespace taas::cuda {
namespace {

using collective::Collective;
using collective::ReduceOp;

// The value member `m` contributes at element `i`.
float Value(int m, std::size_t i) { return static_cast<float>(static_cast<int>(i % 97) - 48 + m); }

// A float buffer in the memory of one GPU.
class DeviceFloats {
 public:
  DeviceFloats(int device, std::size_t n) : device_(device), n_(n) {
    REQUIRE(cudaSetDevice(device) == cudaSuccess);
    REQUIRE(cudaMalloc(&data_, std::max<std::size_t>(n, 1) * sizeof(float)) == cudaSuccess);
  }
  ~DeviceFloats() { cudaFree(data_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;

  std::span<float> span() { return {static_cast<float*>(data_), n_}; }
  float* data() { return static_cast<float*>(data_); }
  // Finished on return: from pageable memory cudaMemcpy may return before its DMA is done, and
  // the legacy stream it runs on does not order the members' non-blocking streams after it.
  void Set(const std::vector<float>& values) {
    REQUIRE(cudaSetDevice(device_) == cudaSuccess);
    REQUIRE(cudaMemcpy(data_, values.data(), n_ * sizeof(float), cudaMemcpyHostToDevice) ==
            cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  }
  std::vector<float> Get() const {
    std::vector<float> out(n_);
    REQUIRE(cudaMemcpy(out.data(), data_, n_ * sizeof(float), cudaMemcpyDeviceToHost) ==
            cudaSuccess);
    return out;
  }

 private:
  int device_;
  void* data_ = nullptr;
  std::size_t n_;
};

// Forms a group of `members` (one per GPU, member m on cuda:m, on a stream of its own or, as the
// runtime forms it, on the device's compute stream) and runs `body` on each member's thread with
// its NCCL collective; returns what each body returned.
std::vector<std::string> OnEveryGpu(
    int members, const std::function<std::string(collective::DeviceCollective&, int)>& body,
    double timeout_secs = 60, bool on_compute_stream = false) {
  collective::InProcessOptions options;
  options.members = members;
  options.timeout_secs = timeout_secs;
  auto group = collective::InProcessGroup::Create(std::move(options));
  REQUIRE(group.ok());
  std::vector<std::string> results(static_cast<std::size_t>(members));
  std::vector<std::thread> threads;
  for (int m = 0; m < members; ++m) {
    threads.emplace_back([&, m] {
      NcclOptions nccl;
      nccl.device = m;
      nccl.timeout_secs = timeout_secs;
      if (on_compute_stream) nccl.stream = ComputeStream(m).value();
      auto member = ConnectNccl((*group)->member(m), nccl);
      results[static_cast<std::size_t>(m)] =
          member.ok() ? body(**member, m) : "connect: " + member.status().ToString();
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

std::string Check(bool ok, const std::string& what) { return ok ? "" : what; }

// What every member must hold after a sum (or mean) of `members` members' Values.
std::vector<float> Expected(int members, std::size_t n, ReduceOp op) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    float sum = 0;
    for (int m = 0; m < members; ++m) sum += Value(m, i);
    out[i] = op == ReduceOp::kSum ? sum : sum / static_cast<float>(members);
  }
  return out;
}

// A mean's terms are at most 64 in magnitude: each of the `members` roundings of x/n and of the
// sum costs at most 64 * 2^-24 or so.
std::string Compare(const std::vector<float>& got, const std::vector<float>& want, ReduceOp op,
                    int members = 1) {
  const float tolerance = 1e-5f * static_cast<float>(members);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool same =
        op == ReduceOp::kSum ? got[i] == want[i] : std::fabs(got[i] - want[i]) <= tolerance;
    if (!same) {
      return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
    }
  }
  return "";
}

TEST_CASE("NCCL all-reduce of device buffers across the GPUs present equals the CPU's sum") {
  const int gpus = VisibleGpus();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 22) + 3}) {
      CAPTURE(n);
      const auto results =
          OnEveryGpu(gpus, [&](collective::DeviceCollective& nccl, int m) -> std::string {
            if (nccl.rank() != m || nccl.size() != gpus) return "rank/size " + nccl.Describe();
            DeviceFloats data(m, n);
            std::vector<float> mine(n);
            for (std::size_t i = 0; i < n; ++i) mine[i] = Value(m, i);
            data.Set(mine);
            absl::Status status = nccl.AllReduce(data.span(), op).Wait();
            if (!status.ok()) return status.ToString();
            return Compare(data.Get(), Expected(gpus, n, op), op, gpus);
          });
      for (const auto& r : results) CHECK(r == "");
    }
  }
}

TEST_CASE("NCCL all-reduce of host buffers, several in flight, finishes each in issue order") {
  const int gpus = VisibleGpus();
  const auto results =
      OnEveryGpu(gpus, [&](collective::DeviceCollective& nccl, int m) -> std::string {
        // Buckets as the runtime issues them: all at once, then waited for in order.
        std::vector<std::vector<float>> buckets;
        for (std::size_t n :
             {std::size_t{3}, std::size_t{70000}, std::size_t{1} << 20, std::size_t{5}}) {
          buckets.emplace_back(n);
          for (std::size_t i = 0; i < n; ++i) buckets.back()[i] = Value(m, i);
        }
        std::vector<collective::Handle> handles;
        for (auto& b : buckets) handles.push_back(nccl.AllReduce(b, ReduceOp::kSum));
        for (std::size_t b = 0; b < buckets.size(); ++b) {
          absl::Status status = handles[b].Wait();
          if (!status.ok()) return status.ToString();
          std::string diff = Compare(buckets[b], Expected(gpus, buckets[b].size(), ReduceOp::kSum),
                                     ReduceOp::kSum);
          if (!diff.empty()) return "bucket " + std::to_string(b) + ": " + diff;
        }
        // The runtime's barrier and control values are host floats too.
        absl::Status barrier = nccl.Barrier();
        return barrier.ok() ? "" : barrier.ToString();
      });
  for (const auto& r : results) CHECK(r == "");
}

// A host function that holds its stream until `release` (a std::atomic<bool>) is set: work
// enqueued behind it cannot have run before.
void CUDART_CB HoldStream(void* release) {
  auto& flag = *static_cast<std::atomic<bool>*>(release);
  while (!flag.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

TEST_CASE(
    "on the compute stream AwaitOnDevice returns before the all-reduce ran; later work "
    "sees its result") {
  const int gpus = VisibleGpus();
  const std::size_t n = 4099;
  const auto results = OnEveryGpu(
      gpus,
      [&](collective::DeviceCollective& nccl, int m) -> std::string {
        const cudaStream_t stream = ComputeStream(m).value();
        DeviceFloats data(m, n), later(m, n);
        std::vector<float> mine(n);
        for (std::size_t i = 0; i < n; ++i) mine[i] = Value(m, i);
        data.Set(mine);
        // The communicator's connections are made by a first operation, waited for.
        std::vector<float> warm(1, 1.0f);
        if (absl::Status s = nccl.AllReduce(warm, ReduceOp::kSum).Wait(); !s.ok()) {
          return s.ToString();
        }
        std::atomic<bool> release{false};
        // Releases the stream after 10 s if AwaitOnDevice waits on the host (it would never
        // return otherwise): the elapsed time below then fails the test.
        std::thread watchdog([&] {
          for (int i = 0; i < 1000 && !release; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          release = true;
        });
        if (cudaLaunchHostFunc(stream, HoldStream, &release) != cudaSuccess) {
          release = true;
          watchdog.join();
          return "cudaLaunchHostFunc failed";
        }
        const auto start = std::chrono::steady_clock::now();
        collective::Handle handle = nccl.AllReduce(data.span(), ReduceOp::kSum);
        const absl::Status awaited = nccl.AwaitOnDevice(handle);
        const auto awaited_after = std::chrono::steady_clock::now() - start;
        // The device's later work, on the same stream: a copy of the reduced buffer.
        const cudaError_t copied = cudaMemcpyAsync(later.data(), data.data(), n * sizeof(float),
                                                   cudaMemcpyDeviceToDevice, stream);
        release = true;
        watchdog.join();
        const absl::Status waited = handle.Wait();
        if (!awaited.ok() || !waited.ok() || copied != cudaSuccess) {
          return awaited.ToString() + " / " + waited.ToString();
        }
        if (cudaStreamSynchronize(stream) != cudaSuccess) return "cudaStreamSynchronize failed";
        return Check(awaited_after < std::chrono::seconds(5),
                     "AwaitOnDevice waited for the held stream") +
               Compare(later.Get(), Expected(gpus, n, ReduceOp::kSum), ReduceOp::kSum);
      },
      /*timeout_secs=*/60, /*on_compute_stream=*/true);
  for (const auto& r : results) CHECK(r == "");
}

TEST_CASE("AwaitOnDevice of a host-buffer operation waits for its result in the buffer") {
  const int gpus = VisibleGpus();
  for (bool on_compute_stream : {false, true}) {
    CAPTURE(on_compute_stream);
    const auto results = OnEveryGpu(
        gpus,
        [&](collective::DeviceCollective& nccl, int m) -> std::string {
          std::vector<float> host(70000);
          for (std::size_t i = 0; i < host.size(); ++i) host[i] = Value(m, i);
          absl::Status status = nccl.AwaitOnDevice(nccl.AllReduce(host, ReduceOp::kSum));
          if (!status.ok()) return status.ToString();
          return Compare(host, Expected(gpus, host.size(), ReduceOp::kSum), ReduceOp::kSum);
        },
        /*timeout_secs=*/60, on_compute_stream);
    for (const auto& r : results) CHECK(r == "");
  }
}

TEST_CASE("NCCL broadcast copies the root's bytes to every member, device and host buffers") {
  const int gpus = VisibleGpus();
  for (int root = 0; root < gpus; ++root) {
    const auto results =
        OnEveryGpu(gpus, [&](collective::DeviceCollective& nccl, int m) -> std::string {
          const std::size_t n = 4099;
          std::vector<float> host(n), want(n);
          for (std::size_t i = 0; i < n; ++i) {
            host[i] = Value(m, i);
            want[i] = Value(root, i);
          }
          DeviceFloats device(m, n);
          device.Set(host);
          auto on_device = nccl.Broadcast(collective::AsBytes(device.span()), root);
          auto on_host = nccl.Broadcast(collective::AsBytes(std::span(host)), root);
          for (auto* handle : {&on_device, &on_host}) {
            absl::Status status = handle->Wait();
            if (!status.ok()) return status.ToString();
          }
          return Check(device.Get() == want, "device buffer differs from the root's") +
                 Check(host == want, "host buffer differs from the root's");
        });
    for (const auto& r : results) CHECK(r == "");
  }
  const auto bad_root = OnEveryGpu(1, [](collective::DeviceCollective& nccl, int) -> std::string {
    float x = 0;
    absl::Status status = nccl.Broadcast(collective::AsBytes(std::span(&x, 1)), 1).Wait();
    return Check(absl::IsInvalidArgument(status), "root 1 of 1: " + status.ToString());
  });
  CHECK(bad_root[0] == "");
}

TEST_CASE("a buffer on another GPU is refused, and the group stays usable") {
  if (VisibleGpus() < 2) {
    MESSAGE("needs 2 GPUs");
    return;
  }
  const auto results = OnEveryGpu(1, [](collective::DeviceCollective& nccl, int) -> std::string {
    DeviceFloats other(1, 8);
    absl::Status status = nccl.AllReduce(other.span(), ReduceOp::kSum).Wait();
    if (!absl::IsInvalidArgument(status) ||
        status.message().find("cuda:1") == std::string_view::npos) {
      return "other GPU's buffer: " + status.ToString();
    }
    return Check(nccl.Barrier().ok(), "barrier after the refusal failed");
  });
  CHECK(results[0] == "");
}

TEST_CASE("Abort fails the operations after it with its status") {
  const auto results = OnEveryGpu(1, [](collective::DeviceCollective& nccl, int) -> std::string {
    nccl.Abort(absl::UnavailableError("replica 1 failed"));
    nccl.Abort(absl::InternalError("a second abort does not replace the first"));
    float x = 1;
    absl::Status status = nccl.AllReduce(std::span(&x, 1), ReduceOp::kSum).Wait();
    return Check(absl::IsUnavailable(status) && status.message() == "replica 1 failed",
                 status.ToString());
  });
  CHECK(results[0] == "");
}

TEST_CASE("a member that never takes part fails the others' wait after the timeout") {
  if (VisibleGpus() < 2) {
    MESSAGE("needs 2 GPUs");
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  std::atomic<bool> waited{false};
  const auto results = OnEveryGpu(
      2,
      [&](collective::DeviceCollective& nccl, int m) -> std::string {
        if (m == 1) {
          // Joined, then issues nothing, and stays (leaving would look like a lost peer).
          while (!waited && std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          return "";
        }
        DeviceFloats data(m, 1000);
        absl::Status status = nccl.AllReduce(data.span(), ReduceOp::kSum).Wait();
        waited = true;
        return Check(absl::IsDeadlineExceeded(status) &&
                         status.message().find("all-reduce of 1000 floats") != std::string::npos,
                     status.ToString());
      },
      /*timeout_secs=*/3);
  CHECK(results[0] == "");
  CHECK(results[1] == "");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("RegisterNcclCollective makes NCCL the runtime's collective for CUDA replicas") {
  RegisterNcclCollective();
  const bool cuda = collective::DeviceCollectiveFor(DeviceType::kCuda) != nullptr;
  const bool cpu = collective::DeviceCollectiveFor(DeviceType::kCpu) != nullptr;
  CHECK(cuda);
  CHECK_FALSE(cpu);
}

TEST_CASE("ConnectNccl refuses a GPU the process does not see and a timeout of 0") {
  auto group = collective::InProcessGroup::Create({});
  REQUIRE(group.ok());
  NcclOptions options;
  options.device = VisibleGpus();
  auto missing = ConnectNccl((*group)->member(0), options);
  CHECK(absl::IsFailedPrecondition(missing.status()));
  options.device = 0;
  options.timeout_secs = 0;
  CHECK(absl::IsInvalidArgument(ConnectNccl((*group)->member(0), options).status()));
}

}  // namespace
}  // namespace taas::cuda
