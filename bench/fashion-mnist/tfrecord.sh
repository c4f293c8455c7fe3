#!/usr/bin/env bash
# Training from TFRecord files against the in-memory IDX pipeline (issue 36's target: at most 5%
# fewer examples/s, the same test accuracy within 0.5 points). Writes Fashion-MNIST as 4 TFRecord
# files (fashion-mnist-to-tfrecord), then trains the CNN in one process (fashion_mnist_bench) from
# the IDX files in memory and from the files through data::StreamPipeline, alternately, once per
# seed of SEEDS, with the same seed, batch, shuffle buffer and prefetch; the test set is the IDX
# one for both. The two inputs shuffle differently (another buffer, the files' order), so one
# seed's accuracies differ by the run-to-run spread: the means over the seeds are compared.
# examples/s is wall time (other load counts); examples per CPU-second is the steadier ratio on a
# busy machine. Prints each run's JSON line and one summary line with the ratios and the load.
#
#   bench/fashion-mnist/tfrecord.sh                 # CNN, 3 epochs, seeds 1 2 3, build/
#   EPOCHS=1 SEEDS=1 TAAS_BUILD=build-cpu bench/fashion-mnist/tfrecord.sh
#
# Environment: MODEL (cnn), EPOCHS (3), SEEDS ("1 2 3"), BATCH_SIZE (100), TAAS_THREADS (2),
# DECODE_THREADS (1), TAAS_BUILD (build/; the targets fashion_mnist_bench and
# fashion-mnist-to-tfrecord must be built there).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"

MODEL="${MODEL:-cnn}"
EPOCHS="${EPOCHS:-3}"
SEEDS="${SEEDS:-1 2 3}"
BATCH_SIZE="${BATCH_SIZE:-100}"
TAAS_THREADS="${TAAS_THREADS:-2}"
DECODE_THREADS="${DECODE_THREADS:-1}"
TAAS_BUILD="${TAAS_BUILD:-$TAAS_ROOT/build}"
find_built() {
  local found
  found="$(find "$TAAS_BUILD" -name "$1" -type f -perm -u+x -not -path '*/CMakeFiles/*' | head -n1)"
  [ -n "$found" ] || die "$1 is not built in $TAAS_BUILD: cmake --build $TAAS_BUILD --target $1"
  echo "$found"
}
bench="$(find_built fashion_mnist_bench)"
convert="$(find_built fashion-mnist-to-tfrecord)"
work="$(mktemp -d "${TMPDIR:-/tmp}/taas-tfrecord-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$convert" --out_dir "$work/data" --train_shards 4 --test_shards 1 >&2
export OMP_WAIT_POLICY=PASSIVE
run() { # INPUT SEED: one training run's JSON line, appended to $work/results
  local args=(--model "$MODEL" --epochs "$EPOCHS" --batch_size "$BATCH_SIZE" --threads "$TAAS_THREADS"
    --seed "$2")
  [ "$1" = tfrecord ] && args+=(--train_files "$work/data/train-*.tfrecord" --decode_threads "$DECODE_THREADS")
  log "$MODEL from $1, seed $2, $EPOCHS epochs (load: $(cut -d' ' -f1-3 /proc/loadavg))"
  "$bench" "${args[@]}" 2>/dev/null | tee -a "$work/results"
}
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for seed in $SEEDS; do
  run idx "$seed"
  run tfrecord "$seed"
done
python3 - "$work/results" "$load_before" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
by = {kind: [r for r in rows if r["input"] == kind] for kind in ("idx", "tfrecord")}
speed = {k: statistics.mean(r["examples_per_sec"] for r in v) for k, v in by.items()}
cpu = {k: statistics.mean(r["examples_per_cpu_sec"] for r in v) for k, v in by.items()}
spread = {k: [r["test_accuracy"] for r in v] for k, v in by.items()}
accuracy = {k: statistics.mean(r["test_accuracy"] for r in v) for k, v in by.items()}
rss = {k: max(r["peak_rss_mb"] for r in v) for k, v in by.items()}
ratio = speed["tfrecord"] / speed["idx"]
points = 100 * (accuracy["tfrecord"] - accuracy["idx"])
print(json.dumps({
    "summary": "tfrecord vs idx", "model": rows[0]["model"], "runs_each": len(by["idx"]),
    "idx_examples_per_sec": round(speed["idx"], 1),
    "tfrecord_examples_per_sec": round(speed["tfrecord"], 1),
    "speed_ratio": round(ratio, 4), "speed_target": ">= 0.95",
    "cpu_speed_ratio": round(cpu["tfrecord"] / cpu["idx"], 4),
    "idx_accuracies": spread["idx"], "tfrecord_accuracies": spread["tfrecord"],
    "idx_accuracy": round(accuracy["idx"], 4), "tfrecord_accuracy": round(accuracy["tfrecord"], 4),
    "accuracy_points": round(points, 2), "accuracy_target": "within 0.5",
    "idx_peak_rss_mb": rss["idx"], "tfrecord_peak_rss_mb": rss["tfrecord"],
    "load_before": sys.argv[2], "load_after": sys.argv[3]}))
PY
