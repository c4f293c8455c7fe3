#!/usr/bin/env bash
# The GPU path on a machine with GPUs, in one command (bench/README.md, "GPUs"): builds with CUDA,
# runs the `gpu` tests, trains the Fashion-MNIST CNN on the CPU, on one GPU and on all GPUs, and
# measures cuBLAS, cuDNN and NCCL beside it (bench/gpu/gpu_bench.cc).
#
#   bench/gpu/run.sh                     # everything
#   STEPS=500 bench/gpu/run.sh           # a quick look
#
# Works offline. The CUDA toolkit is found, in this order: TAAS_CUDA_ROOT (a wheels' nvidia/
# folder with cu13/bin/nvcc), the tool cache's wheels (scripts/setup.sh), the Python wheels of the
# interpreter on PATH (PyTorch's nvidia-* packages) when they hold nvcc, else a system nvcc
# (CUDACXX, PATH, /usr/local/cuda) with cuDNN and NCCL from the Python wheels or the system.
# The rest of the build's dependencies (scripts/setup.sh's Debian packages) must be installed.
#
# Environment: STEPS (3000 global steps per training run), CPU_STEPS (STEPS), BATCH_SIZE (100
# per replica), TAAS_BUILD (build-cuda/), SKIP_TESTS=1, SKIP_TRAINING=1.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
TAAS_BUILD="${TAAS_BUILD:-$TAAS_ROOT/build-cuda}"
source "$TAAS_ROOT/scripts/lib/build.sh"

STEPS="${STEPS:-3000}"
CPU_STEPS="${CPU_STEPS:-$STEPS}"
BATCH_SIZE="${BATCH_SIZE:-100}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/taas-gpu-bench-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# --- the toolkit -------------------------------------------------------------------------------
cuda_args=(-DTAAS_WITH_CUDA=ON)
python_nvidia() {
  python3 - <<'PY' 2>/dev/null || true
import importlib.util, sys
spec = importlib.util.find_spec("nvidia")
for path in (spec.submodule_search_locations if spec else []) or []:
    print(path)
    break
PY
}
if [ -z "${TAAS_CUDA_ROOT:-}" ] && [ -x "$TAAS_CUDA_DIR/nvidia/cu13/bin/nvcc" ]; then
  TAAS_CUDA_ROOT="$TAAS_CUDA_DIR/nvidia"
fi
wheels="$(python_nvidia)"
if [ -z "${TAAS_CUDA_ROOT:-}" ] && [ -n "$wheels" ] && [ -x "$wheels/cu13/bin/nvcc" ]; then
  TAAS_CUDA_ROOT="$wheels"
fi
if [ -n "${TAAS_CUDA_ROOT:-}" ]; then
  cuda_args+=("-DTAAS_CUDA_ROOT=$TAAS_CUDA_ROOT")
  toolkit="the wheels in $TAAS_CUDA_ROOT"
  libs=("$TAAS_CUDA_ROOT"/{cu13,cudnn,nccl}/lib)
else
  nvcc="${CUDACXX:-$(command -v nvcc || true)}"
  [ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
  [ -n "$nvcc" ] || die "no CUDA compiler: install the CUDA toolkit (nvcc), set CUDACXX, or set \
TAAS_CUDA_ROOT to a site-packages/nvidia folder holding cu13/bin/nvcc"
  cuda_args+=("-DCMAKE_CUDA_COMPILER=$nvcc")
  toolkit="$nvcc"
  libs=()
  # cuDNN, NCCL (and cuBLAS for CUDA 12 wheels) from the Python wheels when the system lacks them:
  # each wheel folder is a prefix with include/ and lib/, as find_path and find_library expect.
  if [ -n "$wheels" ]; then
    prefixes=()
    for part in cu13 cudnn nccl cublas cuda_runtime; do
      [ -d "$wheels/$part/include" ] && prefixes+=("$wheels/$part") && libs+=("$wheels/$part/lib")
    done
    if [ ${#prefixes[@]} -gt 0 ]; then
      cuda_args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefixes[*]}")")
      toolkit+=", libraries also from $wheels"
    fi
  fi
fi
# The wheels' libraries find each other by RUNPATH; the loader is told about them all the same.
for dir in "${libs[@]}"; do
  [ -d "$dir" ] && export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

gpus=0
if command -v nvidia-smi >/dev/null; then
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    gpus="$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c . || true)"
  fi
fi
log "machine: $(nproc) cores, $gpus GPUs$(command -v nvidia-smi >/dev/null &&
  printf ' (%s)' "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null |
    sort | uniq -c | sed 's/^ *//' | paste -sd';')"), toolkit: $toolkit"

