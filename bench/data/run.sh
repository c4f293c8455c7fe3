#!/usr/bin/env bash
# Input pipelines against tf.data: decode + shuffle + batch of Fashion-MNIST's training set as a
# TFRecord file of tf.train.Examples, taas's stream pipeline (taas_data_throughput_bench) and
# tf.data (tf_data_peer.py: TFRecordDataset + map(num_parallel_calls) + shuffle + batch +
# prefetch) at 1 and 2 threads, alternating in one run; prints examples/s and the ratio. Then the
# memory bench (taas_data_memory_bench: peak RSS reading a 2 GiB set against the buffers' bound).
#
#   bench/data/run.sh                 # THREADS="1 2", EPOCHS=2, MEMORY_MIB=2048
#   BUILD=0 TAAS_BUILD=build-cpu MEMORY_MIB=0 bench/data/run.sh   # throughput only, built already
#
# TensorFlow (tensorflow-cpu from PyPI) is installed on first use into $TAAS_BENCH_VENV, never by
# the test setup.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

THREADS="${THREADS:-1 2}"
EPOCHS="${EPOCHS:-2}"
MEMORY_MIB="${MEMORY_MIB:-2048}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/taas-data-bench-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

bench_peer_install tensorflow "tensorflow-cpu==$TAAS_TF_VERSION"
if [ "${BUILD:-1}" != 0 ]; then
  log "building the data benches in $TAAS_BUILD"
  taas_build taas_data_throughput_bench taas_data_memory_bench >/dev/null
fi
bin="$TAAS_BUILD/bench/data"
[ -x "$bin/taas_data_throughput_bench" ] || die "$bin/taas_data_throughput_bench was not built"

log "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/taas_data_throughput_bench" --write "$WORK/train.tfrecord"
rate() { sed -n 's/.*examples_per_second \([0-9]*\).*/\1/p'; }
printf '%-8s %-9s %14s %12s\n' threads impl examples/s cpu_seconds
for threads in $THREADS; do
  taas_line="$("$bin/taas_data_throughput_bench" --read "$WORK/train.tfrecord" --threads "$threads" --epochs "$EPOCHS")"
  tf_line="$("$TAAS_BENCH_VENV/bin/python" "$TAAS_ROOT/bench/data/tf_data_peer.py" --read "$WORK/train.tfrecord" --threads "$threads" --epochs "$EPOCHS")"
  for impl in taas tf.data; do
    line="$taas_line"
    [ "$impl" = tf.data ] && line="$tf_line"
    printf '%-8s %-9s %14s %12s\n' "$threads" "$impl" "$(rate <<<"$line")" \
      "$(sed -n 's/.*cpu_seconds \([0-9.]*\).*/\1/p' <<<"$line")"
  done
  awk -v a="$(rate <<<"$taas_line")" -v b="$(rate <<<"$tf_line")" -v t="$threads" \
    'BEGIN { printf "threads %s: taas / tf.data examples/s %.2fx (target >= 1.00)\n", t, a / b }'
done
log "load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$MEMORY_MIB" != 0 ]; then
  "$bin/taas_data_memory_bench" --mib "$MEMORY_MIB" --dir "$WORK"
fi
