# LibTorch, the second model engine (trainer-runtime/torch, issue 34). Included by the top-level
# CMakeLists.txt after cmake/TaasCuda.cmake.
#
#   TAAS_TORCH_ROOT  a folder holding torch/ as the PyPI wheel lays it out (torch/include,
#                    torch/lib), e.g. the tool cache's $TAAS_TORCH_DIR, which scripts/lib/build.sh
#                    passes when scripts/setup.d/46-libtorch.sh installed it, or a Python
#                    site-packages with torch installed; empty: no torch engine.
#   TAAS_WITH_TORCH  after this file, ON when the engine is built: `if(TAAS_WITH_TORCH)`.
#
# The target taas::libtorch: LibTorch's headers as system headers (they are not ours to keep
# warning-free) and its CPU libraries, plus its CUDA ones when taas is built with CUDA. It is
# imported by hand rather than through the wheel's TorchConfig.cmake, which looks for a full
# CUDA toolkit (nvToolsExt, cuDNN, CUPTI) that a CPU build or the wheels' toolkit lacks.
set(TAAS_TORCH_ROOT "" CACHE PATH "A folder holding torch/include and torch/lib (the torch wheel's layout); empty: no torch engine")
set(TAAS_WITH_TORCH OFF)
if(NOT TAAS_TORCH_ROOT)
  message(STATUS "LibTorch: TAAS_TORCH_ROOT is empty; the torch engine is not built")
  return()
endif()
if(TAAS_SANITIZE OR TAAS_FUZZ)
  # LibTorch is not built with the sanitizers; its engine is tested by the main tree.
  message(STATUS "LibTorch: not in the sanitizer and fuzz trees")
  return()
endif()
set(taas_torch "${TAAS_TORCH_ROOT}/torch")
if(NOT EXISTS "${taas_torch}/include/torch/csrc/api/include/torch/torch.h" OR
   NOT EXISTS "${taas_torch}/lib/libtorch_cpu.so")
  message(FATAL_ERROR "TAAS_TORCH_ROOT=${TAAS_TORCH_ROOT} holds no LibTorch (torch/include, "
                      "torch/lib/libtorch_cpu.so): run scripts/setup.sh (it installs LibTorch "
                      "into ~/.cache/taas/libtorch-<version>), or configure with -DTAAS_TORCH_ROOT=")
endif()
add_library(taas_libtorch INTERFACE)
add_library(taas::libtorch ALIAS taas_libtorch)
target_include_directories(taas_libtorch SYSTEM INTERFACE "${taas_torch}/include"
                           "${taas_torch}/include/torch/csrc/api/include")
target_link_libraries(taas_libtorch INTERFACE "${taas_torch}/lib/libtorch_cpu.so"
                      "${taas_torch}/lib/libc10.so")
if(TAAS_WITH_CUDA)
  target_link_libraries(taas_libtorch INTERFACE "${taas_torch}/lib/libtorch_cuda.so"
                        "${taas_torch}/lib/libc10_cuda.so")
  target_compile_definitions(taas_libtorch INTERFACE TAAS_TORCH_CUDA=1)
endif()
set(TAAS_WITH_TORCH ON)
message(STATUS "LibTorch: ${taas_torch} (CUDA: ${TAAS_WITH_CUDA})")
