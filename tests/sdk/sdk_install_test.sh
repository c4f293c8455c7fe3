#!/usr/bin/env bash
# The SDK from nothing to a running job, against an installed prefix only:
#   cmake --install BUILD --prefix P; P/bin/taas new sdk-check [--engine torch]; build it (MODE
#   cmake: its CMakeLists with find_package(taas), then its unit test, with the commands taas new
#   printed, which must be README's; MODE pkgconfig: g++ with `pkg-config --cflags --libs taas`,
#   or taas-torch); P/bin/taas run job.yaml for a few steps.
# In an SDK built with CUDA (its cuda component installed) the project also links the CUDA parts
# (CMake: the template's OPTIONAL_COMPONENTS cuda, or the torch component's; pkg-config: taas-cuda)
# and loads CUDA's libraries, and its job still runs on a machine without a GPU.
# No file of the build must name the source tree or the build tree: the project sees only P.
# ENGINE torch makes the project with a LibTorch model (`taas new --engine torch`); TORCH_ROOT is
# the LibTorch the tree was built with (TAAS_TORCH_ROOT), empty when its SDK has no torch engine: the
# test is then skipped (exit 77).
# Usage: sdk_install_test.sh cmake|pkgconfig BUILD_DIR SOURCE_DIR [builtin | torch TORCH_ROOT]
set -euo pipefail
mode="$1" build="$(cd "$2" && pwd)" source="$(cd "$3" && pwd)" engine="${4:-builtin}"
torch_root="${5:-}"
if [ "$engine" = torch ] && [ -z "$torch_root" ]; then
  echo "skipped: this tree's SDK has no torch engine (built without LibTorch)"
  exit 77
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/taas-sdk-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
passes=0
ok() { echo "ok: $1"; passes=$((passes + 1)); }
fail() { echo "FAILED: $1"; [ -z "${2:-}" ] || tail -n 40 "$2"; exit 1; }
timed() { # LABEL COMMAND...: runs COMMAND with its output in $tmp/LABEL.log, prints its seconds
  local label="$1" start=$SECONDS
  shift
  "$@" >"$tmp/$label.log" 2>&1 || fail "$label" "$tmp/$label.log"
  ok "$label ($((SECONDS - start)) s)"
}

# What the install copies is built (ctest's sdk_build, before this test).
# Installed in one place and used from another, as the Dockerfile's sdk stage does (/out/sdk ->
# /opt/taas): the package's files must find each other by relative paths.
timed install cmake --install "$build" --prefix "$tmp/staged"
prefix="$tmp/prefix"
mv "$tmp/staged" "$prefix"
[ -x "$prefix/bin/taas" ] || fail "the launcher is installed in bin/"
[ -f "$prefix/include/taas/runtime/dist_model.h" ] || fail "the public header is installed"
[ -f "$prefix/share/taas/template/CMakeLists.txt" ] || fail "the template is installed"
[ -f "$prefix/include/taas/checkpoint/checkpoint.h" ] &&
  [ -f "$prefix/include/taas/checkpoint/safetensors.h" ] ||
  fail "the checkpoint API and the safetensors reader are installed"
if [ "$engine" = torch ]; then
  [ -f "$prefix/include/taas/torch/module.h" ] && [ -f "$prefix/lib/libtaas_torch.a" ] &&
    [ -f "$prefix/lib/cmake/taas/taasTorchTargets.cmake" ] &&
    [ -d "$prefix/share/taas/template/engines/torch" ] ||
    fail "the torch engine is installed (header, library, CMake targets, template)"
fi
while read -r header; do
  [ -f "$prefix/include/$header" ] || fail "$header, included by an installed header, is not installed"
