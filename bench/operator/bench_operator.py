#!/usr/bin/env python3
"""Operator benchmark (not a ctest test): N TFJobs of 1 PS + W workers on simulated GPU nodes.

Starts its own control plane (scripts/cluster/taas-cluster), runs taas-operator, and prints:
  - the floor: the time the API server takes to accept N*(1+W) pods POSTed directly (same
    client, same parallelism), and until those pods are Running;
  - the time from the first TFJob create until every pod of every job is Running;
  - reconcile latency p50/p99 (from the operator's histogram), operator peak RSS and CPU seconds.

Usage: bench_operator.py --operator BIN [--peer-operator BIN] [--jobs 500] [--workers 4]
                         [--nodes 100] [--gpus-per-node 24] [--parallel 16]
With --peer-operator (Kubeflow's training-operator, `scripts/cluster/training-operator build`
prints where it is), the same jobs then run under it twice in the same run, on the same control
plane: with its default settings (one controller thread) and with --controller-threads equal to
taas's --workers; each with its own CRD and validation webhook, as tests/conformance installs it.
Then taas runs once more, so an effect of the order (the first phase runs while the floor's pods
are still being cleaned up) shows as a spread between its two runs.
(PS replicas run on CPU, each worker takes one GPU.) It also prints when the operator had created
every pod, its status writes and Events posted, and the load average (the machine is shared: only
ratios within one run compare).
The issue's target: jobs-to-Running within 1.5x of the floor, operator RSS under 64 MiB.

Measured (2 vCPUs, other builds running, load 5-9), 500 jobs on 100 nodes: the controller of
session 2 at 1.62x the floor, 47.6 MiB, 7.8 CPU s (before: 2.10x, 63.5 MiB, 11.8 CPU s); 200 jobs on
40 nodes: 1.19x (before: 1.90x). A second 500-job run at load 3-7: 1.30x, 48.0 MiB, 5.5 CPU s. Details and method: docs/operator.md, "Figures".
"""

import argparse
import base64
import concurrent.futures
import json
import os
import random
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "cluster", "taas-cluster")
CRD = os.path.join(ROOT, "crds", "kubeflow.org_tfjobs.yaml")
TAAS_WORKERS = 8  # taas-operator --workers here; the peer's second run gets as many threads


class Api:
    """Just enough of a Kubernetes client: the kubeconfig's client certificate, JSON over HTTPS."""

    def __init__(self, kubeconfig, tmp):
        out = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "config", "view", "--raw",
                              "-o", "json"], check=True, capture_output=True, text=True).stdout
        cfg = json.loads(out)
        cluster = cfg["clusters"][0]["cluster"]
        user = cfg["users"][0]["user"]
        self.server = cluster["server"]
        paths = {}
        for key in ("client-certificate-data", "client-key-data"):
            paths[key] = os.path.join(tmp, key)
            with open(paths[key], "wb") as f:
                f.write(base64.b64decode(user[key]))
        self.ctx = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.ctx.load_cert_chain(paths["client-certificate-data"], paths["client-key-data"])

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        for attempt in range(5):
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=60) as r:
                    return json.loads(r.read() or b"{}")
            except urllib.error.HTTPError as e:
                if e.code in (429, 500, 503) and attempt < 4:
                    time.sleep(0.5 * (attempt + 1))
                    continue
                raise


def container(gpus):
    c = {"name": "tensorflow", "image": "taas/trainer:bench",
         "command": ["/opt/taas/bin/fashion-mnist-cnn"]}
    if gpus:
        c["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return c


def tfjob(ns, i, workers):
    """Parameter servers run on CPU; each worker takes one GPU."""
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": f"job-{i}", "namespace": ns},
            "spec": {"tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [container(0)]}}},
                "Worker": {"replicas": workers, "restartPolicy": "ExitCode",
                           "template": {"spec": {"containers": [container(1)]}}}}}}


def running_pods(api, ns):
    items = api.call("GET", f"/api/v1/namespaces/{ns}/pods?fieldSelector=status.phase%3DRunning"
                            f"&limit=100000")["items"]
    return len(items)


def pod_count(api, ns):
    """Pods in the namespace, whatever their phase, from a one-item list."""
    r = api.call("GET", f"/api/v1/namespaces/{ns}/pods?limit=1")
    return len(r["items"]) + r["metadata"].get("remainingItemCount", 0)


def process_usage(pid):
    """Peak RSS (MiB) and CPU seconds of a process."""
    with open(f"/proc/{pid}/status") as f:
        rss = [line.split()[1] for line in f if line.startswith("VmHWM")][0]
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read().split()
    return int(rss) / 1024, (int(stat[13]) + int(stat[14])) / os.sysconf("SC_CLK_TCK")


