#!/usr/bin/env bash
# Gathers what the runtime images need from a finished build tree into one staging folder, the
# only thing the Dockerfile's runtime stages copy from the builder:
#   OUT/operator/bin/                   taas-operator, taas-ui                 (stripped)
#   OUT/operator/share/web-ui/          the built web UI (web-ui/dist)
#   OUT/operator/runtime-packages.txt   Debian runtime packages those binaries load
#   OUT/trainer/bin/                    the example trainers and the launcher  (stripped)
#   OUT/trainer/runtime-packages.txt    Debian runtime packages those binaries load
#   OUT/lib/                            shared libraries from the build tree, if any
#   OUT/cuda/lib/                       a CUDA build's NVIDIA libraries (TAAS_CUDA_LIB_ROOT below)
#   OUT/torch/lib/                      a torch build's LibTorch libraries (TAAS_TORCH_LIB_ROOT below)
# Fails naming the binary when a required one was not built.
#   scripts/packaging/stage-install.sh BUILD_DIR OUT
# Environment: TAAS_CUDA_LIB_ROOT, the toolkit folder a CUDA build took its libraries from (the
# wheels' nvidia/ folder): the libraries the trainers load from there are copied to OUT/cuda/lib,
# with those they open at run time without linking them (cuDNN's sub-libraries, NVRTC), for the
# trainer-cuda image; unset, such a library fails the staging as any unknown one does.
# TAAS_TORCH_LIB_ROOT, the LibTorch folder a build with the torch engine took LibTorch from
# ($TAAS_TORCH_DIR): the LibTorch trainer fashion-mnist-torch is staged too, and the libraries the
# trainers load from there (libtorch_cpu, libc10 and the CUDA runtime they need) go to
# OUT/torch/lib. LibTorch's CUDA backend (libtorch_cuda.so), which a torch replica opens when it
# first uses a GPU, and its CUDA libraries are not staged (docs/install.md).
# For tests: TAAS_WEB_UI_SRC (default <repo>/web-ui; the assets are its dist/),
# TAAS_OPERATOR_BINARIES, TAAS_TRAINER_BINARIES (space-separated names).
set -euo pipefail

[ $# -eq 2 ] || {
  echo "usage: $0 BUILD_DIR OUT" >&2
  exit 2
}
build="$(cd "$1" && pwd)"
out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
operator_binaries=(${TAAS_OPERATOR_BINARIES:-taas-operator taas-ui})
default_trainers="fashion-mnist-cnn fashion-mnist-mlp fashion-mnist-to-tfrecord taas"
[ -n "${TAAS_TORCH_LIB_ROOT:-}" ] && default_trainers+=" fashion-mnist-torch"
trainer_binaries=(${TAAS_TRAINER_BINARIES:-$default_trainers})
web_src="${TAAS_WEB_UI_SRC:-$root/web-ui}"
web_dist="$web_src/dist"
cuda_root=""
[ -n "${TAAS_CUDA_LIB_ROOT:-}" ] && cuda_root="$(readlink -f "$TAAS_CUDA_LIB_ROOT")"
torch_root=""
[ -n "${TAAS_TORCH_LIB_ROOT:-}" ] && torch_root="$(readlink -f "$TAAS_TORCH_LIB_ROOT")"

say() { printf 'stage-install: %s\n' "$*" >&2; }
fail() {
  say "error: $*"
  exit 1
}

