# The CUDA compile chain (issue 17), from NVIDIA's PyPI wheels, pinned, into the tool cache
# ($TAAS_CUDA_DIR, see scripts/lib/common.sh): no GPU and no driver are needed to compile, and CI
# compiles every CUDA source on every run. scripts/lib/build.sh configures the build with CUDA when
# this folder is complete. Why each wheel is there: README "Dependencies". The wheels' own
# dependencies are pinned too (--no-deps), so a new upload cannot change what is installed:
# nvcc needs crt (its headers) and nvvm (cicc, libdevice); cuBLAS needs nvrtc.
# About 1.4 GB to download (about a minute here) and 2.3 GB installed; a second run installs nothing.
# shellcheck shell=bash
taas_cuda_wheels=(
  "nvidia-cuda-nvcc==$TAAS_CUDA_VERSION"
  "nvidia-cuda-crt==$TAAS_CUDA_VERSION"
  "nvidia-nvvm==$TAAS_CUDA_VERSION"
  "nvidia-cuda-runtime==$TAAS_CUDA_VERSION"
  "nvidia-cuda-nvrtc==$TAAS_CUDA_VERSION"
  nvidia-cuda-cccl==13.3.5.0.6
  nvidia-cublas==13.10.0.20
  nvidia-cudnn-cu13==9.28.1.4
  nvidia-nccl-cu13==2.32.3
)
# The stamp names exactly the pins installed: changing a pin installs the folder afresh.
taas_cuda_stamp="$TAAS_CUDA_DIR/.taas-wheels"
if [ "$(cat "$taas_cuda_stamp" 2>/dev/null)" != "${taas_cuda_wheels[*]}" ]; then
  [ -x "$TAAS_CACHE/venv/bin/pip" ] ||
    die "no pip at $TAAS_CACHE/venv (scripts/setup.d/40-python.sh makes it): run scripts/setup.sh"
  log "installing the CUDA $TAAS_CUDA_VERSION wheels into $TAAS_CUDA_DIR (about 1.4 GB)"
  rm -rf "$TAAS_CUDA_DIR.partial"
  # A partial folder is never taken for a toolkit: it is renamed only once complete.
  taas_cuda_start=$SECONDS
  "$TAAS_CACHE/venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-compile \
    --no-cache-dir --only-binary=:all: --target "$TAAS_CUDA_DIR.partial" "${taas_cuda_wheels[@]}" ||
    die "pip install of the CUDA wheels failed (PyPI unreachable?): ${taas_cuda_wheels[*]}"
  printf '%s' "${taas_cuda_wheels[*]}" >"$TAAS_CUDA_DIR.partial/.taas-wheels"
  rm -rf "$TAAS_CUDA_DIR"
  mv "$TAAS_CUDA_DIR.partial" "$TAAS_CUDA_DIR"
  # Another release's folder (a pin changed) is 2.3 GB nothing uses any more.
  for taas_cuda_old in "$TAAS_CACHE"/cuda-*/; do
    taas_cuda_old="${taas_cuda_old%/}"
    if [ "$taas_cuda_old" != "$TAAS_CUDA_DIR" ] && [ -f "$taas_cuda_old/.taas-wheels" ]; then
      rm -rf "$taas_cuda_old"
    fi
  done
  log "CUDA wheels installed in $((SECONDS - taas_cuda_start)) s"
fi
