#!/usr/bin/env bash
# Writes Fashion-MNIST as TFRecord files (fashion-mnist-to-tfrecord: 4 training files, 1 test
# file) into a temporary folder, points job.yaml's --train_files/--test_files at it and runs the
# job under the local launcher with the main job's checks (run_job_test.sh of
# fashion-mnist-models: the job succeeds, the chief's final accuracy beats chance, the evaluator
# scored the last checkpoint), and that each worker streamed its own 2 of the 4 files.
# Usage: run_job_test.sh LAUNCHER BUILD_DIR CONVERTER JOB_YAML RUN_JOB_TEST
set -euo pipefail
launcher="$1" build_dir="$2" converter="$3" job="$4" run_job_test="$5"
work="$(mktemp -d "${TMPDIR:-/tmp}/taas-tfrecord-XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$converter" --out_dir "$work/data" --train_shards 4 --test_shards 1 >"$work/convert.log" ||
  { cat "$work/convert.log"; echo "FAIL: fashion-mnist-to-tfrecord"; exit 1; }
cat "$work/convert.log"
grep -q '/tmp/fashion-mnist-tfrecord/' "$job" ||
  { echo "FAIL: $job reads nothing from /tmp/fashion-mnist-tfrecord/"; exit 1; }
sed "s#/tmp/fashion-mnist-tfrecord/#$work/data/#g" "$job" >"$work/job.yaml"
streamed='msg="training from TFRecord files".* shard_files=2 by_file=true'
"$run_job_test" "$launcher" "$build_dir" "$work/job.yaml" 40 0.4 \
  "worker-0\] .*$streamed" "worker-1\] .*$streamed"
