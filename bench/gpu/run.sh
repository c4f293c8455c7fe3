#!/usr/bin/env bash
# The GPU proof in one call (bench/gpu/README.md). It runs inside the folder bench/gpu/bundle.sh
# builds (build/gpu-bundle/run.sh), on a machine with NVIDIA GPUs, a driver for CUDA 13 and a
# python3 with PyTorch's CUDA 13 wheels: no build, no network, none of our Debian packages. It
# runs the `gpu` tests, trains the Fashion-MNIST CNN with taas on the CPU, on one GPU and on every
# GPU, trains the same CNN with PyTorch on one GPU (eager and CUDA graphs: torch_cnn.py), trains
# the torch engine's ResNet (fashion-mnist-torch) and PyTorch's same ResNet eager on one GPU,
# measures cuBLAS, cuDNN and NCCL (gpu_bench), and prints one table against the targets.
#
#   ./run.sh                         # everything
#   STEPS=500 ./run.sh               # a quick look
#   ./run.sh --self-check [--cuda-libs DIR] [--torch-libs DIR]
#                                    # what the build machine checks (no GPU there): unpacks,
#                                    # runs both trainers' --help, a few CPU steps, and each gpu
#                                    # test (skipped)
#
# The CUDA runtime, cuBLAS, cuDNN and NCCL (the bundle's `cuda-libraries`) come from python3's
# nvidia-* wheels, or from --cuda-libs DIR (a wheels' nvidia/ folder); LibTorch (its
# `torch-libraries`: the bundle carries none) from python3's PyTorch (torch/lib), or from
# --torch-libs DIR; the driver from the system.
# Run from the source tree (bench/gpu/run.sh), it builds the bundle first and runs that.
#
# Environment: STEPS (3000 steps of each GPU run), CPU_STEPS (300), BATCH_SIZE (100 per replica),
# RESULTS_DIR (where the logs and table.txt go; a temporary folder by default), SKIP_TESTS=1,
# SKIP_TORCH=1, SKIP_BENCH=1.
set -euo pipefail
BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[gpu-proof] %s\n' "$*" >&2; }
die() { printf '[gpu-proof] error: %s\n' "$*" >&2; exit 1; }

if [ ! -f "$BUNDLE/cuda-libraries" ] && [ -x "$BUNDLE/bundle.sh" ]; then
  "$BUNDLE/bundle.sh"
  exec "$BUNDLE/../../build/gpu-bundle/run.sh" "$@"
fi

SELF_CHECK=0
CUDA_LIBS=""
TORCH_LIBS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --self-check) SELF_CHECK=1 ;;
    --cuda-libs) [ $# -gt 1 ] || die "--cuda-libs needs a folder"; CUDA_LIBS="$2"; shift ;;
    --torch-libs) [ $# -gt 1 ] || die "--torch-libs needs a folder"; TORCH_LIBS="$2"; shift ;;
    *) die "unknown argument $1 (--self-check, --cuda-libs DIR, --torch-libs DIR)" ;;
  esac
  shift
done
STEPS="${STEPS:-3000}"
CPU_STEPS="${CPU_STEPS:-300}"
BATCH_SIZE="${BATCH_SIZE:-100}"
for n in "$STEPS" "$CPU_STEPS" "$BATCH_SIZE"; do
  [[ "$n" =~ ^[1-9][0-9]{0,6}$ ]] || die "STEPS, CPU_STEPS and BATCH_SIZE must be whole numbers"
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/taas-gpu-proof-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
RESULTS_DIR="${RESULTS_DIR:-$WORK/results}"
mkdir -p "$RESULTS_DIR"
START=$SECONDS

# --- the bundle's files ---------------------------------------------------------------------
# The bundle keeps its binaries and libraries xz-compressed (bin/, tests/, lib/: a third of their
# size); they are unpacked into this run's folder with python3's lzma (no xz tool needed), so
# the bundle itself is never written to.
unpack() {
  python3 - "$BUNDLE" "$WORK" <<'PY' || die "cannot unpack the bundle (python3 with lzma is needed)"
import lzma, os, shutil, sys
bundle, work = sys.argv[1:]
for part in ("bin", "tests", "lib"):
    os.makedirs(os.path.join(work, part))
    for name in sorted(os.listdir(os.path.join(bundle, part))):
        target = os.path.join(work, part, name[:-len(".xz")])
        with lzma.open(os.path.join(bundle, part, name)) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.chmod(target, 0o755 if part != "lib" else 0o644)
PY
}

