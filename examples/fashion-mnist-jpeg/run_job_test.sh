#!/usr/bin/env bash
# Writes the first IMAGES images of each Fashion-MNIST split as a JPEG folder
# (make-fashion-mnist-jpeg) into a temporary folder, points job.yaml's replicas at it
# (--data_dir) and runs the job under the local launcher with the main job's checks
# (run_job_test.sh of fashion-mnist-models: the job succeeds, the chief's final accuracy beats
# chance, the evaluator scored the last checkpoint), that each worker streamed its own half of
# the training files, and that `taas predict` on the test folder, in the evaluator's batches of 500,
# scores what the evaluator scored.
# Usage: run_job_test.sh LAUNCHER BUILD_DIR MAKE_JPEG JOB_YAML RUN_JOB_TEST
set -euo pipefail
launcher="$1" build_dir="$2" make_jpeg="$3" job="$4" run_job_test="$5"
images=2000
work="$(mktemp -d "${TMPDIR:-/tmp}/taas-jpeg-XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$make_jpeg" --out "$work/data" --limit "$images" >"$work/make.log" 2>&1 ||
  { cat "$work/make.log"; echo "FAIL: make-fashion-mnist-jpeg"; exit 1; }
python3 - "$job" "$work/job.yaml" "$work/data" <<'PY' || { echo "FAIL: job.yaml"; exit 1; }
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
for spec in job["spec"]["tfReplicaSpecs"].values():
    container = spec["template"]["spec"]["containers"][0]
    assert "args" not in container, "job.yaml's replicas already have arguments"
    container["args"] = ["--", "--data_dir=" + sys.argv[3]]
yaml.safe_dump(job, open(sys.argv[2], "w"))
PY
built="msg=\"fashion-mnist-jpeg model built\" .*files=$images shard_files=$((images / 2)) "
"$run_job_test" "$launcher" "$build_dir" "$work/job.yaml" 40 0.4 \
  --predict "$work/data/test" --predict-batch-size 500 \
  "worker-0\] .*$built" "worker-1\] .*$built"