# The one executable file called NAME in the build tree (CMake puts it beside its CMakeLists).
find_binary() {
  local name="$1" found
  mapfile -t found < <(find "$build" -type f -name "$name" -perm -u+x -not -path '*/CMakeFiles/*')
  [ ${#found[@]} -gt 0 ] || fail "'$name' was not built (no executable named $name under $build)"
  [ ${#found[@]} -eq 1 ] || fail "'$name' is ambiguous under $build: ${found[*]}"
  echo "${found[0]}"
}

rm -rf "$out"
# (torch/lib even when empty: the trainer images copy it whether or not the build had LibTorch.)
mkdir -p "$out/operator/bin" "$out/operator/share" "$out/trainer/bin" "$out/lib" "$out/torch/lib"
stage() { # NAME DEST_DIR
  local src
  src="$(find_binary "$1")"
  install -m 0755 "$src" "$2/$1"
  # Debug info stays in the builder; the runtime images carry stripped binaries.
  if command -v strip >/dev/null; then strip --strip-unneeded "$2/$1"; fi
  say "staged $1 from ${src#"$build"/}"
}
for name in "${operator_binaries[@]}"; do stage "$name" "$out/operator/bin"; done
for name in "${trainer_binaries[@]}"; do stage "$name" "$out/trainer/bin"; done

# The web UI: built by its own toolchain when the C++ build did not already produce it.
if [ ! -f "$web_dist/index.html" ] && [ -f "$web_src/package.json" ] && command -v npm >/dev/null; then
  say "building the web UI (npm run build)"
  (cd "$web_src" && { [ -d node_modules ] || npm ci --no-audit --no-fund >/dev/null; } &&
    npm run build >/dev/null) || fail "the web UI build failed (cd web-ui && npm run build)"
fi
[ -f "$web_dist/index.html" ] || fail "no web UI at $web_dist (index.html missing)"
cp -R "$web_dist" "$out/operator/share/web-ui"

# Each image installs only the packages its own binaries load.
for image in operator trainer; do
  "$here/runtime-packages.sh" "$out/$image/bin"/* >"$out/needs.txt"
  grep -v '^file:' "$out/needs.txt" >"$out/$image/runtime-packages.txt" || true
  while read -r lib; do
    case "$lib" in
      "$build"/*) cp -L "$lib" "$out/lib/" ;;
      *)
        real="$(readlink -f "$lib")"
        if [ -n "$torch_root" ] && [[ "$real" == "$torch_root"/* ]]; then
          dest="$out/torch/lib"
        elif [ -n "$cuda_root" ] && [[ "$real" == "$cuda_root"/* ]]; then
          dest="$out/cuda/lib"
        else
          fail "$lib is loaded by a staged binary but belongs to no Debian package and not to the build"
        fi
        mkdir -p "$dest"
        cp -L "$lib" "$dest/"
        ;;
    esac
  done < <(sed -n 's/^file://p' "$out/needs.txt")
  rm "$out/needs.txt"
  say "$image runtime packages: $(tr '\n' ' ' <"$out/$image/runtime-packages.txt")"
done
# What the NVIDIA libraries open by name at run time: cuDNN 9's libcudnn.so.9 is a front that
# loads its graph, ops, engine and heuristic libraries; cuDNN's runtime-compiled engines and
# cuBLAS load NVRTC and its builtins.
if [ -n "$cuda_root" ]; then
  [ -d "$out/cuda/lib" ] || fail "TAAS_CUDA_LIB_ROOT=$TAAS_CUDA_LIB_ROOT, but no staged trainer \
loads a library from there: was the build configured with TAAS_WITH_CUDA=ON?"
  opened=()
  [ -f "$out/cuda/lib/libcudnn.so.9" ] && opened+=('libcudnn_*.so.9')
  opened+=('libnvrtc.so.*' 'libnvrtc-builtins.so.*')
  for pattern in "${opened[@]}"; do
    while read -r lib; do
      cp -L "$lib" "$out/cuda/lib/"
    done < <(find "$cuda_root" -name "$pattern" \( -type f -o -type l \))
  done
  say "CUDA libraries: $(ls "$out/cuda/lib" | tr '\n' ' ')"
fi
if [ -n "$torch_root" ]; then
  [ -f "$out/torch/lib/libtorch_cpu.so" ] || fail "TAAS_TORCH_LIB_ROOT=$TAAS_TORCH_LIB_ROOT, but \
no staged trainer loads libtorch_cpu.so from there: was the build configured with TAAS_TORCH_ROOT?"
  say "LibTorch libraries: $(ls "$out/torch/lib" | tr '\n' ' ')"
fi
