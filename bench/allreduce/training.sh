#!/usr/bin/env bash
# The Fashion-MNIST CNN trained three ways under the local launcher, in one run on this machine:
# all-reduce (2 workers, no PS), PS asynchronous and PS synchronous (1 PS, 2 workers). For each:
# examples/s of the whole job, the share of a worker's step spent communicating (comm_fraction:
# all-reduce of the gradients; with PS the pull and push, including the sync wait) and the
# chief's test accuracy after the same number of train() calls per worker (all-reduce and sync:
# STEPS global steps; async: 2 x STEPS global steps, STEPS per worker). Then the scaling of
# all-reduce: examples/s against 1, 2 and 4 workers, and against 1, 2 and 4 model replicas in one
# worker (batch BATCH per replica throughout), drawn into docs/allreduce-scaling.svg.
#
#   bench/allreduce/training.sh               # 1500 steps for the comparison, 300 for scaling
#   STEPS=600 SCALE_STEPS=200 bench/allreduce/training.sh
#
# On a 2-core machine the workers share two cores, so scaling shows the overhead of distribution,
# not a speed-up: with one thread per worker, 2 workers can at best double one worker's rate and
# 4 cannot go beyond that.
#
# Environment: STEPS (1500), SCALE_STEPS (300), BATCH (100), TAAS_BUILD (build/), BUILD (1),
# CHART (docs/allreduce-scaling.svg; empty: none).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

STEPS="${STEPS:-1500}"
SCALE_STEPS="${SCALE_STEPS:-300}"
BATCH="${BATCH:-100}"
CHART="${CHART-$TAAS_ROOT/docs/allreduce-scaling.svg}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/taas-allreduce-training-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

if [ "${BUILD:-1}" != 0 ]; then
  log "building the launcher and fashion-mnist-cnn in $TAAS_BUILD"
  taas_build taas fashion-mnist-cnn >/dev/null
fi
log "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# run NAME PS WORKERS STEPS WORKER_BATCH [KEY=VALUE...]: one job, its log in $WORK/NAME.log.
run() {
  local name="$1" ps="$2" workers="$3" steps="$4" batch="$5"
  shift 5
  python3 "$TAAS_ROOT/bench/allreduce/training.py" manifest "$name" "$ps" "$workers" "$batch" \
    >"$WORK/$name.yaml"
  # One compute thread per model replica throughout, so that the scaling is against one replica.
  local env=(--env TF_MAX_STEPS="$steps" --env TAAS_LOG_STEPS=50 --env TF_SAVE_CHECKPOINTS_SECS=0
             --env TF_SAVE_SUMMARIES_STEPS=0 --env TAAS_COMPUTE_THREADS=1)
  for kv in "$@"; do env+=(--env "$kv"); done
  "$TAAS_BUILD/launcher/taas" run "$WORK/$name.yaml" --build-dir "$TAAS_BUILD" --no-ui --verbose \
    --progress-secs 0 --model-dir "$WORK/$name-model" "${env[@]}" >"$WORK/$name.log" 2>&1 ||
    { tail -n 30 "$WORK/$name.log"; die "the $name job failed"; }
}

log "comparison: $STEPS train() calls per worker, 2 workers, batch $BATCH each"
run allreduce 0 2 "$STEPS" "$BATCH"
run ps-async 1 2 $((2 * STEPS)) "$BATCH"
run ps-sync 1 2 "$STEPS" "$BATCH" TF_SYNC=true
log "scaling: $SCALE_STEPS steps, batch $BATCH per model replica"
# One worker has no TF_CONFIG (as in Kubeflow): the setting makes it all-reduce alone too.
for n in 1 2 4; do run "workers-$n" 0 "$n" "$SCALE_STEPS" "$BATCH" TAAS_STRATEGY=collective; done
for k in 2 4; do
  run "replicas-$k" 0 1 "$SCALE_STEPS" $((k * BATCH)) TAAS_REPLICAS_PER_WORKER="$k"
done
python3 "$TAAS_ROOT/bench/allreduce/training.py" report "$WORK" "$BATCH" "$CHART"
log "load after the run $(cut -d' ' -f1-3 /proc/loadavg)"
