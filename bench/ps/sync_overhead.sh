#!/usr/bin/env bash
# Sync-mode step overhead of the Fashion-MNIST CNN with 2 workers (examples/fashion-mnist-cnn/
# job.yaml: 1 PS, 2 workers, 1 evaluator) under the local launcher: the share of each worker's
# wall time spent pulling and pushing, including the wait for the other worker's gradient
# (`comm_fraction` in the runtime's progress lines), averaged over the run after the first progress
# line of each worker (start-up), and the part of it the PS held the push waiting for the other
# worker (`wait_fraction`). The same job runs asynchronously for comparison. Beside it, the mean
# wall and CPU time of a step's train() (`train_secs`, `train_cpu_secs`): their difference is time
# the worker was ready to compute but had no core (other processes, the host), one source of the
# spread between the workers that becomes the sync wait.
#
#   bench/ps/sync_overhead.sh              # 600 global steps per mode
#   STEPS=300 MODES=sync bench/ps/sync_overhead.sh
#
# Environment: STEPS (600), MODES ("sync async"), LOG_STEPS (50), TAAS_BUILD (build/), BUILD (1;
# 0 runs the binaries already in TAAS_BUILD, e.g. a copy of older ones to alternate with).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

STEPS="${STEPS:-600}"
MODES="${MODES:-sync async}"
LOG_STEPS="${LOG_STEPS:-50}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/taas-sync-overhead-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

if [ "${BUILD:-1}" != 0 ]; then
  log "building the launcher and fashion-mnist-cnn in $TAAS_BUILD"
  taas_build taas fashion-mnist-cnn >/dev/null
fi
log "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

for mode in $MODES; do
  sync=false
  [ "$mode" = sync ] && sync=true
  log "$mode: $STEPS global steps, 2 workers, 1 PS, 1 evaluator"
  "$TAAS_BUILD/launcher/taas" run "$TAAS_ROOT/examples/fashion-mnist-cnn/job.yaml" \
    --build-dir "$TAAS_BUILD" --verbose --model-dir "$WORK/$mode" --env TF_MAX_STEPS="$STEPS" \
    --env TF_SYNC="$sync" --env TAAS_LOG_STEPS="$LOG_STEPS" >"$WORK/$mode.log" 2>&1 ||
    { tail -n 30 "$WORK/$mode.log"; die "the $mode job failed"; }
  python3 - "$mode" "$WORK/$mode.log" <<'PY'
import re, statistics, sys
mode, path = sys.argv[1], sys.argv[2]
seen, comm, wait, batch, train, cpu = set(), [], [], [], [], []
for line in open(path):
    if "msg=training " not in line or "role=worker" not in line:
        continue
    fields = dict(re.findall(r"(\w+)=(\S+)", line))
    worker = fields["index"]
    if worker not in seen:  # the first window includes start-up
        seen.add(worker)
        continue
    comm.append(float(fields["comm_fraction"]))
    wait.append(float(fields.get("wait_fraction", "nan")))
    batch.append(float(fields["sec_per_batch"]))
    train.append(float(fields.get("train_secs", "nan")))
    cpu.append(float(fields.get("train_cpu_secs", "nan")))
if not comm:
    sys.exit(f"{mode}: no progress lines after start-up; raise STEPS")
print(f"{mode:>5}: comm_fraction mean {statistics.mean(comm):.3f} median "
      f"{statistics.median(comm):.3f} (min {min(comm):.3f}, max {max(comm):.3f}) over "
      f"{len(comm)} windows; of it waiting for the other worker {statistics.mean(wait):.3f}, "
      f"transfer and update {statistics.mean(comm) - statistics.mean(wait):.3f}; "
      f"sec_per_batch {statistics.mean(batch):.4f}; train() {1e3 * statistics.mean(train):.1f} ms "
      f"of which on a core {1e3 * statistics.mean(cpu):.1f} ms")
PY
done
log "load after the run $(cut -d' ' -f1-3 /proc/loadavg)"
