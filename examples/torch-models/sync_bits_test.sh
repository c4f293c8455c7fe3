#!/usr/bin/env bash
# PS sync training of a LibTorch model is reproducible bit for bit: the ResNet job (1 PS, 2
# synchronous workers) runs twice for STEPS global steps under the local launcher, and the final
# checkpoints (variables, optimizer slots, and the chief's BatchNorm statistics) are identical.
# Usage: sync_bits_test.sh LAUNCHER BUILD_DIR JOB_YAML STEPS
set -euo pipefail
launcher="$1" build_dir="$2" job="$3" steps="$4"
work="$(mktemp -d "${TMPDIR:-/tmp}/taas-sync-bits-XXXXXX")"
trap 'rm -rf "$work"' EXIT
for run in 1 2; do
  if ! "$launcher" run "$job" --build-dir "$build_dir" --model-dir "$work/model$run" \
      --evaluator-grace-seconds 0 --env TF_MAX_STEPS="$steps" \
      --env TAAS_SAVE_CHECKPOINTS_STEPS="$steps" >"$work/log$run" 2>&1; then
    tail -n 30 "$work/log$run"
    echo "FAIL: run $run did not succeed"
    exit 1
  fi
done
found=0
for data in "$work/model1"/model.ckpt-"$steps".*; do
  [ -e "$data" ] || continue
  found=1
  name="$(basename "$data")"
  cmp "$data" "$work/model2/$name" || { echo "FAIL: $name differs between the two runs"; exit 1; }
done
[ "$found" = 1 ] || { ls -la "$work/model1"; echo "FAIL: no checkpoint at step $steps"; exit 1; }
echo "the checkpoints at step $steps of two PS sync runs are identical:" \
  "$(cd "$work/model1" && ls model.ckpt-"$steps".* | tr '\n' ' ')"
echo "1 passed, 0 failed"