done < <(sed -n 's/^#include "\(taas\/.*\)"/\1/p' "$prefix"/include/taas/*/*.h | sort -u)
ok "every taas header an installed header includes is installed"
cuda=false
if [ -f "$prefix/lib/cmake/taas/taasCudaTargets.cmake" ]; then
  cuda=true
  [ -f "$prefix/lib/cmake/taas/TaasCudaLibraries.cmake" ] && [ -f "$prefix/lib/libtaas_nn_cuda.a" ] &&
    [ -f "$prefix/lib/libtaas_cuda.a" ] && [ -f "$prefix/lib/pkgconfig/taas-cuda.pc" ] ||
    fail "the CUDA parts are installed (libraries, CMake targets and their import, taas-cuda.pc)"
  ok "the SDK has the CUDA parts"
fi
! grep -rq -- "$source" "$prefix/lib/cmake" "$prefix/lib/pkgconfig" ||
  fail "the package files name the source tree"

# A user's project: the installed launcher creates it from the installed template.
mkdir "$tmp/work"
new_args=()  # builtin: the default
[ "$engine" = builtin ] || new_args=(--engine "$engine")
(cd "$tmp/work" && "$prefix/bin/taas" new sdk-check "${new_args[@]}") >"$tmp/new.log" 2>&1 ||
  fail "taas new" "$tmp/new.log"
project="$tmp/work/sdk-check"
grep -q "from $prefix/share/taas/template" "$tmp/new.log" || fail "taas new used the installed template" "$tmp/new.log"
grep -q 'project(sdk-check' "$project/CMakeLists.txt" || fail "taas new renamed the project"
# The project's Dockerfile copies what its CMake build makes to where its job.yaml runs it.
grep -q 'build/sdk-check /opt/taas/bin/sdk-check$' "$project/Dockerfile" &&
  grep -q 'command: \["/opt/taas/bin/sdk-check"\]' "$project/job.yaml" ||
  fail "the project's Dockerfile and job.yaml name the binary"
[ ! -e "$project/engines" ] || fail "the template's engines/ is not copied into a project"
if [ "$engine" = torch ]; then
  grep -q 'find_package(taas 0.1 CONFIG REQUIRED COMPONENTS torch)' "$project/src/model.cmake" &&
    grep -q 'BoundModule::Bind' "$project/src/model.cc" ||
    fail "the project's model is the torch one"
fi
ok "taas new sdk-check ${new_args[*]}"
# What it prints next are README's "Write your own model" commands with this project's and this
# prefix's absolute paths (its `taas` included: it need not be on PATH), ready to paste; the CMake
# mode runs them as printed.
mapfile -t steps < <(sed -n '/^next steps:$/,$ s/^  //p' "$tmp/new.log")
readme="$(sed -n '/^## Write your own model/,/^```$/p' "$source/README.md" |
  sed -n '/ new my-model /,/^```$/p' | sed -e '1d;$d' -e 's/ *#.*$//')"
printed=""
for step in "${steps[@]}"; do
  step="${step//"$project"/"~/my-model"}"
  printed+="${step//"$prefix"/"~/taas-sdk"}"$'\n'
done
[ -n "$readme" ] && [ "$printed" = "$readme"$'\n' ] ||
  fail "taas new's next steps are README's (README: $readme)" "$tmp/new.log"
ok "taas new printed README's next steps with absolute paths"

# Compiler caches and the tree's own settings stay out: this is a user's machine.
unset CCACHE_DIR CMAKE_PREFIX_PATH TAAS_BIN_PATH TAAS_BUILD TAAS_TORCH_ROOT Torch_DIR TAAS_CUDA_ROOT
# What the SDK's package config must not print: lines a user cannot act on (gRPC's search for a
# c-ares config before it finds c-ares, oneDNN's probe of OpenCL headers for a GPU runtime).
configure_noise='Could NOT find|OpenCL|CL_VERSION'
quiet_configure() { # LOG: fails when the configure's output in LOG holds such a line
  ! grep -E "$configure_noise" "$1" || fail "the configure printed what a user cannot act on" "$1"
  ok "the configure printed nothing a user cannot act on"
}
case "$mode" in
  cmake)
    timed configure bash -c "${steps[0]}"
    quiet_configure "$tmp/configure.log"
    if [ "$engine" = builtin ]; then
      ! grep -i torch "$tmp/configure.log" || fail "a project without torch hears nothing of it"
    else
      # The SDK finds the LibTorch it was built with unless told another: by Torch_DIR (the
      # wheel's CMake folder, as PyTorch's docs say) or TAAS_TORCH_ROOT; one that holds none is
      # named in the error.
      timed configure-torch-dir cmake -S "$project" -B "$tmp/torch-dir" -G Ninja \
        -DCMAKE_PREFIX_PATH="$prefix" -DTorch_DIR="$torch_root/torch/share/cmake/Torch"
      quiet_configure "$tmp/configure-torch-dir.log"
      refused() { # LABEL VARIABLE=VALUE MESSAGE: a configure with -DVARIABLE=VALUE fails with MESSAGE
        if cmake -S "$project" -B "$tmp/$1-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
          -D"$2" >"$tmp/$1.log" 2>&1; then
          fail "$1: a configure with $2 fails" "$tmp/$1.log"
        fi
        # (CMake wraps the message: read as one line.)
        grep -q -- "$3" <<<"$(tr -s '\n ' '  ' <"$tmp/$1.log")" ||
          fail "$1: the error says: $3" "$tmp/$1.log"
      }
      mkdir "$tmp/nowhere"
      refused no-torch "TAAS_TORCH_ROOT=$tmp/nowhere" \
        "no LibTorch [0-9.]* for taas::torch in TAAS_TORCH_ROOT=$tmp/nowhere: $tmp/nowhere holds no LibTorch"
      # Another minor version of LibTorch (its C++ ABI differs) is refused, not linked.
      other="$tmp/other-torch/torch"
      mkdir -p "$other/include/torch/csrc/api/include/torch" "$other/include/torch/headeronly" \
        "$other/lib"
      touch "$other/include/torch/csrc/api/include/torch/torch.h" "$other/lib/libtorch_cpu.so"
      printf '#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 9\n#define TORCH_VERSION_PATCH 1\n' \
        >"$other/include/torch/headeronly/version.h"
      refused other-torch "TAAS_TORCH_ROOT=$tmp/other-torch" "$tmp/other-torch holds LibTorch 2.9.1, not [0-9]*\.[0-9]*\.x"
      ok "LibTorch from the SDK's default, Torch_DIR, or an error naming TAAS_TORCH_ROOT"
      if $cuda; then
        refused no-cuda "TAAS_CUDA_ROOT=$tmp/nowhere" \
          "taas::torch in this SDK runs on GPUs too and needs CUDA's libraries: no CUDA libraries for taas::nn_cuda in TAAS_CUDA_ROOT=$tmp/nowhere: CUDA's cudart not found"
        ok "a CUDA SDK's torch engine without CUDA's libraries: an error naming TAAS_CUDA_ROOT"
      fi
    fi
    if $cuda && [ "$engine" = builtin ]; then
      # Optional for the built-in engine: without CUDA's libraries the model is built for the CPU.
      timed configure-no-cuda cmake -S "$project" -B "$tmp/no-cuda" -G Ninja \
        -DCMAKE_PREFIX_PATH="$prefix" -DTAAS_CUDA_ROOT="$tmp/nowhere"
      ! grep -q nn_cuda "$tmp/no-cuda/build.ninja" || fail "without CUDA's libraries no CUDA part is linked"
      grep -q nn_cuda "$project/build/build.ninja" || fail "the project links the CUDA engine"
      ok "the CUDA engine linked where CUDA's libraries are, left out where they are not"
    fi
    timed build bash -c "${steps[1]}"
    timed unit-test bash -c "${steps[2]} --output-on-failure"
    # The Dockerfile's sdk stage installs sdk/debian-packages.txt and what they depend on: every
    # package config this configure found must come from one of them.
    packages="$(xargs apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances <"$prefix/share/taas/debian-packages.txt" | grep -v '^ ' |
      sed 's/:.*//')"
    while IFS= read -r dir; do
      config="$(find "$dir" -maxdepth 1 -iname '*config.cmake' | head -n 1)"
      [ -n "$config" ] || continue
      owner="$(dpkg -S "$config" 2>/dev/null | sed 's/:.*//')" || true
      [ -n "$owner" ] || fail "no Debian package owns $config"
      grep -qx "$owner" <<<"$packages" ||
        fail "$owner (for $config) is not in sdk/debian-packages.txt or their dependencies"
    done < <(sed -n 's/^[A-Za-z0-9_-]*_DIR:PATH=\(\/.*\)/\1/p' "$project/build/CMakeCache.txt" |
      grep -v "^$prefix")
    ok "sdk/debian-packages.txt provides every package the SDK's config finds"
    binary="$project/build/sdk-check"
    run_args=()  # the launcher finds build/sdk-check beside the manifest, as for a user
    ;;
  pkgconfig)
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    package=taas
    $cuda && package=taas-cuda
    [ "$engine" = builtin ] || package=taas-torch
    flags="$(pkg-config --cflags --libs "$package")" || fail "pkg-config --cflags --libs $package"
    mkdir -p "$project/out"
    # shellcheck disable=SC2086 # pkg-config's words
    timed compile g++ -O2 -I"$project/src" "$project/src/model.cc" "$project/src/main.cc" \
      -o "$project/out/sdk-check" $flags
    binary="$project/out/sdk-check"
    run_args=(--bin-dir "$project/out")
    ;;
  *) fail "mode must be cmake or pkgconfig, got $mode" ;;