def make_namespace(api, ns):
    api.call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    while True:
        try:
            api.call("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")
            return
        except urllib.error.HTTPError:
            time.sleep(0.5)


def drop_namespace(api, ns):
    """Deletes the namespace and waits until its pods are gone (room on the nodes again)."""
    api.call("DELETE", f"/api/v1/namespaces/{ns}")
    while pod_count(api, ns) > 0:
        time.sleep(1)


def run_jobs(api, args, ns, total, floor, label, metrics_text, bucket, pid):
    """Creates the TFJobs in ns and reports the operator (pid) getting every pod Running."""
    created_all = []  # when every pod existed

    def poll_created():
        if not created_all and pod_count(api, ns) >= total:
            created_all.append(time.time())

    t0 = time.time()
    parallel(args.jobs, lambda i: api.call("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs",
                                           tfjob(ns, i, args.workers)), args.parallel)
    jobs_created = time.time() - t0
    jobs_running = wait_running(api, ns, total, 3600, poll_created) - t0
    poll_created()
    text = metrics_text()
    rss, cpu = process_usage(pid)
    created = (created_all[0] - t0) if created_all else float("nan")
    print(f"{label}: {args.jobs} TFJobs created in {jobs_created:.1f}s, every pod created after "
          f"{created:.1f}s, all {total} pods Running after {jobs_running:.1f}s")
    print(f"{label}: ratio to the floor (Running): {jobs_running / floor[1]:.2f}x; "
          f"to the floor (accepted): {jobs_running / floor[0]:.2f}x")
    print(f"{label}: reconcile latency p50 <= {quantile(text, 0.5, bucket)}s, "
          f"p99 <= {quantile(text, 0.99, bucket)}s")
    print(f"{label}: operator peak RSS {rss:.1f} MiB, CPU {cpu:.1f} s; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    return {"label": label, "running": jobs_running, "created": created, "rss": rss, "cpu": cpu,
            "ratio": jobs_running / floor[1]}


def wait_running(api, ns, want, timeout, on_poll=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if on_poll is not None:
            on_poll()
        if running_pods(api, ns) >= want:
            return time.time()
        time.sleep(0.5)
    raise SystemExit(f"timed out waiting for {want} Running pods in {ns}")


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return float("nan")


def parallel(n, fn, workers):
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(fn, range(n)))


def metrics(port):
    return metrics_at(f"http://127.0.0.1:{port}/metrics")