# The folders holding `cuda-libraries`: each name in one of the wheels' */lib folders.
cuda_library_path() {
  local roots=() dirs=() name root dir found
  if [ -n "$CUDA_LIBS" ]; then
    roots=("$CUDA_LIBS")
  else
    mapfile -t roots < <(python3 -c 'import importlib.util
spec = importlib.util.find_spec("nvidia")
print("\n".join(spec.submodule_search_locations if spec else []))' 2>/dev/null || true)
  fi
  [ ${#roots[@]} -gt 0 ] || die "python3 has no nvidia package (PyTorch's CUDA wheels: \
nvidia-cuda-runtime, nvidia-cublas, nvidia-cudnn-cu13, nvidia-nccl-cu13); install them or pass \
--cuda-libs SITE-PACKAGES/nvidia"
  while read -r name; do
    found=""
    for root in "${roots[@]}"; do
      for dir in "$root"/*/lib; do
        if [ -e "$dir/$name" ]; then found="$dir"; break 2; fi
      done
    done
    [ -n "$found" ] || die "$name is in none of ${roots[*]}/*/lib: the CUDA 13 wheels are missing"
    [[ " ${dirs[*]} " == *" $found "* ]] || dirs+=("$found")
  done <"$BUNDLE/cuda-libraries"
  (IFS=:; echo "${dirs[*]}")
}

# The folder holding `torch-libraries` (libtorch_cpu.so, libc10.so...): the installed PyTorch's
# torch/lib, the libraries `import torch` loads, which bundle.sh took from the same wheel
# (torch==2.11.0, scripts/setup.d/46-libtorch.sh). Their own CUDA dependencies (libcupti) they
# find by their RUNPATH in the PyTorch's nvidia wheels.
torch_library_path() {
  local dir="$TORCH_LIBS" name
  if [ -z "$dir" ]; then
    dir="$(python3 -c 'import os, torch
print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)" ||
      die "python3 cannot import torch (PyTorch 2.11, the CUDA 13 build), whose \
libraries the torch-engine trainer loads; install it or pass --torch-libs SITE-PACKAGES/torch/lib"
  fi
  while read -r name; do
    [ -e "$dir/$name" ] || die "$name is not in $dir: the torch engine needs PyTorch 2.11's \
libraries (the bundle $(grep '^built' "$BUNDLE/MANIFEST"))"
  done <"$BUNDLE/torch-libraries"
  echo "$dir"
}

# Runs one of the bundle's binaries with its libraries: the bundle's first, then the CUDA ones,
# then LibTorch's (bundle.sh resolves them in the same order).
with_libs() {
  LD_LIBRARY_PATH="$WORK/lib:$CUDA_PATH:$TORCH_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}

# --- the gpu tests ------------------------------------------------------------------------------
# Runs every test of tests/ (exit 0 passed, 77 skipped: no device); writes "passed skipped failed
# names-of-failed" to $RESULTS_DIR/tests.
run_tests() {
  local passed=0 skipped=0 failed=0 failures="" test name code
  for test in "$WORK"/tests/*; do
    name="$(basename "$test")"
    code=0
    (cd "$WORK" && with_libs timeout 300 "$test") >"$RESULTS_DIR/$name.log" 2>&1 || code=$?
    case "$code" in
      0) passed=$((passed + 1)); log "$name: passed" ;;
      77) skipped=$((skipped + 1)); log "$name: skipped ($(tail -n 1 "$RESULTS_DIR/$name.log"))" ;;
      *) failed=$((failed + 1)); failures+="${failures:+,}$name"
         log "$name: FAILED (exit $code), its last lines:"
         tail -n 20 "$RESULTS_DIR/$name.log" >&2 ;;
    esac
  done
  echo "$passed $skipped $failed ${failures:--}" >"$RESULTS_DIR/tests"
}

# --- taas and PyTorch training --------------------------------------------------------------------
# One taas run as one all-reduce worker in a fresh model dir, evaluated on the test set at the
# end: `name device replicas steps [trainer model-args...]` (the trainer: fashion-mnist-cnn by
# default; the batch and data arguments are added); prints "examples/s accuracy secs devices"
# (the median of the progress windows after the first, which holds cuDNN's plans and NCCL's
# connections), or fails showing the end of the trainer's log. Every wait below is bounded: the device time is short.
train_taas() {
  local name="$1" device="$2" replicas="$3" steps="$4" trainer="${5:-fashion-mnist-cnn}"
  local start=$SECONDS
  shift $(($# < 5 ? $# : 5))
  local logfile="$RESULTS_DIR/taas-$name.log"
  (cd "$WORK" && with_libs env TAAS_DEVICE="$device" TAAS_STRATEGY=collective \
    TAAS_REPLICAS_PER_WORKER="$replicas" TF_MAX_STEPS="$steps" TF_LOGDIR="$WORK/model-$name" \
    TAAS_EVAL_ON_CHIEF=end TAAS_LOG_STEPS=$((steps < 200 ? 1 : 100)) \
    TAAS_CHECK_VARIABLES_STEPS=1000 TF_SAVE_SUMMARIES_STEPS=0 OMP_WAIT_POLICY=PASSIVE timeout 300 \
    "$WORK/bin/$trainer" -- "$@" --batch_size=$((BATCH_SIZE * replicas)) \
    --data_dir="$BUNDLE/data") >"$logfile" 2>&1 ||
    { tail -n 30 "$logfile" >&2; log "taas $name: the trainer failed (its log above)"; return 1; }
  python3 - "$logfile" "$((SECONDS - start))" <<'PY'
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
        devices = fields["devices"].replace(" ", "_")
steady = rates[1:] or rates
print(f"{statistics.median(steady) if steady else 0:.0f} {accuracy} {sys.argv[2]} {devices or '?'}")
PY
}

# PyTorch's run of `name` (eager, graphs: the CNN; resnet-eager: the ResNet) on the first GPU: its
# JSON line into torch-NAME.json.
train_torch() {
  local name="$1" model=cnn mode="$1" logfile="$RESULTS_DIR/torch-$1.log"
  [[ "$name" != resnet-* ]] || { model=resnet; mode="${name#resnet-}"; }
  CUDA_VISIBLE_DEVICES="$FIRST_GPU" timeout 300 python3 "$BUNDLE/torch_cnn.py" \
    --data_dir="$BUNDLE/data" --model="$model" --mode="$mode" --steps="$STEPS" \
    --batch_size="$BATCH_SIZE" >"$RESULTS_DIR/torch-$name.json" 2>"$logfile" ||
    { tail -n 30 "$logfile" >&2; log "PyTorch $name failed (its log above)"; return 0; }
  log "PyTorch $name: $(cat "$RESULTS_DIR/torch-$name.json")"
}

# --- the self-check and the whole run -----------------------------------------------------------
# Each trainer's --help with every symbol bound at start (LD_BIND_NOW): a library of the machine
# too old for the bundle (glibc, libstdc++, the CUDA wheels') or a LibTorch other than the one it
# was built against fails here, saying which.
preflight() {
  local trainer
  for trainer in fashion-mnist-cnn fashion-mnist-torch; do
    LD_BIND_NOW=1 with_libs "$WORK/bin/$trainer" --help >"$RESULTS_DIR/preflight.log" 2>&1 ||
      { cat "$RESULTS_DIR/preflight.log" >&2; die "the bundle's $trainer cannot start here \
(above): the bundle $(grep '^needs' "$BUNDLE/MANIFEST"), and it took the CUDA libraries from \
$CUDA_PATH and LibTorch from $TORCH_PATH"; }
  done
}

self_check() {
  BATCH_SIZE=16
  train_taas self-check cpu 1 3 >"$RESULTS_DIR/taas-self-check" || die "3 CPU steps failed"
  read -r rate accuracy _ devices <"$RESULTS_DIR/taas-self-check"
  [ "$accuracy" != n/a ] || die "the CPU run scored no test accuracy"
  log "3 CPU steps: $rate examples/s, test accuracy $accuracy, on $devices"
  run_tests
  read -r passed skipped failed failures <"$RESULTS_DIR/tests"
  [ "$failed" -eq 0 ] || die "gpu tests failed: $failures"
  log "self-check passed: both trainers' --help with every symbol bound (LibTorch from \
$TORCH_PATH), 3 CPU steps, $passed gpu tests passed and $skipped skipped"
}

machine_line() {
  local names="" driver=""
  if command -v nvidia-smi >/dev/null; then
    names="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c |
      sed 's/^ *\([0-9]*\) \(.*\)/\2 x\1/' | paste -sd';' || true)"
    driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null |
      head -n1 || true)"
  fi
  echo "${names:-no nvidia-smi}, driver ${driver:-?}, $(nproc) cores, $(python3 -c \
'import torch; print("torch", torch.__version__)' 2>/dev/null || echo "no torch")"
}

# The GPUs this process may use: nvidia-smi's, narrowed by CUDA_VISIBLE_DEVICES; PyTorch's count
# where there is no nvidia-smi.
visible_gpus() {
  local n=0
  if command -v nvidia-smi >/dev/null; then
    n="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  else
    n="$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)"
  fi
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "$n" -gt 0 ]; then
    n="$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c . || true)"
  fi
  echo "$n"
}

unpack
CUDA_PATH="$(cuda_library_path)"
TORCH_PATH="$(torch_library_path)"
preflight
if [ "$SELF_CHECK" = 1 ]; then
  self_check
  exit 0
fi
MACHINE="$(machine_line)"
GPUS="$(visible_gpus)"
FIRST_GPU="${CUDA_VISIBLE_DEVICES:-0}"
FIRST_GPU="${FIRST_GPU%%,*}"
log "machine: $MACHINE; $GPUS GPUs visible; results in $RESULTS_DIR"
[ "${SKIP_TESTS:-0}" = 1 ] || run_tests
[ "$GPUS" -gt 0 ] || die "no GPU visible (nvidia-smi -L, CUDA_VISIBLE_DEVICES): nothing to measure"
log "taas: $CPU_STEPS steps on the CPU, $STEPS on 1 GPU$([ "$GPUS" -gt 1 ] && echo " and on $GPUS")"
# A run that fails leaves its figures out of the table (n/a, not met) and the others go on.
train_taas cpu cpu 1 "$CPU_STEPS" >"$RESULTS_DIR/taas-cpu" || true
CUDA_VISIBLE_DEVICES="$FIRST_GPU" train_taas gpu1 cuda 1 "$STEPS" >"$RESULTS_DIR/taas-gpu1" || true
if [ "$GPUS" -gt 1 ]; then
  train_taas gpus cuda "$GPUS" "$STEPS" >"$RESULTS_DIR/taas-gpus" || true
fi
# The torch engine's ResNet and PyTorch's, eager, on the same GPU, batch, steps and data.
CUDA_VISIBLE_DEVICES="$FIRST_GPU" train_taas resnet1 cuda 1 "$STEPS" fashion-mnist-torch \
  --model=resnet >"$RESULTS_DIR/taas-resnet1" || true
if [ "${SKIP_TORCH:-0}" != 1 ]; then
  train_torch eager
  train_torch graphs
  train_torch resnet-eager
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  log "cuBLAS, cuDNN and NCCL (gpu_bench)"
  with_libs timeout 300 "$WORK/bin/gpu_bench" --what gemm,conv,cnn,nccl --batch "$BATCH_SIZE" \
    >"$RESULTS_DIR/gpu_bench.log" 2>&1 ||
    log "gpu_bench failed: $(tail -n 3 "$RESULTS_DIR/gpu_bench.log")"
fi
python3 "$BUNDLE/table.py" "$RESULTS_DIR" "$MACHINE" "$GPUS" "$STEPS" "$CPU_STEPS" "$BATCH_SIZE" \
  "$((SECONDS - START))" | tee "$RESULTS_DIR/table.txt"
