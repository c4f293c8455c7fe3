// The torch engine on CUDA devices: LibTorch's CUDA backend loaded on demand, its kernels on the
// runtime's compute stream.
#include "../device_stream.h"

#include <c10/core/Allocator.h>
#include <c10/cuda/CUDAStream.h>
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <string>

#include "taas/cuda/stream.h"

namespace taas::torch_engine {
namespace {

// libtorch_cuda.so from the folder that holds the libc10.so this process loaded (the wheel's
// torch/lib, or a GPU machine's PyTorch).
absl::Status LoadTorchCuda() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&::c10::GetAllocator), &info) == 0 ||
      info.dli_fname == nullptr) {
    return absl::InternalError("cannot find the folder of LibTorch's libc10.so (dladdr failed)");
  }
  const std::string path =
      (std::filesystem::path(info.dli_fname).parent_path() / "libtorch_cuda.so").string();
  if (::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* error = ::dlerror();
    return absl::FailedPreconditionError(
        "cannot load LibTorch's CUDA backend " + path + ": " + (error ? error : "unknown error") +
        " (a GPU machine's PyTorch, or the torch wheel with its nvidia-* packages, provides it)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadBackend(Device device) {
  if (device.type != DeviceType::kCuda) return absl::OkStatus();
  static std::once_flag once;
  static absl::Status loaded;
  std::call_once(once, [] { loaded = LoadTorchCuda(); });
  return loaded;
}

absl::Status UseComputeStream(Device device) {
  if (device.type != DeviceType::kCuda) return absl::OkStatus();
  TAAS_ASSIGN_OR_RETURN(cudaStream_t stream, cuda::ComputeStream(device.index));
  const auto index = static_cast<::c10::DeviceIndex>(device.index);
  ::c10::cuda::setCurrentCUDAStream(::c10::cuda::getStreamFromExternal(stream, index));
  return absl::OkStatus();
}

}  // namespace taas::torch_engine