def metrics_at(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def quantile(text, q, bucket="taas_operator_reconcile_duration_seconds_bucket"):
    buckets = []
    for line in text.splitlines():
        if line.startswith(bucket):
            le = line.split('le="')[1].split('"')[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), int(line.split()[-1])))
    total = buckets[-1][1] if buckets else 0
    for le, count in buckets:
        if total and count >= q * total:
            return le
    return float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--operator", required=True)
    parser.add_argument("--peer-operator", help="Kubeflow's training-operator binary, run after taas")
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--gpus-per-node", type=int, default=24)
    parser.add_argument("--parallel", type=int, default=16)
    args = parser.parse_args()
    pods_per_job = 1 + args.workers
    total = args.jobs * pods_per_job
    name = f"bench-{os.getpid()}-{random.randint(0, 9999)}"
    tmp = tempfile.mkdtemp(prefix="taas-operator-bench-")
    op = None
    peer = None
    load_start = os.getloadavg()[0]
    results = []
    try:
        if args.nodes * args.gpus_per_node < args.jobs * args.workers:
            raise SystemExit("not enough GPUs for every worker: raise --nodes or --gpus-per-node")
        if args.peer_operator:
            peer_dir = os.path.dirname(os.path.abspath(args.peer_operator))
            for f in ("kubeflow.org_tfjobs.yaml", "webhook-manifests.yaml"):
                if not os.path.isfile(os.path.join(peer_dir, f)):
                    raise SystemExit(f"--peer-operator: no {f} beside {args.peer_operator}; pass the "
                                     "binary in the directory `scripts/cluster/training-operator "
                                     "build` prints")
            if not os.access(args.peer_operator, os.X_OK):
                raise SystemExit(f"--peer-operator {args.peer_operator}: not an executable")
        subprocess.run([CLUSTER, "up", "--name", name, "--nodes", str(args.nodes),
                        "--gpus-per-node", str(args.gpus_per_node)], check=True)
        env_out = subprocess.run([CLUSTER, "env", "--name", name], check=True, capture_output=True,
                                 text=True).stdout
        for line in env_out.splitlines():
            key, _, value = line.replace("export ", "", 1).partition("=")
            os.environ[key] = value.strip("'\"").replace("$PATH", os.environ.get("PATH", ""))
        kubeconfig = os.environ["KUBECONFIG"]
        api = Api(kubeconfig, tmp)
        make_namespace(api, "floor")

        # The floor: the same pods, POSTed directly.
        def floor_pod(i):
            gpus = 0 if i % pods_per_job == 0 else 1  # the same mix as the jobs
            api.call("POST", "/api/v1/namespaces/floor/pods",
                     {"metadata": {"name": f"pod-{i}"}, "spec": {"containers": [container(gpus)]}})
        t0 = time.time()
        parallel(total, floor_pod, args.parallel)
        floor_accept = time.time() - t0
        floor_running = wait_running(api, "floor", total, 1800) - t0
        print(f"floor: {total} pods accepted in {floor_accept:.1f}s, Running after "
              f"{floor_running:.1f}s (load average {os.getloadavg()[0]:.1f})", flush=True)
        floor = (floor_accept, floor_running)
        drop_namespace(api, "floor")

        def taas_phase(ns, label):
            nonlocal op
            subprocess.run(["kubectl", "apply", "-f", CRD], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["kubectl", "wait", "--for=condition=established", "--timeout=120s",
                            "crd/tfjobs.kubeflow.org"], check=True, stdout=subprocess.DEVNULL)
            make_namespace(api, ns)
            port_file = os.path.join(tmp, f"port-{ns}")
            op = subprocess.Popen([args.operator, "--kubeconfig", kubeconfig, "--health-port", "0",
                                   "--health-address", "127.0.0.1", "--port-file", port_file,
                                   "--leader-elect=false", "--workers", str(TAAS_WORKERS),
                                   "--namespaces", ns],
                                  stdout=open(os.path.join(tmp, f"operator-{ns}.log"), "w"),
                                  stderr=subprocess.STDOUT)
            while not os.path.exists(port_file):
                time.sleep(0.1)
            port = int(open(port_file).read())
            time.sleep(2)
            results.append(run_jobs(api, args, ns, total, floor, label, lambda: metrics(port),
                                    "taas_operator_reconcile_duration_seconds_bucket", op.pid))
            for line in metrics(port).splitlines():
                if line.startswith(("taas_operator_reconcile_total", "taas_operator_api_",
                                    "taas_operator_pods_created", "taas_operator_services_created",
                                    "taas_operator_status_updates", "taas_operator_events_")):
                    print(line)
            sys.stdout.flush()
            op.terminate()
            op.wait()
            op = None
            drop_namespace(api, ns)
            subprocess.run(["kubectl", "delete", "crd", "tfjobs.kubeflow.org"], check=True,
                           stdout=subprocess.DEVNULL)

        taas_phase("jobs", "taas")
        if args.peer_operator:
            # Kubeflow's CRD and webhook, installed as the conformance suite does.
            sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
            import conformance_test  # noqa: E402  (also puts tests/operator on the path)
            env = conformance_test.e2e.Env(argparse.Namespace(cluster=CLUSTER, operator=None))
            env.kubeconfig = kubeconfig
            for threads in (1, TAAS_WORKERS):
                ns = f"kubeflow-{threads}"
                make_namespace(api, ns)
                # Cluster-wide, as by default: with --namespace its cert rotator cannot read
                # its Secret in the kubeflow namespace. No TFJob of another phase is left.
                flags = [] if threads == 1 else [f"--controller-threads={threads}"]
                peer = conformance_test.Kubeflow(env, peer_dir, flags)
                peer.bin = args.peer_operator
                peer.install()
                label = f"Kubeflow ({threads} thread{'s' if threads > 1 else ''})"
                results.append(run_jobs(
                    api, args, ns, total, floor, label,
                    lambda: metrics_at(f"http://127.0.0.1:{peer.metrics_port}/metrics"),
                    'controller_runtime_reconcile_time_seconds_bucket{controller="tfjob-controller"',
                    peer.proc.pid))
                peer.uninstall()
                peer = None
                drop_namespace(api, ns)
            # taas again, last: what running first or after a phase costs shows in the spread.
            taas_phase("jobs-again", "taas, again after Kubeflow")
        print(f"\n| operator | every pod created | all Running | x floor ({floor_running:.1f}s) "
              f"| peak RSS | CPU |\n|---|---|---|---|---|---|")
        for r in results:
            print(f"| {r['label']} | {r['created']:.1f}s | {r['running']:.1f}s | {r['ratio']:.2f}x "
                  f"| {r['rss']:.1f} MiB | {r['cpu']:.1f} s |")
        print(f"load average {os.getloadavg()[0]:.1f} (at start {load_start:.1f})", flush=True)
    finally:
        if op is not None:
            op.terminate()
            op.wait()
        if peer is not None:
            peer.uninstall()
        subprocess.run([CLUSTER, "down", "--name", name])


if __name__ == "__main__":
    sys.exit(main())
