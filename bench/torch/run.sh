#!/usr/bin/env bash
# The LibTorch engine against its peers (issue 34), measured in one run on this machine:
#   1. taas all-reduce, 2 workers, against PyTorch DistributedDataParallel (gloo, 2 processes on
#      127.0.0.1): the ResNet-style CNN of examples/torch-models, batch BATCH per replica, STEPS
#      steps, Adam 0.001. Examples/s ratio and both final test accuracies.
#   2. The floor: taas with 1 worker (all-reduce alone) against the same model in one PyTorch
#      process with no distribution.
#   3. The built-in engine (taas::nn, fashion-mnist-cnn) against LibTorch (fashion-mnist-torch
#      --model=cnn): the same CNN, one worker each, CNN_STEPS steps of CNN_BATCH; examples per
#      CPU-second of the whole job.
# Every replica, ours and PyTorch's, computes with THREADS threads (TAAS_COMPUTE_THREADS,
# torch.set_num_threads) and OMP_WAIT_POLICY=PASSIVE. The runs of one comparison alternate and
# repeat REPEAT times; the table gives each run and the medians' ratios.
#
#   bench/torch/run.sh                    # 1000 steps, 3 repetitions
#   STEPS=3000 REPEAT=1 bench/torch/run.sh   # the accuracy comparison (a constant rate)
#   bench/torch/run.sh --prepare           # install the peer and build, then stop
#
# Environment: STEPS (1000), BATCH (64), CNN_STEPS (STEPS), CNN_BATCH (100), REPEAT (3),
# THREADS (1), LOG_STEPS (50: the first window, start-up included, is left out of examples/s),
# TAAS_BUILD (build/), BUILD (1), PEER: install (default: PyTorch torch==$TAAS_TORCH_VERSION,
# ~3 GB with its nvidia-* wheels, installed on first use into $TAAS_CACHE/bench-venv, never by the
# test setup), auto (the peer only where it is already installed: the ctest entry), off.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

STEPS="${STEPS:-1000}"
PEER="${PEER:-install}"
VENV="$TAAS_BENCH_VENV"
prepare=0
[ "${1:-}" = --prepare ] && prepare=1

[ -d /usr/share/datasets/fashion-mnist ] ||
  die "Fashion-MNIST is missing: run scripts/setup.sh (Debian package dataset-fashion-mnist)"

peer_python=""
case "$PEER" in
  install | auto)
    if [ "$PEER" = install ]; then
      bench_peer_install torch "torch==$TAAS_TORCH_VERSION" "~3 GB with its nvidia-* wheels"
    fi
    if "$VENV/bin/python" -c 'import torch' >/dev/null 2>&1; then
      peer_python="$VENV/bin/python"
    else
      log "PyTorch is not installed in $VENV: the peers are skipped (PEER=install installs it)"
    fi
    ;;
  off) ;;
  *) die "PEER=$PEER: expected install, auto or off" ;;
esac

if [ "${BUILD:-1}" != 0 ]; then
  log "building the launcher, fashion-mnist-torch and fashion-mnist-cnn in $TAAS_BUILD"
  taas_build taas fashion-mnist-torch fashion-mnist-cnn >/dev/null
fi
[ -x "$TAAS_BUILD/examples/torch-models/fashion-mnist-torch" ] ||
  die "no fashion-mnist-torch in $TAAS_BUILD: the build has no torch engine (scripts/setup.d/46-libtorch.sh)"
[ "$prepare" = 1 ] && exit 0

WORK="$(mktemp -d "${TMPDIR:-/tmp}/taas-torch-bench-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
python3 "$TAAS_ROOT/bench/torch/torch_bench.py" --work "$WORK" --build "$TAAS_BUILD" \
  --peer-python "$peer_python" --steps "$STEPS" --batch "${BATCH:-64}" \
  --cnn-steps "${CNN_STEPS:-$STEPS}" --cnn-batch "${CNN_BATCH:-100}" --repeat "${REPEAT:-3}" \
  --threads "${THREADS:-1}" --log-steps "${LOG_STEPS:-50}"
