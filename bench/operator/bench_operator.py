#!/usr/bin/env python3
"""Operator benchmark (not a ctest test): N TFJobs of 1 PS + W workers on simulated GPU nodes.

Starts its own control plane (scripts/cluster/taas-cluster), runs taas-operator, and prints:
  - two floors, measured with the same client and parallelism: the jobs' pods POSTed directly
    ("floor"), and the same pods each followed by the headless service a TFJob replica has
    ("floor-services": what every TFJob controller must ask of the cluster); for each, the time
    until accepted and until every pod is Running;
  - the time from the first TFJob create until every pod existed and until every pod of every
    job was Running (followed through a watch), and the ratio to each floor;
  - reconcile latency p50/p99 (from the operator's histogram), operator peak RSS and CPU seconds,
    its API requests, status writes and Events posted, and the load average.

Usage: bench_operator.py --operator BIN [--peer-operator BIN] [--jobs 500] [--workers 4]
                         [--nodes 100] [--gpus-per-node 24] [--parallel 16] [--progress]
                         [--progress-seconds 30] [--no-floors]
With --progress, taas runs the jobs three times in the same run: without reading the jobs'
progress (--progress-seconds 0), with it, and without it again (the spread of the two is the
noise), every job's chief answered by one fake metrics endpoint in this process whose step rises
with time (so every read finds new progress and is written); it prints the times to all Running,
the progress writes made until then, and the writes per second once every job runs
(docs/operator.md, "Progress writes at 500 jobs").
With --peer-operator (Kubeflow's training-operator, `scripts/cluster/training-operator build`
prints where it is), the same jobs then run under it twice in the same run, on the same control
plane: with its default settings (one controller thread) and with --controller-threads equal to
taas's --workers; each with its own CRD and validation webhook, as tests/conformance installs it.
Then taas runs once more, so an effect of the order shows as a spread between its two runs.
Every phase runs in its own namespace, deleted (and waited for) before the next one starts.
(PS replicas run on CPU, each worker takes one GPU.) The machine may be shared: only ratios
within one run compare. Figures and method: docs/operator.md, "Figures".
"""

