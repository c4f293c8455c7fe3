#!/usr/bin/env bash
# Tests the builder stage's install step on its own (scripts/packaging/stage-install.sh and
# runtime-packages.sh), on a fake build tree: real ELF binaries that load Debian libraries and a
# library of the build tree itself, so it runs in seconds without the full build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage="$root/scripts/packaging/stage-install.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/taas-stage-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
passes=0 failures=0
check() { # DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@"; then
    echo "ok: $what"
    passes=$((passes + 1))
  else
    echo "FAILED: $what"
    failures=$((failures + 1))
  fi
}

# A fake build tree: binaries at the kind of paths CMake uses, plus one that loads a shared
# library built in the tree (found through its RPATH) and carries debug info.
build="$tmp/build"
mkdir -p "$build/operator/cmd" "$build/web-ui/server" "$build/examples/a" "$build/lib" \
  "$build/operator/cmd/CMakeFiles/x.dir"
cp /usr/bin/openssl "$build/operator/cmd/taas-operator"
cp /usr/bin/openssl "$build/operator/cmd/CMakeFiles/x.dir/taas-operator" # never picked
cp /usr/bin/ninja "$build/web-ui/server/taas-ui"
printf 'int answer() { return 42; }\n' >"$tmp/answer.cc"
printf '#include <string>\nint answer();\nint main(int argc, char**) { return answer() == std::stoi(std::string(argc, 52) + "2") ? 0 : 1; }\n' >"$tmp/main.cc"
g++ -g -shared -fPIC -o "$build/lib/libtaas_answer.so" "$tmp/answer.cc"
g++ -g -o "$build/examples/a/trainer-one" "$tmp/main.cc" -L"$build/lib" -ltaas_answer \
  -Wl,-rpath,"$build/lib"
web="$tmp/web-ui"
mkdir -p "$web/dist/assets"
echo '<!doctype html><title>taas</title>' >"$web/dist/index.html"
echo 'console.log(1)' >"$web/dist/assets/app.js"

export TAAS_OPERATOR_BINARIES="taas-operator taas-ui" TAAS_TRAINER_BINARIES="trainer-one"
export TAAS_WEB_UI_SRC="$web"
out="$tmp/out"
check "stage-install succeeds" "$stage" "$build" "$out"
check "operator binaries staged" test -x "$out/operator/bin/taas-operator" -a -x "$out/operator/bin/taas-ui"
check "trainer binary staged" test -x "$out/trainer/bin/trainer-one"
check "debug info stripped" bash -c "! readelf -S '$out/trainer/bin/trainer-one' | grep -q debug_info"
check "web UI assets staged" test -f "$out/operator/share/web-ui/index.html" -a -f "$out/operator/share/web-ui/assets/app.js"
check "operator needs libssl3 (openssl)" grep -qx libssl3 "$out/operator/runtime-packages.txt"
check "trainer does not need libssl3" bash -c "! grep -qx libssl3 '$out/trainer/runtime-packages.txt'"
check "trainer needs libstdc++6" grep -qx 'libstdc++6' "$out/trainer/runtime-packages.txt"
check "no -dev package" bash -c "! grep -q -- '-dev$' '$out'/*/runtime-packages.txt"
check "no file: lines in the package lists" bash -c "! grep -q '^file:' '$out'/*/runtime-packages.txt"
check "build-tree library copied" test -f "$out/lib/libtaas_answer.so"
check "staged trainer runs with the copied library" env LD_LIBRARY_PATH="$out/lib" "$out/trainer/bin/trainer-one"

# The package list installs: every name is a known Debian package.
check "packages exist in dpkg" bash -c "cat '$out'/*/runtime-packages.txt | xargs dpkg-query -W >/dev/null"

# Failures name what is missing.
msg="$(TAAS_TRAINER_BINARIES="fashion-mnist-cnn" "$stage" "$build" "$tmp/out2" 2>&1 || true)"
check "missing binary named" grep -q "'fashion-mnist-cnn' was not built" <<<"$msg"
cp /usr/bin/ninja "$build/examples/a/taas-ui"
msg="$("$stage" "$build" "$tmp/out3" 2>&1 || true)"
check "ambiguous binary named" grep -q "'taas-ui' is ambiguous" <<<"$msg"
rm "$build/examples/a/taas-ui"
msg="$(TAAS_WEB_UI_SRC="$tmp/nothing" "$stage" "$build" "$tmp/out4" 2>&1 || true)"
check "missing web UI named" grep -q "no web UI at $tmp/nothing/dist" <<<"$msg"
# No dist/ yet: the web UI is built with its own `npm run build`.
if command -v npm >/dev/null; then
  web2="$tmp/web-ui-src"
  mkdir -p "$web2/node_modules"
  echo '{"name": "w", "private": true, "scripts": {"build": "mkdir -p dist && echo built >dist/index.html"}}' \
    >"$web2/package.json"
  check "web UI built when dist/ is missing" env TAAS_WEB_UI_SRC="$web2" "$stage" "$build" "$tmp/out5"
  check "built web UI staged" grep -q built "$tmp/out5/operator/share/web-ui/index.html"
