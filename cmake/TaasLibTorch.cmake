# How taas imports LibTorch: the one definition that cmake/TaasTorch.cmake (this tree) and the
# installed SDK's package (sdk/taasConfig.cmake.in, `find_package(taas COMPONENTS torch)`) both
# use, installed beside the package as lib/cmake/taas/TaasLibTorch.cmake.
#
#   taas_import_libtorch(ROOT <dir> [CUDA <bool>] [VERSION <major.minor>] ERROR_VARIABLE <var>)
#
# ROOT is a folder holding torch/ as the PyPI wheel lays it out (torch/include, torch/lib): a
# Python site-packages with torch installed, or the tool cache's ~/.cache/taas/libtorch-<version>
# (scripts/setup.d/46-libtorch.sh). On success it makes the imported target taas::libtorch
# (LibTorch's headers, system headers as an imported target's are: not ours to keep warning-free;
# its CPU libraries, plus libc10_cuda (streams) when CUDA is true: libtorch_cuda.so, whose CUDA
# libraries (cuSPARSE, cuFFT, ...) a build machine lacks, is loaded only when a replica uses a GPU,
# trainer-runtime/torch/cuda/device_stream.cc), sets TAAS_LIBTORCH_VERSION
# (major.minor.patch, from the headers) in the caller's scope and the ERROR_VARIABLE to "". When
# ROOT holds no LibTorch, or one whose major.minor is not VERSION (LibTorch's C++ ABI changes
# between minor releases), the ERROR_VARIABLE says so and nothing is made: the tree stops with it,
# the package reports it as the reason the torch component is not found. The target is imported
# by hand rather than through the wheel's TorchConfig.cmake, which looks for a full CUDA toolkit
# (nvToolsExt, cuDNN, CUPTI) that a CPU build or the wheels' toolkit lacks.
function(taas_import_libtorch)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "ROOT;CUDA;VERSION;ERROR_VARIABLE" "")
  set(root "${arg_ROOT}")
  set(error_variable "${arg_ERROR_VARIABLE}")
  set(torch "${root}/torch")
  set(api "${torch}/include/torch/csrc/api/include")
  if(NOT EXISTS "${api}/torch/torch.h" OR NOT EXISTS "${torch}/lib/libtorch_cpu.so")
    set(${error_variable} "${root} holds no LibTorch (torch/include, torch/lib/libtorch_cpu.so)"
        PARENT_SCOPE)
    return()
  endif()
  # The version: torch/headeronly/version.h since 2.9, torch/version.h of the C++ API before.
  set(version "")
  foreach(header IN ITEMS "${torch}/include/torch/headeronly/version.h" "${api}/torch/version.h")
    if(version STREQUAL "" AND EXISTS "${header}")
      file(STRINGS "${header}" lines REGEX "^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
      string(REGEX REPLACE "#define TORCH_VERSION_[A-Z]+ " "" numbers "${lines}")
      string(REPLACE ";" "." version "${numbers}")
    endif()
  endforeach()
  if(NOT version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
    set(${error_variable} "${root}: no LibTorch version in torch/include (torch/version.h)"
        PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "." "\\." wanted "${arg_VERSION}")
  if(arg_VERSION AND NOT version MATCHES "^${wanted}\\.")
    set(${error_variable} "${root} holds LibTorch ${version}, not ${arg_VERSION}.x" PARENT_SCOPE)
    return()
  endif()
  if(NOT TARGET taas::libtorch)
    add_library(taas::libtorch INTERFACE IMPORTED GLOBAL)
    set(libraries "${torch}/lib/libtorch_cpu.so" "${torch}/lib/libc10.so")
    if(arg_CUDA)
      list(APPEND libraries "${torch}/lib/libc10_cuda.so")
    endif()
    set_target_properties(taas::libtorch PROPERTIES
                          INTERFACE_INCLUDE_DIRECTORIES "${torch}/include;${api}"
                          INTERFACE_LINK_LIBRARIES "${libraries}")
  endif()
  set(TAAS_LIBTORCH_VERSION "${version}" PARENT_SCOPE)
  set(${error_variable} "" PARENT_SCOPE)
endfunction()
