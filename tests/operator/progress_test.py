#!/usr/bin/env python3
"""A running job's progress where users look for it: `kubectl get tfjobs` (issue 31).

A real control plane (scripts/cluster/taas-cluster), the TFJob CRD and taas-operator run a TFJob of
one worker (its chief). kwok plays the worker's pod, which runs no process; a real trainer
(fashion-mnist-mlp) runs here as that pod would run it, and the operator reads the chief's
metrics from it through --metrics-target, as it reads a pod's through its headless service. The
test reads `kubectl get tfjobs -o wide` while the trainer runs (PROGRESS between 0 and 100 and
rising, an ETA), ends the pod with the trainer's exit code and termination message as a kubelet
would (the trainer writes its result, job_report's JSON, to TAAS_TERMINATION_MESSAGE_PATH; the
kubelet copies /dev/termination-log into the container's state.terminated.message), and reads the
final accuracy the trainer logged in the ACCURACY column and in status.progress.finalMetrics: the
trainer exits right after training, so its metrics page seldom serves the final metrics long
enough to be read, and the operator takes them from the termination message. After that, no more
progress is written.

Usage: progress_test.py --operator BIN --crd FILE --cluster taas-cluster --trainer BIN
                        [--max-steps N]
"""

import argparse
import os
import re
import subprocess
import sys
import time
import traceback

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TESTS, "lib"))
import operator_e2e_test as e2e  # noqa: E402  (beside this file)
from operator_e2e_test import TestFailure, check, log, wait_for  # noqa: E402
from processes import free_port, stop  # noqa: E402

NS = "progress"
JOB = "mnist"
CHIEF = f"{JOB}-worker-0"
# The columns of the default view, and what -o wide adds first.
DEFAULT_COLUMNS = ["NAME", "STATE", "PROGRESS", "ETA", "ACCURACY", "AGE"]
ETA = re.compile(r"^(\d+s|\d+m\d\ds|\d+h\d\dm|\d+d\d\dh)$")


def tfjob(max_steps, metrics_port):
    env = [{"name": "TF_MAX_STEPS", "value": str(max_steps)},
           # Scores the test set on the chief midway and at the end: the ACCURACY column.
           {"name": "TAAS_EVAL_ON_CHIEF", "value": str(max_steps // 2)}]
    container = {"name": "tensorflow", "image": "taas/trainer:test",
                 "command": ["/opt/taas/bin/fashion-mnist-mlp"], "env": env,
                 "ports": [{"name": "metrics", "containerPort": metrics_port}]}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": JOB, "namespace": NS},
            "spec": {"tfReplicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never",
                "template": {"spec": {"containers": [container]}}}}}}


def table(env, *flags):
    """`kubectl get tfjobs` as (header names, {column: cell} of the job's row). Cells are cut at
    the header's column starts, as kubectl aligns them, so an empty cell stays empty."""
    out = env.kubectl("-n", NS, "get", "tfjobs", *flags).stdout.splitlines()
    if len(out) < 2:
        raise TestFailure(f"kubectl get tfjobs {' '.join(flags)} printed no job: {out}")
    header = out[0]
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    row = next(line for line in out[1:] if line.split()[0] == JOB)
    cells = {}
    for i, name in enumerate(names):
        end = starts[i + 1] if i + 1 < len(starts) else len(row)
        cells[name] = row[starts[i]:end].strip()
    return names, cells


def termination_log(tmp):
    """Where the trainer leaves its result: the pod's /dev/termination-log, here a file."""
    return os.path.join(tmp, "termination-log")


