#!/usr/bin/env bash
# Fashion-MNIST training benchmark: taas::nn (C++) against TensorFlow 2 Keras, same machine, same
# run, same models, batch size, optimizer and data. Prints examples/sec, the ratio ours/TF, peak
# RSS and final test accuracy for each model.
#
#   bench/run.sh                      # MLP 20 epochs, CNN 10 epochs, batch 100
#   MLP_EPOCHS=2 CNN_EPOCHS=1 bench/run.sh   # a quick look
#
# Environment: BATCH_SIZE (100), MLP_EPOCHS (20), CNN_EPOCHS (10), TAAS_THREADS (2: both cores),
# MODELS ("mlp cnn"), TAAS_BUILD (build/). TensorFlow (tensorflow-cpu from PyPI) is installed on
# first use into $TAAS_CACHE/bench-venv, never by the test setup.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

BATCH_SIZE="${BATCH_SIZE:-100}"
MLP_EPOCHS="${MLP_EPOCHS:-20}"
CNN_EPOCHS="${CNN_EPOCHS:-10}"
TAAS_THREADS="${TAAS_THREADS:-2}"
MODELS="${MODELS:-mlp cnn}"
VENV="$TAAS_BENCH_VENV"
RESULTS="$(mktemp -d "${TMPDIR:-/tmp}/taas-bench-XXXXXX")"
trap 'rm -rf "$RESULTS"' EXIT

[ -d /usr/share/datasets/fashion-mnist ] ||
  die "Fashion-MNIST is missing: run scripts/setup.sh (Debian package dataset-fashion-mnist)"

bench_peer_install tensorflow "tensorflow-cpu==$TAAS_TF_VERSION"

log "building fashion_mnist_bench in $TAAS_BUILD"
taas_build fashion_mnist_bench >/dev/null
BENCH_BIN="$(find "$TAAS_BUILD" -name fashion_mnist_bench -type f -perm -u+x | head -n1)"
[ -n "$BENCH_BIN" ] || die "fashion_mnist_bench was not built"

log "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for model in $MODELS; do
  epochs="$MLP_EPOCHS"
  [ "$model" = cnn ] && epochs="$CNN_EPOCHS"
  log "$model: taas, $epochs epochs, batch $BATCH_SIZE, $TAAS_THREADS threads"
  # Idle OpenMP threads sleep instead of spinning: on a shared 2-core machine a spinning thread
  # steals the core its partner needs, and every barrier then waits for a time slice.
  OMP_WAIT_POLICY=PASSIVE "$BENCH_BIN" --model "$model" --epochs "$epochs" \
    --batch_size "$BATCH_SIZE" --threads "$TAAS_THREADS" >>"$RESULTS/results.jsonl"
  log "$model: tensorflow, $epochs epochs, batch $BATCH_SIZE"
  TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" "$TAAS_ROOT/bench/fashion-mnist/tf_fashion_mnist.py" \
    --model "$model" --epochs "$epochs" --batch_size "$BATCH_SIZE" >>"$RESULTS/results.jsonl"
done

python3 - "$RESULTS/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
by = {(r["model"], r["impl"]): r for r in rows}
print()
print(f"{'model':<6}{'impl':<12}{'examples/s':>12}{'ex/cpu-s':>10}{'peak RSS MB':>13}"
      f"{'test acc':>10}{'train s':>9}")
for r in rows:
    print(f"{r['model']:<6}{r['impl']:<12}{r['examples_per_sec']:>12.0f}"
          f"{r['examples_per_cpu_sec']:>10.0f}{r['peak_rss_mb']:>13.0f}"
          f"{r['test_accuracy']:>10.4f}{r['train_seconds']:>9.1f}")
print()
for model in ("mlp", "cnn"):
    ours, tf = by.get((model, "taas")), by.get((model, "tensorflow"))
    if not ours or not tf:
        continue
    speed = ours["examples_per_sec"] / tf["examples_per_sec"]
    steady = ours["examples_per_sec"] / tf["examples_per_sec_steady"]
    memory = ours["peak_rss_mb"] / tf["peak_rss_mb"]
    print(f"{model}: speed ours/TF {speed:.2f}x (vs TF steady state without its first epoch "
          f"{steady:.2f}x), peak RSS ours/TF {memory:.2f}x, test accuracy "
          f"{ours['test_accuracy']:.4f} vs {tf['test_accuracy']:.4f}")
PY