esac
[ -x "$binary" ] || fail "no binary at $binary"
if grep -rlI -e "$source" -e "$build" "$project" --exclude-dir=Testing >"$tmp/leaks" 2>/dev/null; then
  fail "files of the project name the source or build tree" "$tmp/leaks"
fi
# Whole outputs are read before grep -q looks at them: under pipefail a grep that stops at its
# first match kills its writer with SIGPIPE and the pipeline reads as failed.
if grep -q -e "$source/" -e "$build/" <<<"$(strings "$binary")"; then
  fail "the binary names the source or build tree"
fi
ok "nothing of the project names $source or $build"
libraries="$(ldd "$binary")"
! grep -q 'not found' <<<"$libraries" || fail "every library of the binary resolves: $libraries"
if $cuda; then
  grep -q 'libcudart\.so' <<<"$libraries" && grep -q 'libnccl\.so' <<<"$libraries" ||
    fail "the binary loads CUDA's runtime and NCCL: $libraries"
  ok "the binary links the CUDA parts and every library resolves"
fi

# Its job, briefly: 1 PS, 2 workers, 1 evaluator scoring a checkpoint.
model="$tmp/model"
timed job "$prefix/bin/taas" run "$project/job.yaml" "${run_args[@]}" --no-ui --model-dir "$model" \
  --env TF_MAX_STEPS=40 --env TAAS_SAVE_CHECKPOINTS_STEPS=20 --env TAAS_EVAL_INTERVAL_SECS=0.2