# --- build -------------------------------------------------------------------------------------
log "configuring $TAAS_BUILD with CUDA"
taas_configure "${cuda_args[@]}"
mapfile -t gpu_tests < <(ctest --test-dir "$TAAS_BUILD" -N -L gpu | sed -n 's/^ *Test *#[0-9]*: //p')
[ ${#gpu_tests[@]} -gt 0 ] || die "the build lists no test labelled gpu: is TAAS_WITH_CUDA on?"
log "building ${gpu_tests[*]} fashion-mnist-cnn gpu_bench"
start=$SECONDS
cmake --build "$TAAS_BUILD" --target "${gpu_tests[@]}" fashion-mnist-cnn gpu_bench -- -j"$(nproc)"
log "built in $((SECONDS - start)) s"

# --- the gpu tests -----------------------------------------------------------------------------
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  log "gpu tests"
  ctest --test-dir "$TAAS_BUILD" -L gpu --output-on-failure ||
    die "a gpu test failed (above); the figures below would not mean much"
fi
[ "$gpus" -gt 0 ] || die "no GPU visible (nvidia-smi -L, CUDA_VISIBLE_DEVICES): the gpu tests \
skipped; the figures need a GPU"

# --- training ----------------------------------------------------------------------------------
cnn="$(find "$TAAS_BUILD" -name fashion-mnist-cnn -type f -perm -u+x | head -n1)"
bench="$(find "$TAAS_BUILD" -name gpu_bench -type f -perm -u+x | head -n1)"
# One training run: a fresh model dir, all-reduce across `replicas` model replicas in this
# process (--batch_size is the worker's, sliced among its replicas: BATCH_SIZE each), the chief's
# evaluation of the test set at the end. Prints "examples/s accuracy secs devices".
train() {
  local name="$1" device="$2" replicas="$3" steps="$4"
  local dir="$WORK/$name"
  mkdir -p "$dir"
  local start=$SECONDS
  env TAAS_DEVICE="$device" TAAS_STRATEGY=collective TAAS_REPLICAS_PER_WORKER="$replicas" \
    TF_MAX_STEPS="$steps" TF_LOGDIR="$dir/model" TAAS_EVAL_ON_CHIEF=end TAAS_LOG_STEPS=100 \
    TAAS_CHECK_VARIABLES_STEPS=1000 OMP_WAIT_POLICY=PASSIVE \
    "$cnn" -- --batch_size=$((BATCH_SIZE * replicas)) >"$dir/log" 2>&1 ||
    { tail -n 30 "$dir/log" >&2; die "$name: the trainer failed (log above)"; }
  python3 - "$dir/log" "$((SECONDS - start))" <<'PY'
import re, shlex, statistics, sys
rates, accuracy, devices = [], "n/a", ""
for line in open(sys.argv[1], errors="replace"):
    try:
        fields = dict(f.split("=", 1) for f in shlex.split(line) if "=" in f)
    except ValueError:  # not a logfmt line (a library's own output)
        continue
    if fields.get("msg") == "training" and "examples_per_sec" in fields:
        rates.append(float(fields["examples_per_sec"]))
    if fields.get("msg") == "evaluated on the chief":
        m = re.search(r"accuracy=([0-9.]+)", fields.get("metrics", ""))
        accuracy = m.group(1) if m else accuracy
    if "devices" in fields and not devices:
        devices = fields["devices"]
# The first window holds the start-up (cuDNN's plans, NCCL's connections): the median of the rest.
steady = rates[1:] or rates
print(f"{statistics.median(steady) if steady else 0:.0f} {accuracy} {sys.argv[2]} {devices or '?'}")
PY
}
if [ "${SKIP_TRAINING:-0}" != 1 ]; then
  log "training the CNN: $CPU_STEPS steps on the CPU, $STEPS on 1 GPU and on $gpus GPUs, batch \
$BATCH_SIZE per replica"
  read -r cpu_rate cpu_acc cpu_secs cpu_dev < <(train cpu cpu 1 "$CPU_STEPS")
  first_gpu="${CUDA_VISIBLE_DEVICES:-0}"
  read -r one_rate one_acc one_secs one_dev < <(CUDA_VISIBLE_DEVICES="${first_gpu%%,*}" \
    train gpu1 cuda 1 "$STEPS")
  all_rate="$one_rate" all_acc="$one_acc" all_secs="$one_secs" all_dev="$one_dev"
  if [ "$gpus" -gt 1 ]; then
    read -r all_rate all_acc all_secs all_dev < <(train gpus cuda "$gpus" "$STEPS")
  fi
fi

# --- kernels and NCCL --------------------------------------------------------------------------
log "cuBLAS, cuDNN and NCCL (gpu_bench)"
"$bench" --what gemm,conv,cnn,nccl --batch "$BATCH_SIZE" | tee "$WORK/kernels"

if [ "${SKIP_TRAINING:-0}" != 1 ]; then
  ceiling="$(sed -n 's/^CNN kernels-only ceiling at batch [0-9]*: \([0-9.]*\).*/\1/p' "$WORK/kernels")"
  echo
  printf '%-10s %-8s %8s %12s %10s %8s  %s\n' run replicas steps examples/s accuracy secs devices
  printf '%-10s %-8s %8s %12s %10s %8s  %s\n' cpu 1 "$CPU_STEPS" "$cpu_rate" "$cpu_acc" \
    "$cpu_secs" "$cpu_dev"
  printf '%-10s %-8s %8s %12s %10s %8s  %s\n' "1 GPU" 1 "$STEPS" "$one_rate" "$one_acc" \
    "$one_secs" "$one_dev"
  printf '%-10s %-8s %8s %12s %10s %8s  %s\n' "$gpus GPUs" "$gpus" "$STEPS" "$all_rate" "$all_acc" \
    "$all_secs" "$all_dev"
  python3 - "$one_rate" "$all_rate" "$gpus" "$cpu_rate" "${ceiling:-0}" <<'PY'
import sys
one, all_, gpus, cpu, ceiling = (float(x) for x in sys.argv[1:])
print()
print(f"1 GPU / CPU: {one / cpu:.1f}x" if cpu else "1 GPU / CPU: n/a")
if gpus > 1 and one:
    print(f"scaling over {gpus:.0f} GPUs: {all_ / one:.2f}x, {100 * all_ / (one * gpus):.0f}% of "
          "linear (target >= 90%)")
if ceiling:
    print(f"1 GPU against the kernels-only ceiling ({ceiling:.0f} examples/s): "
          f"{ceiling / one:.2f}x slower (target <= 1.5x)" if one else "")
PY
fi
