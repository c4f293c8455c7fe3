# C++ toolchain and the libraries the C++ build links (see README "Dependencies"). oneDNN's CMake
# package looks for OpenCL headers, which Debian only recommends, hence ocl-icd-opencl-dev.
# shellcheck shell=bash
need_debian_packages \
  g++ cmake ninja-build pkg-config ccache clang-format \
  libboost-dev libssl-dev zlib1g-dev \
  nlohmann-json3-dev libyaml-cpp-dev doctest-dev libabsl-dev \
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc \
  libdnnl-dev ocl-icd-opencl-dev libjpeg62-turbo-dev libpng-dev \
  dataset-fashion-mnist