import argparse
import base64
import concurrent.futures
import http.client
import io
import json
import os
import random
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import urllib.error
import urllib.parse
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
        self.local = threading.local()  # one connection per thread

    def open(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        return urllib.request.urlopen(req, context=self.ctx, timeout=timeout)

    def call(self, method, path, body=None):
        """One request on this thread's keep-alive connection, as an operator's client keeps
        its connections: a TLS handshake per request would cost the API server (and this
        process) more than many requests do, and the floors would measure handshakes."""
        data = json.dumps(body).encode() if body is not None else None
        resent = False  # after a broken connection, which may have carried the request
        for attempt in range(5):
            conn = getattr(self.local, "conn", None)
            if conn is None:
                url = urllib.parse.urlsplit(self.server)
                conn = http.client.HTTPSConnection(url.hostname, url.port, context=self.ctx,
                                                   timeout=60)
                self.local.conn = conn
            try:
                conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
                response = conn.getresponse()
                payload = response.read()
            except (http.client.HTTPException, OSError):
                conn.close()  # e.g. closed by the server while idle between phases
                self.local.conn = None
                resent = True
                if attempt < 4:
                    continue
                raise
            if response.status == 409 and resent and method == "POST":
                return {}  # the first attempt created it
            if response.status in (429, 500, 503) and attempt < 4:
                time.sleep(0.5 * (attempt + 1))
                continue
            if response.status >= 400:
                raise urllib.error.HTTPError(self.server + path, response.status, response.reason,
                                             response.headers, io.BytesIO(payload))
            return json.loads(payload or b"{}")


class PodTracker:
    """Follows one namespace's pods through a watch: when each pod first existed and first ran.

    A watch instead of polling LISTs: a LIST of 2,500 pods every half second costs the API server
    (and this process) more CPU than the pods it measures, on the same cores, and a poll only
    knows a time to its interval. A watch that ends early is resumed from a fresh LIST.
    """

    def __init__(self, api, ns):
        self.api, self.ns = api, ns
        self.created = {}  # pod name -> first time seen
        self.running = {}  # pod name -> first time seen Running
        self.cond = threading.Condition()
        self.stopping = False
        self.error = None
        version = self._list()
        self.thread = threading.Thread(target=self._watch, args=(version,), daemon=True)
        self.thread.start()

    def _see(self, pod, now):
        name = pod["metadata"]["name"]
        with self.cond:
            self.created.setdefault(name, now)
            if pod.get("status", {}).get("phase") == "Running":
                self.running.setdefault(name, now)
            self.cond.notify_all()

    def _list(self):
        r = self.api.call("GET", f"/api/v1/namespaces/{self.ns}/pods?limit=100000")
        now = time.time()
        for pod in r["items"]:
            self._see(pod, now)
        return r["metadata"]["resourceVersion"]

    def _watch(self, version):
        try:
            while not self.stopping:
                path = (f"/api/v1/namespaces/{self.ns}/pods?watch=1&resourceVersion={version}"
                        "&allowWatchBookmarks=true&timeoutSeconds=600")
                with self.api.open("GET", path, timeout=660) as stream:
                    for line in stream:
                        event = json.loads(line)
                        obj = event.get("object", {})
                        if event.get("type") == "ERROR":  # 410 Gone: list again
                            version = self._list()
                            break
                        version = obj.get("metadata", {}).get("resourceVersion", version)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self._see(obj, time.time())
                        if self.stopping:
                            return
        except Exception as e:  # noqa: BLE001 (reported by wait)
            with self.cond:
                self.error = e
                self.cond.notify_all()

    def wait(self, want, timeout):
        """Returns (time every pod existed, time every pod was Running), within timeout."""
        deadline = time.time() + timeout
        with self.cond:
            while len(self.running) < want:
                if self.error is not None:
                    raise SystemExit(f"watching pods in {self.ns} failed: {self.error}")
                left = deadline - time.time()
                if left <= 0:
                    raise SystemExit(f"timed out after {timeout}s waiting for {want} Running pods "
                                     f"in {self.ns}: {len(self.running)} Running, "
                                     f"{len(self.created)} created")
                self.cond.wait(min(left, 1.0))
            self.stopping = True
            return sorted(self.created.values())[want - 1], sorted(self.running.values())[want - 1]


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


class FakeChiefs:
    """One metrics endpoint answering for every job's chief: a trainer's page whose global step
    rises 20 per second, so each read finds new progress (the most writes the operator makes)."""

    def __init__(self):
        start = time.time()
        reads = [0]

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                reads[0] += 1
                step = int((time.time() - start) * 20)
                body = (f"taas_global_step {step}\ntaas_max_steps 1000000\n"
                        f"taas_examples_per_second 2000\ntaas_loss {1 / (1 + step):.6f}\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.reads = reads
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def flags(self, ns, jobs, seconds):
        out = ["--progress-seconds", str(seconds)]
        for i in range(jobs):
            out += ["--metrics-target", f"{ns}/job-{i}-worker-0={self.address}"]
        return out

    def close(self):
        self.server.shutdown()


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


def drop_namespace(api, ns, timeout=900):
    """Deletes the namespace and waits until it is gone with everything in it, so that the next
    phase does not share the cores with its cleanup."""
    api.call("DELETE", f"/api/v1/namespaces/{ns}")
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            api.call("GET", f"/api/v1/namespaces/{ns}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return
            raise
        time.sleep(1)
    raise SystemExit(f"namespace {ns} still there {timeout}s after its deletion")


def measure_floor(api, args, total, services):
    """The least the cluster can do: the jobs' pods POSTed directly, with the same parallelism.

    With services, each pod also gets the headless service a TFJob replica has (one selecting
    it), POSTed right after it: what every TFJob controller must ask of the API server, and what
    kube-controller-manager's EndpointSlice controller then has to follow.
    Returns (name, seconds until accepted, seconds until every pod was Running).
    """
    pods_per_job = 1 + args.workers
    ns = "floor-services" if services else "floor"
    make_namespace(api, ns)

    def post(i):
        gpus = 0 if i % pods_per_job == 0 else 1  # the same mix as the jobs
        name = f"pod-{i}"
        api.call("POST", f"/api/v1/namespaces/{ns}/pods",
                 {"metadata": {"name": name, "labels": {"floor-pod": name}},
                  "spec": {"containers": [container(gpus)]}})
        if services:
            api.call("POST", f"/api/v1/namespaces/{ns}/services",
                     {"metadata": {"name": name},
                      "spec": {"clusterIP": "None", "selector": {"floor-pod": name},
                               "ports": [{"name": "tfjob-port", "port": 2222}]}})
    tracker = PodTracker(api, ns)
    t0 = time.time()
    parallel(total, post, args.parallel)
    accepted = time.time() - t0
    running = tracker.wait(total, 1800)[1] - t0
    what = f"{total} pods and {total} services" if services else f"{total} pods"
    print(f"floor ({ns}): {what} accepted in {accepted:.1f}s, every pod Running after "
          f"{running:.1f}s (load average {os.getloadavg()[0]:.1f})", flush=True)
    drop_namespace(api, ns)
    return ns, accepted, running


def run_jobs(api, args, ns, total, floors, label, metrics_text, bucket, pid):
    """Creates the TFJobs in ns and reports the operator (pid) getting every pod Running."""
    tracker = PodTracker(api, ns)
    t0 = time.time()
    parallel(args.jobs, lambda i: api.call("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs",
                                           tfjob(ns, i, args.workers)), args.parallel)
    jobs_created = time.time() - t0
    created, jobs_running = (t - t0 for t in tracker.wait(total, 3600))
    text = metrics_text()
    writes = metric(text, "taas_operator_progress_writes_total")
    rss, cpu = process_usage(pid)
    print(f"{label}: {args.jobs} TFJobs created in {jobs_created:.1f}s, every pod created after "
          f"{created:.1f}s, all {total} pods Running after {jobs_running:.1f}s")
    print(f"{label}: all Running against the floors' all Running: " + "; ".join(
        f"{jobs_running / running:.2f}x {name}" for name, _, running in floors))
    print(f"{label}: reconcile latency p50 <= {quantile(text, 0.5, bucket)}s, "
          f"p99 <= {quantile(text, 0.99, bucket)}s")
    print(f"{label}: operator peak RSS {rss:.1f} MiB, CPU {cpu:.1f} s; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    return {"label": label, "running": jobs_running, "created": created, "rss": rss, "cpu": cpu,
            "ratios": [jobs_running / running for _, _, running in floors],
            "progress_writes": writes}


def steady_progress_writes(port, args):
    """Progress writes per second once every job runs: counted over two intervals."""
    window = 2 * args.progress_seconds
    before = metric(metrics(port), "taas_operator_progress_writes_total")
    time.sleep(window)
    after = metric(metrics(port), "taas_operator_progress_writes_total")
    print(f"progress writes once every job runs: {after - before:.0f} in {window}s, "
          f"{(after - before) / window:.1f}/s ({(after - before) / args.jobs:.2f} per job; load "
          f"average {os.getloadavg()[0]:.1f})", flush=True)


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
    parser.add_argument("--progress", action="store_true",
                        help="run taas without and with reading the jobs' progress")
    parser.add_argument("--progress-seconds", type=int, default=30)
    parser.add_argument("--no-floors", action="store_true", help="skip the two floors")
    args = parser.parse_args()
    pods_per_job = 1 + args.workers
    total = args.jobs * pods_per_job
    name = f"bench-{os.getpid()}-{random.randint(0, 9999)}"
    tmp = tempfile.mkdtemp(prefix="taas-operator-bench-")
    op = None
    peer = None
    load_start = os.getloadavg()[0]
    results = []
    completed = False
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
        floors = [] if args.no_floors else [measure_floor(api, args, total, services=False),
                                             measure_floor(api, args, total, services=True)]
        chiefs = FakeChiefs() if args.progress else None

        def taas_phase(ns, label, progress=None, steady=False):
            nonlocal op
            subprocess.run(["kubectl", "apply", "-f", CRD], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["kubectl", "wait", "--for=condition=established", "--timeout=120s",
                            "crd/tfjobs.kubeflow.org"], check=True, stdout=subprocess.DEVNULL)
            make_namespace(api, ns)
            port_file = os.path.join(tmp, f"port-{ns}")
            op = subprocess.Popen([args.operator, "--kubeconfig", kubeconfig, "--health-port", "0",
                                   "--health-address", "127.0.0.1", "--port-file", port_file,
                                   "--leader-elect=false", "--workers", str(TAAS_WORKERS),
                                   "--namespaces", ns, *(progress or [])],
                                  stdout=open(os.path.join(tmp, f"operator-{ns}.log"), "w"),
                                  stderr=subprocess.STDOUT)
            while not os.path.exists(port_file):
                time.sleep(0.1)
            port = int(open(port_file).read())
            time.sleep(2)
            results.append(run_jobs(api, args, ns, total, floors, label, lambda: metrics(port),
                                    "taas_operator_reconcile_duration_seconds_bucket", op.pid))
            if steady:
                steady_progress_writes(port, args)
            for line in metrics(port).splitlines():
                if line.startswith(("taas_operator_reconcile_total", "taas_operator_api_",
                                    "taas_operator_pods_created", "taas_operator_services_created",
                                    "taas_operator_status_", "taas_operator_events_",
                                    "taas_operator_progress_")):
                    print(line)
            sys.stdout.flush()
            op.terminate()
            op.wait()
            op = None
            drop_namespace(api, ns)
            subprocess.run(["kubectl", "delete", "crd", "tfjobs.kubeflow.org"], check=True,
                           stdout=subprocess.DEVNULL)

        if args.progress:
            taas_phase("jobs-off", "taas, progress off", ["--progress-seconds", "0"])
            taas_phase("jobs", "taas, progress on",
                       chiefs.flags("jobs", args.jobs, args.progress_seconds), steady=True)
            print(f"fake chiefs answered {chiefs.reads[0]} reads")
            chiefs.close()
            taas_phase("jobs-off-again", "taas, progress off again", ["--progress-seconds", "0"])
        else:
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
                    api, args, ns, total, floors, label,
                    lambda: metrics_at(f"http://127.0.0.1:{peer.metrics_port}/metrics"),
                    'controller_runtime_reconcile_time_seconds_bucket{controller="tfjob-controller"',
                    peer.proc.pid))
                peer.uninstall()
                peer = None
                drop_namespace(api, ns)
            shutil.rmtree(env.tmp, ignore_errors=True)  # the peer's certificates and logs
            # taas again, last: what running first or after a phase costs shows in the spread.
            taas_phase("jobs-again", "taas, again after Kubeflow")
        if args.progress:
            off, on, again = results[0], results[1], results[2]
            mean_off = (off["running"] + again["running"]) / 2
            print(f"\nprogress on against off, time to all Running: {on['running']:.1f}s against "
                  f"{off['running']:.1f}s and {again['running']:.1f}s "
                  f"({(on['running'] / mean_off - 1) * 100:+.1f}% of their mean); "
                  f"{on['progress_writes']:.0f} progress writes until then")
        print("\n| operator | every pod created | all Running | " + " | ".join(
            f"x {name} ({running:.1f}s)" for name, _, running in floors) +
            " | peak RSS | CPU |\n|---|---|---|" + "---|" * len(floors) + "---|---|")
        for r in results:
            ratios = " | ".join(f"{x:.2f}x" for x in r["ratios"])
            print(f"| {r['label']} | {r['created']:.1f}s | {r['running']:.1f}s | {ratios} "
                  f"| {r['rss']:.1f} MiB | {r['cpu']:.1f} s |")
        print(f"load average {os.getloadavg()[0]:.1f} (at start {load_start:.1f})", flush=True)
        completed = True
    finally:
        if op is not None:
            op.terminate()
            op.wait()
        if peer is not None:
            peer.uninstall()
        subprocess.run([CLUSTER, "down", "--name", name])
        if completed:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"the operators' logs are kept in {tmp}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
