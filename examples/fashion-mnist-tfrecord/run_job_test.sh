#!/usr/bin/env bash
# Writes Fashion-MNIST as TFRecord files (fashion-mnist-to-tfrecord: 4 training files, 1 test
# file) into a temporary folder, points job.yaml's --train_files/--test_files at it and runs the
# job under the local launcher with the main job's checks (run_job_test.sh of
# fashion-mnist-models: the job succeeds, the chief's final accuracy beats chance, the evaluator
# scored the last checkpoint), and that each worker streamed its own 2 of the 4 files. First,
# that k8s/job-pvc.yaml is JOB_YAML on a claim: the same job once its volumes and mounts are
# taken out and /data/ read as /tmp/fashion-mnist-tfrecord/, with the claim in the Worker and
# Evaluator templates only.
# Usage: run_job_test.sh LAUNCHER BUILD_DIR CONVERTER JOB_YAML RUN_JOB_TEST
set -euo pipefail
launcher="$1" build_dir="$2" converter="$3" job="$4" run_job_test="$5"
python3 - "$job" "$(dirname "$job")/k8s/job-pvc.yaml" <<'PY' || { echo "FAIL: k8s/job-pvc.yaml is not job.yaml on a claim"; exit 1; }
import json, sys, yaml
local, pvc = (yaml.safe_load(open(path)) for path in sys.argv[1:])
for name, spec in pvc["spec"]["tfReplicaSpecs"].items():
    pod = spec["template"]["spec"]
    mounted = name in ("Worker", "Evaluator")
    assert ("volumes" in pod) == mounted, name
    if mounted:
        claim = pod.pop("volumes")[0]["persistentVolumeClaim"]
        mount = pod["containers"][0].pop("volumeMounts")[0]
        assert claim["readOnly"] and mount["readOnly"] and mount["mountPath"] == "/data", name
text = json.dumps(pvc).replace('"/data/', '"/tmp/fashion-mnist-tfrecord/').replace("=/data/", "=/tmp/fashion-mnist-tfrecord/")
assert json.loads(text) == local, "the jobs differ"
PY
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
