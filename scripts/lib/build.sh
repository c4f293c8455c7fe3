# Configures and builds the C++ tree into $TAAS_BUILD (default build/). Source, don't run.
# shellcheck shell=bash
TAAS_BUILD="${TAAS_BUILD:-$TAAS_ROOT/build}"
export TAAS_BUILD

# Configures $TAAS_BUILD with ccache; extra arguments go to cmake (the sanitizer trees pass the
# compiler and TAAS_SANITIZE).
taas_configure() {
  # ccache keeps rebuilds of a fresh clone (CI) fast; its cache lives beside the other caches.
  # BASEDIR and NOHASHDIR let a clone at another path (CI's fresh clone) hit the same cache.
  export CCACHE_DIR="${CCACHE_DIR:-$TAAS_CACHE/ccache}"
  export CCACHE_BASEDIR="$TAAS_ROOT" CCACHE_NOHASHDIR=1
  local launcher=()
  command -v ccache >/dev/null &&
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  # The CUDA build when the setup installed the CUDA wheels (scripts/setup.d/45-cuda.sh), which
  # scripts/test.sh's setup does and the main job's does not; the caller's arguments come last and
  # may turn it off (the sanitizer trees do).
  local cuda=()
  [ -f "$TAAS_CUDA_DIR/.taas-wheels" ] &&
    cuda=(-DTAAS_WITH_CUDA=ON "-DTAAS_CUDA_ROOT=$TAAS_CUDA_DIR/nvidia")
  # The torch engine when the setup installed LibTorch (scripts/setup.d/46-libtorch.sh); the
  # sanitizer trees leave it out (cmake/TaasTorch.cmake).
  local torch=()
  [ -f "$TAAS_TORCH_DIR/.taas-wheels" ] && torch=("-DTAAS_TORCH_ROOT=$TAAS_TORCH_DIR")
  cmake -S "$TAAS_ROOT" -B "$TAAS_BUILD" -G Ninja "${launcher[@]}" "${cuda[@]}" "${torch[@]}" "$@" \
    >/dev/null
}

# Builds the given targets (all when none are given): `taas_build`, `taas_build fashion_mnist_bench`.
taas_build() {
  taas_configure
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake --build "$TAAS_BUILD" "${targets[@]}" -- -j"$(nproc)"
}
