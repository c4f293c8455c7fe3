# LibTorch, the C++ side of PyTorch: the second model engine (trainer-runtime/torch, issue 34),
# from the PyPI wheel torch==2.11.0, the CUDA 13.0 build the GPU machines' PyTorch is, so that a
# GPU bundle loads their own libraries (docs/dependencies.md). Only the wheel's C++ parts are
# unpacked (headers, libraries, CMake package: ~1 GB of the 530 MB wheel) into $TAAS_TORCH_DIR
# (scripts/lib/common.sh), beside the two CUDA runtime libraries libtorch_cpu.so needs to load
# even on a CPU (libcudart, libcupti: its RPATH looks for them in ../../nvidia/cu13/lib).
# scripts/lib/build.sh configures the torch engine when this folder is complete. A second run
# installs nothing; a pin changed installs the folder afresh.
# shellcheck shell=bash
taas_torch_wheels=(
  "torch==$TAAS_TORCH_VERSION"
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-cupti==13.0.85
)
taas_torch_stamp="$TAAS_TORCH_DIR/.taas-wheels"
if [ "$(cat "$taas_torch_stamp" 2>/dev/null)" != "${taas_torch_wheels[*]}" ]; then
  [ -x "$TAAS_CACHE/venv/bin/pip" ] ||
    die "no pip at $TAAS_CACHE/venv (scripts/setup.d/40-python.sh makes it): run scripts/setup.sh"
  log "installing LibTorch $TAAS_TORCH_VERSION into $TAAS_TORCH_DIR (a 530 MB download)"
  taas_torch_start=$SECONDS
  rm -rf "$TAAS_TORCH_DIR.partial" "$TAAS_TORCH_DIR.wheels"
  "$TAAS_CACHE/venv/bin/pip" download -q --disable-pip-version-check --no-deps \
    --only-binary=:all: --no-cache-dir -d "$TAAS_TORCH_DIR.wheels" "${taas_torch_wheels[@]}" ||
    die "pip download of LibTorch failed (PyPI unreachable?): ${taas_torch_wheels[*]}"
  mkdir -p "$TAAS_TORCH_DIR.partial"
  # The C++ parts of torch (not its Python modules nor libtorch_python), the two libraries whole.
  unzip -q -o "$TAAS_TORCH_DIR.wheels"/torch-*.whl 'torch/include/*' 'torch/lib/*' \
    'torch/share/cmake/*' -x 'torch/lib/libtorch_python.so' -d "$TAAS_TORCH_DIR.partial" ||
    die "unpacking the torch wheel failed"
  for taas_torch_wheel in "$TAAS_TORCH_DIR.wheels"/nvidia_*.whl; do
    unzip -q -o "$taas_torch_wheel" 'nvidia/*' -d "$TAAS_TORCH_DIR.partial" ||
      die "unpacking $taas_torch_wheel failed"
  done
  rm -rf "$TAAS_TORCH_DIR.wheels"
  # A partial folder is never taken for LibTorch: it is renamed only once complete.
  printf '%s' "${taas_torch_wheels[*]}" >"$TAAS_TORCH_DIR.partial/.taas-wheels"
  rm -rf "$TAAS_TORCH_DIR"
  mv "$TAAS_TORCH_DIR.partial" "$TAAS_TORCH_DIR"
  log "LibTorch installed in $((SECONDS - taas_torch_start)) s"
fi
