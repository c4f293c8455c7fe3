"""Driver of bench/torch/run.sh (read its header first): runs the taas jobs under the local
launcher and the PyTorch peers (torch_peer.py, with --peer-python), alternating, --repeat times,
and prints each run and the ratios of the medians against their targets.

taas examples/s: the sum over workers of their mean after the first progress window
(bench/allreduce/training.py, read_run). CPU seconds: user + system time of the launcher and every
replica it waited for (getrusage of this process's children), start-up, data loading and the final
evaluation included, the same for both engines.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "allreduce"))
from training import manifest, read_run  # noqa: E402

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_peer.py")


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def taas_job(args, name, workers, command, model_args, steps, batch):
    """One job under `taas run`: (examples/s, CPU seconds, chief's final test accuracy)."""
    yaml = os.path.join(args.work, name + ".yaml")
    log = os.path.join(args.work, name + ".log")
    with open(yaml, "w") as f:
        stdout, sys.stdout = sys.stdout, f
        try:
            manifest(name, 0, workers, batch, command, model_args)
        finally:
            sys.stdout = stdout
    env = {"TF_MAX_STEPS": steps, "TAAS_LOG_STEPS": args.log_steps,
           "TF_SAVE_CHECKPOINTS_SECS": 0, "TF_SAVE_SUMMARIES_STEPS": 0,
           "TAAS_COMPUTE_THREADS": args.threads, "OMP_WAIT_POLICY": "PASSIVE",
           # One worker has no TF_CONFIG (as in Kubeflow): this makes it all-reduce alone.
           "TAAS_STRATEGY": "collective"}
    cmd = [os.path.join(args.build, "launcher", "taas"), "run", yaml, "--build-dir", args.build,
           "--no-ui", "--verbose", "--progress-secs", "0",
           "--model-dir", os.path.join(args.work, name + "-model")]
    for key, value in env.items():
        cmd += ["--env", f"{key}={value}"]
    # A fresh model dir every run: the last run's final checkpoint would end this one at once.
    shutil.rmtree(os.path.join(args.work, name + "-model"), ignore_errors=True)
    before = children_cpu()
    with open(log, "w") as out:
        code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    cpu = children_cpu() - before
    if code != 0:
        sys.stdout.write("".join(open(log).readlines()[-30:]))
        sys.exit(f"the {name} job failed (exit {code}): {log}")
    rate, _, accuracy = read_run(log)
    return rate, cpu, accuracy


def peer(args, mode, workers):
    """torch_peer.py: (examples/s, CPU seconds, test accuracy)."""
    cmd = [args.peer_python, PEER, "--mode", mode, "--workers", str(workers),
           "--steps", str(args.steps), "--batch", str(args.batch),
           "--threads", str(args.threads), "--log_steps", str(args.log_steps)]
    before = children_cpu()
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"))
    if done.returncode != 0:
        sys.stdout.write(done.stderr[-3000:])
        sys.exit(f"the PyTorch {mode} peer failed (exit {done.returncode})")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["examples_per_sec"], children_cpu() - before, result["accuracy"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("work", "build"):
        parser.add_argument("--" + flag, required=True)
    parser.add_argument("--peer-python", default="")
    for flag in ("steps", "batch", "cnn-steps", "cnn-batch", "repeat", "threads", "log-steps"):
        parser.add_argument("--" + flag, type=int, required=True)
    args = parser.parse_args()
    resnet = ["--model=resnet"]
    runs = [  # (comparison, impl, how)
        ("2 workers", "taas", lambda: taas_job(args, "allreduce-2", 2, "fashion-mnist-torch",
                                               resnet, args.steps, args.batch)),
        ("2 workers", "PyTorch DDP", lambda: peer(args, "ddp", 2)),
        ("1 worker", "taas", lambda: taas_job(args, "allreduce-1", 1, "fashion-mnist-torch",
                                              resnet, args.steps, args.batch)),
        ("1 worker", "PyTorch", lambda: peer(args, "single", 1)),
        ("CNN engine", "built-in", lambda: taas_job(args, "cnn-builtin", 1, "fashion-mnist-cnn",
                                                    [], args.cnn_steps, args.cnn_batch)),
        ("CNN engine", "LibTorch", lambda: taas_job(args, "cnn-libtorch", 1, "fashion-mnist-torch",
                                                    ["--model=cnn"], args.cnn_steps,
                                                    args.cnn_batch)),
    ]
    if not args.peer_python:
        runs = [r for r in runs if not r[1].startswith("PyTorch")]
        print("PyTorch peers skipped (not installed): taas side only")
    with open("/proc/loadavg") as f:
        print(f"{os.cpu_count()} cores, load {' '.join(f.read().split()[:3])}; ResNet: "
              f"{args.steps} steps of {args.batch} per replica; CNN: {args.cnn_steps} steps of "
              f"{args.cnn_batch}; {args.threads} compute thread(s) per replica", flush=True)
    results = {}
    print(f"{'comparison':<11} {'impl':<12} {'run':>3} {'examples/s':>11} {'CPU s':>7} "
          f"{'ex/CPU-s':>9} {'accuracy':>9}")
    for rep in range(1, args.repeat + 1):
        for comparison, impl, how in runs:
            rate, cpu, accuracy = how()
            steps, batch = ((args.cnn_steps, args.cnn_batch) if comparison == "CNN engine"
                            else (args.steps, args.batch))
            replicas = 2 if comparison == "2 workers" else 1
            per_cpu = steps * batch * replicas / cpu
            results.setdefault((comparison, impl), []).append((rate, per_cpu, accuracy))
            acc = f"{accuracy:.4f}" if accuracy is not None else "-"
            print(f"{comparison:<11} {impl:<12} {rep:>3} {rate:>11.0f} {cpu:>7.1f} "
                  f"{per_cpu:>9.0f} {acc:>9}", flush=True)
    with open("/proc/loadavg") as f:
        print(f"load after the runs {' '.join(f.read().split()[:3])}")

    def median(key, column):
        return statistics.median(r[column] for r in results[key])

    for comparison, peer_impl, target in (("2 workers", "PyTorch DDP", 1.0),
                                          ("1 worker", "PyTorch", 0.95)):
        if (comparison, peer_impl) not in results:
            continue
        ratio = median((comparison, "taas"), 0) / median((comparison, peer_impl), 0)
        points = 100 * (median((comparison, "taas"), 2) - median((comparison, peer_impl), 2))
        print(f"{comparison}: taas / {peer_impl} examples/s {ratio:.2f}x (target >= {target}); "
              f"test accuracy taas - peer {points:+.2f} points (target within 0.5 at full length)")
    ratio = median(("CNN engine", "built-in"), 1) / median(("CNN engine", "LibTorch"), 1)
    print(f"CNN engine: built-in / LibTorch examples per CPU-second {ratio:.2f}x, examples/s "
          f"{median(('CNN engine', 'built-in'), 0) / median(('CNN engine', 'LibTorch'), 0):.2f}x")


if __name__ == "__main__":
    main()