def start_trainer(args, tmp, metrics_port):
    """The chief's process, with what the operator and the pod would give it."""
    env = dict(os.environ, TF_MAX_STEPS=str(args.max_steps),
               TAAS_EVAL_ON_CHIEF=str(args.max_steps // 2), TAAS_METRICS_PORT=str(metrics_port),
               TF_LOGDIR=os.path.join(tmp, "model"), TAAS_JOB_NAME=JOB,
               TAAS_COMPUTE_THREADS="1", OMP_WAIT_POLICY="PASSIVE",
               TAAS_TERMINATION_MESSAGE_PATH=termination_log(tmp))
    env.pop("TF_CONFIG", None)
    out = open(os.path.join(tmp, "trainer.log"), "w")
    return subprocess.Popen([args.trainer], stdout=out, stderr=subprocess.STDOUT, env=env), out


def watch_run(env, trainer):
    """`kubectl get tfjobs -o wide` every second while the trainer runs: every (PROGRESS, ETA) seen
    with a progress below 100."""
    seen = []
    while trainer.poll() is None:
        names, cells = table(env, "-o", "wide")
        check(names[:len(DEFAULT_COLUMNS)] == DEFAULT_COLUMNS, f"-o wide columns: {names}")
        if cells["PROGRESS"] not in ("", "<none>") and int(cells["PROGRESS"]) < 100:
            seen.append((int(cells["PROGRESS"]), cells["ETA"], cells["ACCURACY"]))
            log(f"running: PROGRESS {cells['PROGRESS']} ETA {cells['ETA']} "
                f"ACCURACY {cells['ACCURACY']} STEP {cells.get('STEP')} LOSS {cells.get('LOSS')}")
        time.sleep(1)
    return seen


def final_accuracy(log_path):
    """The final test accuracy the trainer logged (`msg="final test accuracy" ... accuracy=`)."""
    for line in open(log_path):
        if "final test accuracy" in line:
            m = re.search(r"\baccuracy=([0-9.]+)", line)
            if m:
                return float(m.group(1))
    raise TestFailure("the trainer logged no final test accuracy:\n" + open(log_path).read()[-3000:])


def progress_writes(env, op):
    return env.metrics(op).get("taas_operator_progress_writes_total", 0)


def check_running(seen):
    check(seen, "no PROGRESS below 100 was shown while the trainer ran (raise --max-steps?)")
    check(any(0 < p < 100 for p, _, _ in seen), f"no PROGRESS between 0 and 100: {seen}")
    check(any(ETA.match(eta) for _, eta, _ in seen), f"no ETA like 42s, 3m05s, 1h02m: {seen}")
    progresses = [p for p, _, _ in seen]
    check(progresses == sorted(progresses) and len(set(progresses)) >= 2,
          f"PROGRESS did not rise: {progresses}")


def check_finished(env, op, accuracy):
    """After the pod ended: the final accuracy shows, PROGRESS is 100, and nothing more is
    written for the job's progress."""
    def shown():
        _, cells = table(env)
        return cells if cells["STATE"] == "Succeeded" and cells["ACCURACY"] not in ("", "<none>") \
            and abs(float(cells["ACCURACY"]) - accuracy) < 1e-4 else None
    try:
        cells = wait_for(f"ACCURACY {accuracy} of a Succeeded job", shown, 60)
    except TestFailure:
        raise TestFailure(f"the final accuracy {accuracy} is not shown; status.progress: "
                          f"{env.get('-n', NS, 'tfjob', JOB)['status'].get('progress')}")
    check(cells["PROGRESS"] == "100", f"a succeeded job shows PROGRESS {cells['PROGRESS']}")
    check(cells["ETA"] in ("", "<none>"), f"a succeeded job shows ETA {cells['ETA']}")
    progress = env.get("-n", NS, "tfjob", JOB)["status"]["progress"]
    check(abs(progress.get("finalMetrics", {}).get("accuracy", -1) - accuracy) < 1e-4,
          f"status.progress.finalMetrics lacks the final accuracy {accuracy}: {progress}")
    writes = progress_writes(env, op)
    time.sleep(6)  # three of the test's progress intervals
    check(progress_writes(env, op) == writes, "progress was written after the job finished")


def run(args, env):
    env.up()
    env.kubectl("apply", "-f", args.crd)
    env.wait_established("crd/tfjobs.kubeflow.org")
    env.namespace(NS)
    port = free_port()
    op = env.start_operator("--progress-seconds", "2",
                            "--metrics-target", f"{NS}/{CHIEF}=127.0.0.1:{port}")
    wait_for("operator ready", lambda: env.ready(op))
    env.apply(tfjob(args.max_steps, port))
    wait_for(f"pod {CHIEF} Running", lambda: (env.get("-n", NS, "pod", CHIEF) or {}).get(
        "status", {}).get("phase") == "Running")
    names, cells = table(env)
    check(names == DEFAULT_COLUMNS, f"default columns: {names}")
    check(cells["PROGRESS"] in ("", "<none>"), f"PROGRESS before any read: {cells}")
    trainer, out = start_trainer(args, env.tmp, port)
    try:
        started = time.time()
        seen = watch_run(env, trainer)
        log(f"trainer exited with {trainer.returncode} after {time.time() - started:.1f}s")
    finally:
        stop(trainer)
        out.close()
    log_path = os.path.join(env.tmp, "trainer.log")
    check(trainer.returncode == 0, f"trainer exited with {trainer.returncode}:\n" +
          open(log_path).read()[-3000:])
    check_running(seen)
    accuracy = final_accuracy(log_path)
    # The kubelet's word: the container exited 0, leaving its termination message.
    check(os.path.getsize(termination_log(env.tmp)) > 0, "the trainer left no termination message")
    env.finish_pod(NS, CHIEF, 0, message_file=termination_log(env.tmp))
    check_finished(env, op, accuracy)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--operator", required=True)
    parser.add_argument("--crd", required=True)
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--trainer", required=True, help="the fashion-mnist-mlp binary")
    parser.add_argument("--max-steps", type=int, default=3000)
    args = parser.parse_args()
    env = e2e.Env(args)
    failed = True
    try:
        run(args, env)
        failed = False
        print("PASS", flush=True)
    except Exception:
        traceback.print_exc()
        log_path = os.path.join(env.tmp, "trainer.log")
        if os.path.exists(log_path):
            print("--- trainer log (tail):\n" + open(log_path).read()[-5000:], flush=True)
    finally:
        env.cleanup(failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
