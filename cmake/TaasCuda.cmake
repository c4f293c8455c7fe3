# The CUDA build (issue 17). Included by the top-level CMakeLists.txt after project().
#
#   TAAS_WITH_CUDA   AUTO (default): on when a CUDA compiler is found; ON: fail without one; OFF.
#                    After this file it is a plain ON/OFF variable: `if(TAAS_WITH_CUDA)`.
#   TAAS_CUDA_ROOT   a folder laid out as NVIDIA's Python wheels install (site-packages/nvidia:
#                    cu13/{bin,include,lib}, cudnn/, nccl/), e.g. the tool cache's
#                    ($TAAS_CUDA_DIR/nvidia, which scripts/lib/build.sh passes) or PyTorch's
#                    nvidia packages; empty: a system toolkit (nvcc on PATH, CUDACXX,
#                    /usr/local/cuda), with cuDNN and NCCL where the system keeps libraries.
#
# Targets for the CUDA code (trainer-runtime/cuda/, trainer-runtime/nn/cuda/): taas::cudart,
# taas::cublas, taas::cudnn, taas::nccl (headers and the shared library). Every CUDA source is
# compiled for Hopper (sm_90) and Ampere (sm_80), each with its PTX so newer devices JIT it, with
# nvcc's and the host compiler's warnings as errors. No GPU or driver is needed to build.
set(TAAS_WITH_CUDA AUTO CACHE STRING "Build the CUDA device: AUTO (when a toolkit is found), ON, OFF")
set_property(CACHE TAAS_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
set(TAAS_CUDA_ROOT "" CACHE PATH "NVIDIA's wheels' nvidia/ folder (cu13/, cudnn/, nccl/); empty: a system toolkit")

string(TOUPPER "${TAAS_WITH_CUDA}" taas_cuda_mode)
if(NOT taas_cuda_mode STREQUAL "AUTO")
  if(TAAS_WITH_CUDA)
    set(taas_cuda_mode ON)
  else()
    set(TAAS_WITH_CUDA OFF)
    return()
  endif()
endif()

if(TAAS_CUDA_ROOT)
  if(NOT EXISTS "${TAAS_CUDA_ROOT}/cu13/bin/nvcc")
    message(FATAL_ERROR "TAAS_CUDA_ROOT=${TAAS_CUDA_ROOT} has no cu13/bin/nvcc: point it at the "
                        "nvidia/ folder of the CUDA wheels (scripts/setup.sh installs them), or "
                        "leave it empty for a system toolkit")
  endif()
  set(CMAKE_CUDA_COMPILER "${TAAS_CUDA_ROOT}/cu13/bin/nvcc" CACHE FILEPATH "CUDA compiler" FORCE)
endif()
# Looks once (a NOTFOUND is kept in the cache: a build without CUDA pays for the look only on its
# first configure); a toolkit installed later is found through TAAS_CUDA_ROOT or CMAKE_CUDA_COMPILER.
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(taas_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "TAAS_WITH_CUDA=ON but no CUDA compiler was found: run scripts/setup.sh "
                        "(it installs the CUDA wheels into ~/.cache/taas/cuda-<version>), pass "
                        "-DTAAS_CUDA_ROOT=<site-packages>/nvidia or -DCMAKE_CUDA_COMPILER=<nvcc>, "
                        "or configure with -DTAAS_WITH_CUDA=OFF")
  endif()
  message(STATUS "CUDA: no toolkit found; the GPU path is not built (TAAS_WITH_CUDA=AUTO)")
  set(TAAS_WITH_CUDA OFF)
  return()
endif()
if(NOT EXISTS "${CMAKE_CUDA_COMPILER}")
  message(FATAL_ERROR "the CUDA compiler ${CMAKE_CUDA_COMPILER} this build was configured with is "
                      "gone: rerun scripts/setup.sh, or delete ${CMAKE_BINARY_DIR}")
endif()

# Hopper and one older architecture (Ampere): the GPU machines' and the common ones'.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90 80)
endif()
# The runtime comes from taas::cudart (the shared one cuBLAS, cuDNN and NCCL use beside ours), not
# from CMake's -lcudart: the wheels hold only libcudart.so.13.
set(CMAKE_CUDA_RUNTIME_LIBRARY None)
enable_language(CUDA)
set(TAAS_WITH_CUDA ON)
# C++20 in .cu files as in the rest: CMake 3.25 (Debian 12's) knows nvcc's flags only up to C++17,
# and nvcc 12 and later takes -std=c++20.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)

# Objects name no checkout or build folder, as the C++ ones (the top CMakeLists.txt): the host
# compiler nvcc runs writes the build folder as the debug info's compilation directory otherwise,
# which the installed SDK's CUDA archives would carry into a user's binary (tests/sdk).
add_compile_options(
  "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffile-prefix-map=${CMAKE_SOURCE_DIR}=.>"
  "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffile-prefix-map=${CMAKE_BINARY_DIR}=build>")
# nvcc's own diagnostics and the host compiler's on the code it passes through, as errors.
add_compile_options(
  "$<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings;-Xcompiler=-Wall,-Wextra>"
  "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${TAAS_WERROR}>>:-Xcompiler=-Werror>")

# The libraries, from where the toolkit keeps them (the wheels' layout, then a system toolkit's,
# then the system's library folders, where Debian's and NVIDIA's packages put cuDNN and NCCL):
# cmake/TaasCudaLibraries.cmake, which the installed SDK's package uses the same way.
include(${CMAKE_CURRENT_LIST_DIR}/TaasCudaLibraries.cmake)
get_filename_component(taas_cuda_toolkit "${CMAKE_CUDA_COMPILER}" DIRECTORY)
get_filename_component(taas_cuda_toolkit "${taas_cuda_toolkit}" DIRECTORY)
set(taas_cuda_hints "${taas_cuda_toolkit}")
if(TAAS_CUDA_ROOT)
  list(PREPEND taas_cuda_hints "${TAAS_CUDA_ROOT}/cu13" "${TAAS_CUDA_ROOT}/cudnn"
       "${TAAS_CUDA_ROOT}/nccl")
endif()
taas_import_cuda_libraries(HINTS ${taas_cuda_hints} ERROR_VARIABLE taas_cuda_error)
if(taas_cuda_error)
  message(FATAL_ERROR "${taas_cuda_error}, beside ${CMAKE_CUDA_COMPILER}: run scripts/setup.sh, "
                      "pass -DTAAS_CUDA_ROOT=<site-packages>/nvidia, or configure with "
                      "-DTAAS_WITH_CUDA=OFF")
endif()
foreach(taas_cuda_library IN ITEMS cudart cublas cudnn nccl)
  get_target_property(taas_cuda_location taas::${taas_cuda_library} IMPORTED_LOCATION)
  message(STATUS "CUDA: taas::${taas_cuda_library} = ${taas_cuda_location}")
endforeach()
message(STATUS "CUDA: ${CMAKE_CUDA_COMPILER} ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
               "${CMAKE_CUDA_ARCHITECTURES}")

# A `gpu` test: like taas_add_test, with a main (trainer-runtime/cuda/gpu_test_main.cc) that
# reports the test skipped (exit 77, ctest's SKIP_RETURN_CODE) when no CUDA device is visible, as
# on the build machines; label `gpu`, not `unit` (the sanitizer trees have no CUDA).
function(taas_add_gpu_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE taas_cuda_test_main ${ARG_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  if(ARG_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
