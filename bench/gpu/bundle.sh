#!/usr/bin/env bash
# Builds the GPU proof's bundle (bench/gpu/README.md): a folder of at most 60 MiB that a machine
# with GPUs runs in one call (its run.sh), with nothing installed there but the NVIDIA driver and
# a python3 with PyTorch 2.11 and its CUDA 13 wheels: no compiler, no Debian packages, no network.
#
#   bench/gpu/bundle.sh [OUT]          # OUT: build/gpu-bundle
#
# OUT holds bin/ (fashion-mnist-cnn, fashion-mnist-torch: the torch engine's models, gpu_bench),
# tests/ (the `gpu` tests) and lib/ (every shared library they load except the base C/C++
# runtime, the driver, the CUDA runtime, cuBLAS, cuDNN and NCCL, whose names it writes to
# `cuda-libraries` for run.sh to find in the machine's wheels, and LibTorch (libtorch*, libc10*,
# ~900 MB), whose names it writes to `torch-libraries` for run.sh to find in the machine's
# PyTorch, the same torch==2.11.0 wheel scripts/setup.d/46-libtorch.sh unpacks here), each file
# xz-compressed (run.sh unpacks them), data/ (Fashion-MNIST's four files), run.sh, table.py,
# torch_cnn.py and torch_peer.py (bench/torch's ResNet, which torch_cnn.py imports). The binaries
# come from a tree of their own (TAAS_BUNDLE_BUILD, build-gpu-bundle/) configured as build/ but
# for sm_90 SASS alone (no PTX: a newer nvcc's PTX would not load on the machines' 13.0 driver)
# and with RPATH $ORIGIN/../lib (DT_RPATH, which also serves the bundled libraries' own
# dependencies); its C++ objects are build/'s, from ccache. It checks that every binary's
# libraries resolve in the bundle, in the base runtime, in the CUDA wheels or in LibTorch, and
# that `env -i run.sh --self-check` runs the bundle's CPU parts with an empty environment (ctest's
# gpu_bundle runs this script).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
TAAS_BUILD="${TAAS_BUNDLE_BUILD:-$TAAS_ROOT/build-gpu-bundle}"
source "$TAAS_ROOT/scripts/lib/build.sh"
OUT="$(realpath -m "${1:-$TAAS_ROOT/build/gpu-bundle}")"
MAX_MIB=60
DATA=/usr/share/datasets/fashion-mnist  # data::kFashionMnistDir
# What the machine's own C/C++ runtime provides (and the kernel's vDSO).
BASE_LIBRARIES=" linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libstdc++.so.6 \
libgcc_s.so.1 libpthread.so.0 libdl.so.2 librt.so.1 "
DRIVER=libcuda.so.1
WHEELS="$TAAS_CUDA_DIR/nvidia"
TORCH_LIB="$TAAS_TORCH_DIR/torch/lib"

[ -f "$TAAS_CUDA_DIR/.taas-wheels" ] ||
  die "no CUDA wheels in $TAAS_CUDA_DIR: scripts/setup.sh installs them (setup.d/45-cuda.sh)"
[ -f "$TAAS_TORCH_DIR/.taas-wheels" ] ||
  die "no LibTorch in $TAAS_TORCH_DIR: scripts/setup.sh installs it (setup.d/46-libtorch.sh)"
for tool in strip objdump xz ldd; do
  need_command "$tool" "it is part of binutils, xz-utils and libc-bin"
done
[ -f "$DATA/t10k-labels-idx1-ubyte.gz" ] ||
  die "no Fashion-MNIST in $DATA: apt-get install dataset-fashion-mnist"
start=$SECONDS
phase_start gpu-bundle/build  # its tree's build, a phase (scripts/lib/common.sh)
work="$(mktemp -d "${TMPDIR:-/tmp}/taas-gpu-bundle-XXXXXX")"
trap 'rm -rf "$work" "$OUT.partial"' EXIT

