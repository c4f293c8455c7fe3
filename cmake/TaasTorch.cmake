# LibTorch, the second model engine (trainer-runtime/torch, issue 34). Included by the top-level
# CMakeLists.txt after cmake/TaasCuda.cmake.
#
#   TAAS_TORCH_ROOT  a folder holding torch/ as the PyPI wheel lays it out (torch/include,
#                    torch/lib), e.g. the tool cache's $TAAS_TORCH_DIR, which scripts/lib/build.sh
#                    passes when scripts/setup.d/46-libtorch.sh installed it, or a Python
#                    site-packages with torch installed; empty: no torch engine.
#   TAAS_WITH_TORCH  after this file, ON when the engine is built: `if(TAAS_WITH_TORCH)`.
#   TAAS_LIBTORCH_VERSION  its version (the installed SDK's package asks for the same minor one).
#
# The target taas::libtorch comes from cmake/TaasLibTorch.cmake, which the SDK installs so that a
# user's project imports LibTorch the same way.
include(${CMAKE_CURRENT_LIST_DIR}/TaasLibTorch.cmake)
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
taas_import_libtorch(ROOT "${TAAS_TORCH_ROOT}" CUDA "${TAAS_WITH_CUDA}" ERROR_VARIABLE taas_torch_error)
if(taas_torch_error)
  message(FATAL_ERROR "TAAS_TORCH_ROOT=${taas_torch_error}: run scripts/setup.sh (it installs "
                      "LibTorch into ~/.cache/taas/libtorch-<version>), or configure with "
                      "-DTAAS_TORCH_ROOT=")
endif()
set(TAAS_WITH_TORCH ON)
message(STATUS "LibTorch ${TAAS_LIBTORCH_VERSION}: ${TAAS_TORCH_ROOT}/torch (CUDA: ${TAAS_WITH_CUDA})")
