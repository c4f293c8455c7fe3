#!/usr/bin/env bash
# Runs an example's job (job.yaml: 1 PS, 2 workers, 1 evaluator; job-allreduce.yaml: 2 workers
# and 1 evaluator, no PS) under the local launcher for a few steps and checks the job succeeds,
# the console's last line names the chief's final test accuracy (the job's result, from the report
# it leaves in TAAS_TERMINATION_MESSAGE_PATH), which beats chance clearly, and the evaluator scored
# the final checkpoint: the job waits for it after the chief's success (--evaluator-grace-seconds).
# It polls for checkpoints often so that it also scores the first one (at half the steps).
# Each PATTERN after those (an extended regular expression) must match a line of the job's
# console, where every replica's lines stand behind its name ("[...-worker-0] ...").
# With --predict TEST_IMAGES (the input the model's predict_inputs reads: an IDX images file with
# its labels file beside it, a folder of class folders), `taas predict` then scores them with the
# job's model dir, and the accuracy of its output (the class column against the label column)
# must be the evaluator's score of the same, final, checkpoint. --predict-batch-size N predicts in
# batches of N (`taas predict --batch-size`): the evaluator's, for an engine whose results depend
# on the batch's size.
# Usage: run_job_test.sh LAUNCHER BUILD_DIR JOB_YAML MAX_STEPS MIN_ACCURACY
#                        [--predict TEST_IMAGES [--predict-batch-size N]] [PATTERN...]
set -euo pipefail
launcher="$1" build_dir="$2" job="$3" steps="$4" min_accuracy="$5"
shift 5
test_images="" predict_batch=()
if [ "${1:-}" = --predict ]; then
  test_images="$2"
  shift 2
  if [ "${1:-}" = --predict-batch-size ]; then
    predict_batch=(--batch-size "$2")
    shift 2
  fi
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/taas-example-XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() { tail -n 40 "$work/log"; echo "FAIL: $1"; exit 1; }

if ! "$launcher" run "$job" --build-dir "$build_dir" --verbose --model-dir "$work/model" \
    --env TF_MAX_STEPS="$steps" --env TAAS_SAVE_CHECKPOINTS_STEPS=$((steps / 2)) \
    --env TAAS_EVAL_INTERVAL_SECS=0.2 >"$work/log" 2>&1; then
  fail "the job did not succeed"
fi
scored="$(sed -n 's/.*msg="evaluated checkpoint" .* global_step=\([0-9]*\) .*/\1/p' "$work/log")"
[ -n "$scored" ] || fail "the evaluator scored no checkpoint"
[ "$(tail -n1 <<<"$scored")" = "$steps" ] ||
  fail "the evaluator's last score is of step $(tail -n1 <<<"$scored"), not the final $steps"
last="$(tail -n1 "$work/log")"
accuracy="$(sed -n "s/^\[taas\] job .* succeeded at step $steps: final accuracy \([0-9.]*\), loss [0-9.]* (model dir .*)$/\1/p" <<<"$last")"
[ -n "$accuracy" ] || fail "the console's last line names no final accuracy at step $steps: $last"
chief="$(sed -n 's/.*msg="final test accuracy" .* accuracy=\([0-9.]*\).*/\1/p' "$work/log" | tail -n1)"
python3 -c "import sys; sys.exit(0 if abs(float('$accuracy') - float('${chief:-nan}')) < 1e-4 else 1)" ||
  fail "the last line's accuracy $accuracy is not the chief's final test accuracy ${chief:-(none)}"
echo "final test accuracy $accuracy after $steps global steps; the evaluator scored steps" $scored
for pattern in "$@"; do
  grep -qE -- "$pattern" "$work/log" || fail "no line of the job's console matches: $pattern"
  echo "matched: $pattern"
done
python3 -c "import sys; sys.exit(0 if float('$accuracy') >= float('$min_accuracy') else 1)" ||
  { echo "FAIL: accuracy $accuracy < $min_accuracy"; exit 1; }
if [ -n "$test_images" ]; then
  evaluated="$(sed -n "s/.*msg=\"evaluated checkpoint\" .* global_step=$steps metrics=\".*accuracy=\([0-9.]*\).*/\1/p" "$work/log" | tail -n1)"
  [ -n "$evaluated" ] || fail "the evaluator's score of step $steps names no accuracy"
  "$launcher" predict "$job" --build-dir "$build_dir" --model-dir "$work/model" \
      --input "$test_images" --output "$work/predictions.csv" "${predict_batch[@]}" \
      >"$work/predict.log" 2>&1 ||
    { cat "$work/predict.log"; fail "taas predict failed"; }
  grep -q "checkpoint=$work/model/model.ckpt-$steps " "$work/predict.log" ||
    { cat "$work/predict.log"; fail "taas predict did not use the final checkpoint"; }
  python3 - "$work/predictions.csv" "$evaluated" <<'PY' || fail "the predictions' accuracy"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
accuracy = sum(r["class"] == r["label"] for r in rows) / len(rows)
print(f"taas predict: {len(rows)} examples, accuracy {accuracy:.6f}; the evaluator's {sys.argv[2]}")
sys.exit(0 if abs(accuracy - float(sys.argv[2])) < 5e-7 else 1)
PY
  [ ! -e "$work/predictions.csv.partial" ] || fail "taas predict left its partial file"
fi
echo "1 passed, 0 failed"