# --- build ---------------------------------------------------------------------------------------
log "configuring $TAAS_BUILD (sm_90 SASS only, RPATH \$ORIGIN/../lib)"
taas_configure -DCMAKE_CUDA_ARCHITECTURES=90-real -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
  '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags
mapfile -t tests < <(ctest --test-dir "$TAAS_BUILD" -N -L gpu | sed -n 's/^ *Test *#[0-9]*: //p')
[ ${#tests[@]} -gt 0 ] || die "$TAAS_BUILD lists no test labelled gpu: is TAAS_WITH_CUDA on?"
tools=(fashion-mnist-cnn fashion-mnist-torch gpu_bench)
log "building ${tools[*]} ${tests[*]}"
cmake --build "$TAAS_BUILD" --target "${tools[@]}" "${tests[@]}" -- -j"$(nproc)" \
  >"$work/build.log" ||
  { tail -n 40 "$work/build.log" >&2; die "the bundle's build failed (above)"; }
phase_end gpu-bundle/build

# --- assemble: stripped binaries and the libraries they load, in $stage ------------------------
stage="$work/stage"
mkdir -p "$stage"/{bin,tests,lib}
executable() {
  find "$TAAS_BUILD" -name "$1" -type f -perm -u+x -print -quit | grep . ||
    die "$1 was not built in $TAAS_BUILD"
}
for name in "${tools[@]}"; do strip --strip-all -o "$stage/bin/$name" "$(executable "$name")"; done
for name in "${tests[@]}"; do
  strip --strip-all -o "$stage/tests/$name" "$(executable "$name")"
done

# `soname path` for every library a binary loads, as the loader resolves it with the bundle's
# libraries first, then the CUDA wheels', then LibTorch's (as run.sh sets LD_LIBRARY_PATH);
# "not found" for a library it cannot find. LibTorch's folder is searched only for a binary that
# links LibTorch: its libgomp would otherwise stand in for the system's that oneDNN is built with.
cuda_path="$(printf '%s:' "$WHEELS"/*/lib)"
closure() {
  local soname path torch_path=""
  objdump -p "$1" | grep -E 'NEEDED +(libc10|libtorch)' >/dev/null && torch_path="$TORCH_LIB"
  LD_LIBRARY_PATH="$stage/lib:$cuda_path$torch_path" ldd "$1" |
    sed -n 's/^\t*\(\S*\) => \(not found\|\S*\).*/\1 \2/p' |
    while read -r soname path; do
      [ "$path" = "not found" ] || path="$(realpath -m "$path")"  # $ORIGIN/../lib's ".."
      echo "$soname $path"
    done
}
base_or_driver() { [[ "$BASE_LIBRARIES" == *" $1 "* ]] || [ "$1" = "$DRIVER" ]; }
: >"$work/cuda-libraries"
for binary in "$stage"/bin/* "$stage"/tests/*; do
  while read -r soname path; do
    base_or_driver "$soname" && continue
    [ "$path" != "not found" ] || die "$(basename "$binary") needs $soname, which is nowhere here"
    if [[ "$path" == "$TAAS_CUDA_DIR"/* ]]; then
      echo "$soname" >>"$work/cuda-libraries"
    elif [[ "$path" == "$TAAS_TORCH_DIR"/* ]]; then
      :  # LibTorch's, from the machine's PyTorch (listed by the check below)
    elif [ ! -e "$stage/lib/$soname" ]; then
      strip --strip-unneeded -o "$stage/lib/$soname" "$(realpath "$path")"
    fi
  done < <(closure "$binary")
done

# --- check what the binaries load ----------------------------------------------------------------
# Every library of every binary resolves in the bundle, in the base runtime, in the wheels or in
# LibTorch. LibTorch's own libraries (torch/lib: libtorch_cpu, libc10, libc10_cuda; what they
# load besides, libcupti, LibTorch finds by its RUNPATH in the PyTorch's nvidia wheels) are the
# machine's PyTorch's: their names go to torch-libraries. The bundle carries none of them.
: >"$work/torch-libraries"
for binary in "$stage"/bin/* "$stage"/tests/*; do
  while read -r soname path; do
    case "$path" in
      "$stage"/lib/* | "$TAAS_CUDA_DIR"/*) ;;
      "$TORCH_LIB"/*) echo "$soname" >>"$work/torch-libraries" ;;
      "$TAAS_TORCH_DIR"/nvidia/*) ;;
      *) base_or_driver "$soname" ||
        die "$(basename "$binary"): $soname resolves to $path, outside the bundle" ;;
    esac
  done < <(closure "$binary")
done

# --- pack ----------------------------------------------------------------------------------------
# Every binary and library xz-compressed (about a third of their size; oneDNN's 40 MB, code for
# every x86 ISA, to 7 MB): run.sh unpacks them into its own folder. Compressing takes a minute, so
# each file's result is kept in the cache by its content and reused.
rm -rf "$OUT.partial"
mkdir -p "$OUT.partial"/{bin,tests,lib,data} "$TAAS_CACHE/gpu-bundle"
for file in "$stage"/{bin,tests,lib}/*; do
  packed="$TAAS_CACHE/gpu-bundle/$(sha256sum "$file" | cut -c1-32).xz"
  # Written aside and renamed: another checkout may be filling the same cache.
  [ -f "$packed" ] || { xz -T0 -6 -c "$file" >"$packed.$$" && mv "$packed.$$" "$packed"; }
  cp "$packed" "$OUT.partial/$(basename "$(dirname "$file")")/$(basename "$file").xz"
done
sort -u "$work/cuda-libraries" >"$OUT.partial/cuda-libraries"
sort -u "$work/torch-libraries" >"$OUT.partial/torch-libraries"
[ -s "$OUT.partial/torch-libraries" ] || die "fashion-mnist-torch loads no LibTorch library"
! ls "$stage/lib" | grep -E '^lib(torch|c10)' ||
  die "the bundle would carry LibTorch's libraries (above): they are the machine's PyTorch's"
cp "$DATA"/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz "$OUT.partial/data/"
cp "$TAAS_ROOT"/bench/gpu/{run.sh,table.py,torch_cnn.py} "$TAAS_ROOT/bench/torch/torch_peer.py" \
  "$OUT.partial/"
{
  echo "commit $(git -C "$TAAS_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "built $(date -u +%FT%TZ) for sm_90 with $(cat "$TAAS_CUDA_DIR/.taas-wheels"), against\
 LibTorch $(cat "$TAAS_TORCH_DIR/.taas-wheels")"
  # The newest symbol versions of the base runtime any file uses: the oldest glibc and
  # libstdc++ the bundle runs on.
  echo "needs $(for version in GLIBC GLIBCXX; do
    objdump -T "$stage"/*/* 2>/dev/null | grep -o "${version}_[0-9.]*" | sort -Vu | tail -n1
  done | paste -sd' ')"
} >"$OUT.partial/MANIFEST"
size=$(du -sb "$OUT.partial" | cut -f1)
[ "$size" -le $((MAX_MIB << 20)) ] || die "the bundle is $((size >> 20)) MiB, over $MAX_MIB MiB: \
$(du -sh "$OUT.partial"/* | sort -h | tail -n 4 | paste -sd' ')"

# --- check the bundle as a GPU machine runs it ----------------------------------------------------
# Its CPU parts from the bundle alone, with an empty environment (no GPU here: the gpu tests skip).
env -i /bin/bash "$OUT.partial/run.sh" --self-check --cuda-libs "$WHEELS" \
  --torch-libs "$TORCH_LIB" ||
  die "run.sh --self-check failed in an empty environment (above)"

rm -rf "$OUT"
mv "$OUT.partial" "$OUT"
log "bundle: $OUT, $((size >> 20)) MiB ($(du -sh "$OUT"/* | sort -h | tail -n 3 | paste -sd' ')),\
 built and checked in $((SECONDS - start)) s; on the GPU machine: $OUT/run.sh"