fi
# A CUDA build: a trainer linking a library of the toolkit (as the wheels lay it out), which opens
# a sub-library by name at run time, as cuDNN 9 does.
cuda="$tmp/cuda/nvidia"
mkdir -p "$cuda/cudnn/lib" "$cuda/cu13/lib"
printf 'int cudnn_answer() { return 42; }\n' >"$tmp/cudnn.cc"
g++ -shared -fPIC -Wl,-soname,libcudnn.so.9 -o "$cuda/cudnn/lib/libcudnn.so.9" "$tmp/cudnn.cc"
cp "$cuda/cudnn/lib/libcudnn.so.9" "$cuda/cudnn/lib/libcudnn_ops.so.9"
cp "$cuda/cudnn/lib/libcudnn.so.9" "$cuda/cu13/lib/libnvrtc.so.13"
printf 'int cudnn_answer();\nint main() { return cudnn_answer() == 42 ? 0 : 1; }\n' >"$tmp/gpu.cc"
g++ -o "$build/examples/a/trainer-gpu" "$tmp/gpu.cc" "$cuda/cudnn/lib/libcudnn.so.9" \
  -Wl,-rpath,"$cuda/cudnn/lib"
msg="$(TAAS_TRAINER_BINARIES="trainer-gpu" "$stage" "$build" "$tmp/out6" 2>&1 || true)"
check "a CUDA library without TAAS_CUDA_LIB_ROOT is refused, named" \
  grep -q "libcudnn.so.9 is loaded by a staged binary but belongs to no Debian package" <<<"$msg"
check "stage-install of a CUDA build succeeds" env TAAS_TRAINER_BINARIES="trainer-gpu" \
  TAAS_CUDA_LIB_ROOT="$cuda" "$stage" "$build" "$tmp/out7"
check "the linked CUDA library and those opened at run time are staged" \
  test -f "$tmp/out7/cuda/lib/libcudnn.so.9" -a -f "$tmp/out7/cuda/lib/libcudnn_ops.so.9" \
  -a -f "$tmp/out7/cuda/lib/libnvrtc.so.13"
check "no CUDA library in the plain library folder" test ! -e "$tmp/out7/lib/libcudnn.so.9"

# A build with the torch engine: a trainer linking LibTorch's library from the LibTorch folder (as
# the wheel lays it out), which itself needs a CUDA runtime library beside it.
torch="$tmp/libtorch"
mkdir -p "$torch/torch/lib" "$torch/nvidia/cu13/lib"
printf 'int cudart_answer() { return 42; }\n' >"$tmp/cudart.cc"
g++ -shared -fPIC -Wl,-soname,libcudart.so.13 -o "$torch/nvidia/cu13/lib/libcudart.so.13" "$tmp/cudart.cc"
printf 'int cudart_answer();\nint torch_answer() { return cudart_answer(); }\n' >"$tmp/torch.cc"
g++ -shared -fPIC -Wl,-soname,libtorch_cpu.so -o "$torch/torch/lib/libtorch_cpu.so" "$tmp/torch.cc" \
  "$torch/nvidia/cu13/lib/libcudart.so.13" -Wl,-rpath,'$ORIGIN/../../nvidia/cu13/lib'
printf 'int torch_answer();\nint main() { return torch_answer() == 42 ? 0 : 1; }\n' >"$tmp/torch-main.cc"
g++ -o "$build/examples/a/trainer-torch" "$tmp/torch-main.cc" "$torch/torch/lib/libtorch_cpu.so" \
  -Wl,-rpath,"$torch/torch/lib"
msg="$(TAAS_TRAINER_BINARIES="trainer-torch" "$stage" "$build" "$tmp/out8" 2>&1 || true)"
check "LibTorch without TAAS_TORCH_LIB_ROOT is refused, named" \
  grep -q "lib\(torch_cpu\|cudart\)\.so[.0-9]* is loaded by a staged binary but belongs to no Debian package" \
  <<<"$msg"
check "stage-install of a torch build succeeds" env TAAS_TRAINER_BINARIES="trainer-torch" \
  TAAS_TORCH_LIB_ROOT="$torch" "$stage" "$build" "$tmp/out9"
check "LibTorch's library and the CUDA runtime it needs are staged" \
  test -f "$tmp/out9/torch/lib/libtorch_cpu.so" -a -f "$tmp/out9/torch/lib/libcudart.so.13"
check "the staged torch trainer runs with the staged libraries" \
  env LD_LIBRARY_PATH="$tmp/out9/torch/lib" "$tmp/out9/trainer/bin/trainer-torch"
msg="$(TAAS_TORCH_LIB_ROOT="$torch" "$stage" "$build" "$tmp/out10" 2>&1 || true)"
check "TAAS_TORCH_LIB_ROOT without a trainer loading LibTorch is refused, named" \
  grep -q "no staged trainer loads libtorch_cpu.so from there" <<<"$msg"

msg="$("$root/scripts/packaging/runtime-packages.sh" /etc/hostname 2>&1 || true)"
check "non-ELF refused" grep -q "not an ELF binary" <<<"$msg"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