grep -q "using $binary for /opt/taas/bin/sdk-check" "$tmp/job.log" ||
  fail "the job ran the project's binary" "$tmp/job.log"
[ -f "$model/model.ckpt-40.safetensors" ] || fail "the chief wrote the final checkpoint" "$tmp/job.log"
grep -q 'msg="evaluated on the chief" .*metrics="accuracy=' "$model/logs/sdk-check-worker-0.log" ||
  fail "the chief scored the model (job.yaml: TAAS_EVAL_ON_CHIEF)" "$model/logs/sdk-check-worker-0.log"
ok "the job trained 40 steps and the chief scored the model"

# Its predictions (the template's predict hooks): `taas predict` with the final checkpoint on the
# test images, whose labels file is beside them: a row an image, its logits, class and label.
timed predict "$prefix/bin/taas" predict "$project/job.yaml" "${run_args[@]}" --model-dir "$model" \
  --input /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --output "$tmp/predictions.csv"
grep -q "checkpoint=$model/model.ckpt-40 " "$tmp/predict.log" ||
  fail "taas predict used the final checkpoint" "$tmp/predict.log"
python3 - "$tmp/predictions.csv" <<'PY' || fail "the predictions: every test image, its class and label"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
accuracy = sum(r["class"] == r["label"] for r in rows) / max(1, len(rows))
print(f"{len(rows)} predictions, accuracy {accuracy:.4f}")
sys.exit(0 if len(rows) == 10000 and accuracy > 0.3 else 1)
PY
ok "taas predict scored the 10,000 test images with the final checkpoint"

# The shared library (TAAS_SDK_SHARED, on by default): the same model linked with taas::shared
# (CMake) or taas-shared (pkg-config) loads libtaas.so from the prefix and trains alone (no
# TF_CONFIG) for a few steps. The torch engine links the static libraries only.
if [ "$engine" = builtin ] && [ -e "$prefix/lib/libtaas.so" ]; then
  shared="$tmp/shared/build/sdk-check-shared"
  mkdir -p "$tmp/shared/build"
  if [ "$mode" = cmake ]; then
    cat >"$tmp/shared/CMakeLists.txt" <<EOF_CMAKE
cmake_minimum_required(VERSION 3.25)
project(sdk-check-shared LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(taas 0.1 CONFIG REQUIRED)
add_executable(sdk-check-shared "$project/src/main.cc" "$project/src/model.cc")
target_include_directories(sdk-check-shared PRIVATE "$project/src")
target_link_libraries(sdk-check-shared PRIVATE taas::shared)
EOF_CMAKE
    timed configure-shared cmake -S "$tmp/shared" -B "$tmp/shared/build" -G Ninja \
      -DCMAKE_PREFIX_PATH="$prefix"
    quiet_configure "$tmp/configure-shared.log"
    timed build-shared cmake --build "$tmp/shared/build"
  else
    flags="$(pkg-config --cflags --libs taas-shared)" || fail "pkg-config --cflags --libs taas-shared"
    # shellcheck disable=SC2086 # pkg-config's words
    timed compile-shared g++ -O2 -I"$project/src" "$project/src/model.cc" "$project/src/main.cc" \
      -o "$shared" $flags -Wl,-rpath,"$prefix/lib"
  fi
  libraries="$(ldd "$shared")"
  grep -q "libtaas.so.* => $prefix/lib/" <<<"$libraries" ||
    fail "the shared build loads libtaas.so from the prefix: $libraries"
  ! grep -q 'not found' <<<"$libraries" || fail "every library resolves: $libraries"
  timed run-shared env -u TF_CONFIG TF_MAX_STEPS=5 TF_LOGDIR="$tmp/shared-model" "$shared"
  [ -f "$tmp/shared-model/model.ckpt-5.safetensors" ] || fail "the shared build trained 5 steps" "$tmp/run-shared.log"
fi
echo "$passes passed, 0 failed"
