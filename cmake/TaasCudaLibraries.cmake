# How taas imports the CUDA libraries its GPU code links: the one definition that
# cmake/TaasCuda.cmake (this tree) and the installed SDK's package (sdk/taasConfig.cmake.in,
# `find_package(taas COMPONENTS cuda)`) both use, installed beside the package as
# lib/cmake/taas/TaasCudaLibraries.cmake.
#
#   taas_import_cuda_libraries(HINTS <dir>... ERROR_VARIABLE <var>)
#
# HINTS are folders to look in first, each holding include/ and lib/: the CUDA wheels' nvidia/cu13,
# nvidia/cudnn and nvidia/nccl (the tool cache's, or PyTorch's: the same layout), or a toolkit's
# root; after them the system's folders, where Debian's and NVIDIA's packages put cuDNN and NCCL.
# On success it makes the imported targets taas::cudart, taas::cublas (with its Lt half, which
# cuBLAS loads at run time), taas::cudnn and taas::nccl, each with its headers and shared library,
# and sets the ERROR_VARIABLE to ""; otherwise the ERROR_VARIABLE names what is missing and nothing
# is made. Versioned names first: the wheels hold only libcudart.so.13 and its kind. Nothing is
# cached, so a changed HINTS is looked at afresh.
function(taas_import_cuda_libraries)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "ERROR_VARIABLE" "HINTS")
  set(error_variable "${arg_ERROR_VARIABLE}")
  set(suffixes_include include targets/x86_64-linux/include)
  set(suffixes_lib lib lib64 targets/x86_64-linux/lib)
  set(found "")
  foreach(spec IN ITEMS "cudart|cuda_runtime.h|libcudart.so.13;cudart"
                        "cublas|cublas_v2.h|libcublas.so.13;cublas"
                        "cudnn|cudnn.h|libcudnn.so.9;cudnn"
                        "nccl|nccl.h|libnccl.so.2;nccl")
    string(REPLACE "|" ";" fields "${spec}")
    list(GET fields 0 name)
    list(GET fields 1 header)
    list(SUBLIST fields 2 -1 libraries)
    # (A find_* whose variable is set does not look again.)
    unset(include_dir)
    unset(library)
    find_path(include_dir ${header} HINTS ${arg_HINTS} PATH_SUFFIXES ${suffixes_include} NO_CACHE)
    find_library(library NAMES ${libraries} HINTS ${arg_HINTS} PATH_SUFFIXES ${suffixes_lib}
                 NO_CACHE)
    if(NOT include_dir OR NOT library)
      set(${error_variable} "CUDA's ${name} not found (${header}: ${include_dir}; library: "
          "${library}) in ${arg_HINTS} or the system's folders" PARENT_SCOPE)
      return()
    endif()
    list(APPEND found "${name}|${include_dir}|${library}")
  endforeach()
  find_library(cublas_lt NAMES libcublasLt.so.13 cublasLt HINTS ${arg_HINTS}
               PATH_SUFFIXES ${suffixes_lib} NO_CACHE)
  if(NOT cublas_lt)
    set(${error_variable} "CUDA's cublasLt (libcublasLt.so.13) not found in ${arg_HINTS} or the "
        "system's folders" PARENT_SCOPE)
    return()
  endif()
  foreach(entry IN LISTS found)
    string(REPLACE "|" ";" fields "${entry}")
    list(GET fields 0 name)
    list(GET fields 1 include_dir)
    list(GET fields 2 library)
    if(NOT TARGET taas::${name})
      add_library(taas::${name} SHARED IMPORTED GLOBAL)
      set_target_properties(taas::${name} PROPERTIES IMPORTED_LOCATION "${library}"
                            INTERFACE_INCLUDE_DIRECTORIES "${include_dir}")
      if(NOT name STREQUAL "cudart")
        set_property(TARGET taas::${name} APPEND PROPERTY INTERFACE_LINK_LIBRARIES taas::cudart)
      endif()
      if(name STREQUAL "cublas")
        set_property(TARGET taas::cublas APPEND PROPERTY INTERFACE_LINK_LIBRARIES "${cublas_lt}")
      endif()
    endif()
  endforeach()
  set(${error_variable} "" PARENT_SCOPE)
endfunction()
