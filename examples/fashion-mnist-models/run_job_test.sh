#!/usr/bin/env bash
# Runs an example's job (job.yaml: 1 PS, 2 workers, 1 evaluator; job-allreduce.yaml: 2 workers
# and 1 evaluator, no PS) under the local launcher for a few steps and checks the job succeeds,
# the evaluator scored a checkpoint and the chief's final test accuracy beats chance clearly. The job takes a few seconds and, as on Kubeflow, its evaluator is
# stopped when the chief succeeds: it polls for checkpoints often so that it scores the first one
# (at half the steps) before then, also on a loaded machine.
# Usage: run_job_test.sh LAUNCHER BUILD_DIR JOB_YAML MAX_STEPS MIN_ACCURACY
set -euo pipefail
launcher="$1" build_dir="$2" job="$3" steps="$4" min_accuracy="$5"
work="$(mktemp -d "${TMPDIR:-/tmp}/taas-example-XXXXXX")"
trap 'rm -rf "$work"' EXIT

if ! "$launcher" run "$job" --build-dir "$build_dir" --verbose --model-dir "$work/model" \
    --env TF_MAX_STEPS="$steps" --env TAAS_SAVE_CHECKPOINTS_STEPS=$((steps / 2)) \
    --env TAAS_EVAL_INTERVAL_SECS=0.2 >"$work/log" 2>&1; then
  tail -n 40 "$work/log"
  echo "FAIL: the job did not succeed"
  exit 1
fi
grep -q 'msg="evaluated checkpoint"' "$work/log" ||
  { tail -n 40 "$work/log"; echo "FAIL: the evaluator scored no checkpoint"; exit 1; }
accuracy="$(grep 'msg="final test accuracy"' "$work/log" | sed -n 's/.* accuracy=\([0-9.]*\).*/\1/p' | tail -n1)"
[ -n "$accuracy" ] || { tail -n 40 "$work/log"; echo "FAIL: no final test accuracy"; exit 1; }
echo "final test accuracy $accuracy after $steps global steps"
python3 -c "import sys; sys.exit(0 if float('$accuracy') >= float('$min_accuracy') else 1)" ||
  { echo "FAIL: accuracy $accuracy < $min_accuracy"; exit 1; }
echo "1 passed, 0 failed"
