#!/usr/bin/env python3
"""The fault run (bench/faults/run.sh): kills parts of taas at random for a bounded time and
prints what survived.

Two parts, run side by side:
  local    runs the Fashion-MNIST CNN job under `taas run`, one job after another, and every few
           seconds SIGKILLs a random replica (PS, a worker, the chief, the evaluator) or preempts
           the whole job: SIGTERM to `taas run` (as Kueue's preemption or a drain ends every pod),
           then `taas run` again with the same --model-dir, which resumes from the checkpoint the
           chief saved on the signal;
  cluster  creates TFJobs in a test control plane (scripts/cluster/taas-cluster, kwok nodes)
           with taas-operator running against it, finishes their pods as a kubelet would, and
           every few seconds SIGKILLs then restarts the operator or the kube-apiserver, or makes a
           node that holds job pods NotReady (the operator replaces its pods after
           --node-failure-seconds) and hands it back a while later.

It prints, per part and in total:
  jobs succeeded       jobs that reached Succeeded, of those started;
  duplicate pods       replicas (job, type, index) seen with two live processes or pods at once;
  checkpoints lost     a checkpoint listed in the index whose files are missing, the index's
                       newest step going down, or a global step below the newest checkpoint
                       after a restart;
  longest stall        the longest time without progress (local: the chief's global step;
                       cluster: a job waiting for the operator), with the number of faults
                       injected during it: a stall that spans at most one fault is one restart;
  steps re-done        local, per preemption: the job's global step when it ended on the SIGTERM
                       (the PS's) minus the step of the checkpoint it resumed from.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ALIVE_PHASES = ("Pending", "Running", "")
NODE_FAILURE_S = 10  # the operator's --node-failure-seconds here
NODE_BACK_S = (20, 40)  # how long a failed node stays NotReady before it comes back


def log(msg):
    print(f"[faults] {time.strftime('%H:%M:%S')} {msg}", flush=True)


def process_alive(pid):
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


class Stalls:
    """Longest time without progress, and the faults injected during it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.faults = []  # times of injected faults
        self.longest = 0.0
        self.longest_faults = 0
        self.without_fault = 0.0  # the longest stall with no fault in it: a hang

    def fault(self, when):
        with self.lock:
            self.faults.append(when)

    def waited(self, start, end):
        """Records that nothing progressed from start to end."""
        with self.lock:
            faults = sum(1 for t in self.faults if start <= t <= end)
            length = end - start
            if length > self.longest:
                self.longest, self.longest_faults = length, faults
            if faults == 0:
                self.without_fault = max(self.without_fault, length)


class Part:
    def __init__(self, name):
        self.name = name
        self.jobs_started = 0
        self.jobs_succeeded = 0
        self.duplicates = set()
        self.checkpoints_lost = []
        self.stalls = Stalls()
        self.kills = {}
        self.recoveries = []  # seconds from a fault until progress resumed
        self.redone = []  # per preemption: global steps trained after the saved one
        self.notes = []

    def killed(self, what):
        self.kills[what] = self.kills.get(what, 0) + 1
        self.stalls.fault(time.monotonic())

    def report(self):
        s = self.stalls
        kills = ", ".join(f"{k} {v}" for k, v in sorted(self.kills.items())) or "none"
        lines = [
            f"{self.name}: faults injected: {kills}",
            f"{self.name}: jobs succeeded: {self.jobs_succeeded}/{self.jobs_started}",
            f"{self.name}: duplicate pods seen: {len(self.duplicates)}"
            + (f" ({', '.join(sorted(self.duplicates))})" if self.duplicates else ""),
            f"{self.name}: checkpoints lost: {len(self.checkpoints_lost)}"
            + "".join(f"\n  {c}" for c in self.checkpoints_lost),
            f"{self.name}: longest stall: {s.longest:.1f} s (faults during it: "
            f"{s.longest_faults}); longest stall without a fault: {s.without_fault:.1f} s",
        ]
        if self.recoveries:
            r = sorted(self.recoveries)
            lines.append(f"{self.name}: recovery after a fault: median {r[len(r) // 2]:.1f} s, "
                         f"longest {r[-1]:.1f} s ({len(r)} faults)")
        if self.redone:
            lines.append(f"{self.name}: steps re-done after a preemption: "
                         f"{', '.join(map(str, self.redone))} (most {max(self.redone)})")
        lines += [f"{self.name}: note: {n}" for n in self.notes]
        return lines


# ---------------------------------------------------------------------------------------------
# local: `taas run` of the CNN job


class CheckpointWatch:
    """Follows the model dir's checkpoint index (text: model_checkpoint_path and
    all_model_checkpoint_paths lines)."""

    PATH_RE = re.compile(r'^(?:model_checkpoint_path|all_model_checkpoint_paths):\s*"(.*)"\s*$')

    def __init__(self, model_dir, part):
        self.model_dir = model_dir
        self.part = part
        self.newest = -1
        self.reported = set()

    def listed(self):
        try:
            with open(os.path.join(self.model_dir, "checkpoint")) as f:
                text = f.read()
        except OSError:
            return None
        paths = []
        for line in text.splitlines():
            m = self.PATH_RE.match(line.strip())
            if m:
                paths.append(m.group(1))
        return paths

    @staticmethod
    def step_of(prefix):
        m = re.search(r"-(\d+)$", prefix)
        return int(m.group(1)) if m else -1

    def missing(self, paths):
        out = []
        for p in paths:
            full = p if os.path.isabs(p) else os.path.join(self.model_dir, p)
            if not os.path.exists(full + ".safetensors"):
                out.append(p)
        return out

    def check(self):
        paths = self.listed()
        if not paths:
            return
        newest = max(self.step_of(p) for p in paths)
        if newest < self.newest:
            self.lost(f"the index's newest checkpoint went from step {self.newest} to {newest}")
        self.newest = max(self.newest, newest)
        gone = self.missing(paths)
        if gone:
            # The chief may be between writing the index and pruning: look again.
            time.sleep(0.5)
            paths = self.listed() or []
            for p in self.missing(paths):
                self.lost(f"{p} is listed in the index but its files are gone")

    def lost(self, what):
        if what not in self.reported:
            self.reported.add(what)
            self.part.checkpoints_lost.append(what)
            log(f"local: checkpoint lost: {what}")


class LocalRun:
    STARTED_RE = re.compile(r"^\[taas\] started (\S+) pid=(\d+)")
    STEP_RE = re.compile(r"^\[taas\] step (\d+)")
    MODEL_DIR_RE = re.compile(r"^\[taas\] job \S+: model dir (\S+)")

    def __init__(self, args, deadline):
        self.args = args
        self.deadline = deadline
        self.part = Part("local")
        self.rng = random.Random(args.seed)

    def run(self):
        while time.monotonic() < self.deadline - 30:
            kills = sum(self.part.kills.values())
            if not self.one_job(self.part.jobs_started) and sum(self.part.kills.values()) == kills:
                raise RuntimeError("a job failed with no fault injected: a setup problem, not a "
                                   "fault; see its log")

    def one_job(self, number):
        """One job to its end: `taas run` again with the same model dir after each preemption."""
        part = self.part
        part.jobs_started += 1
        model_dir = tempfile.mkdtemp(prefix=f"taas-faults-job{number}-")
        log_path = os.path.join(self.args.log_dir, f"local-job{number}.log")
        cmd = [self.args.taas, "run", self.args.job, "--build-dir", self.args.build_dir,
               "--model-dir", model_dir, "--no-ui", "--progress-secs", "1",
               "--env", f"TF_MAX_STEPS={self.args.steps}",
               "--env", f"TAAS_SAVE_CHECKPOINTS_STEPS={self.args.checkpoint_steps}"]
        for kv in self.args.env:
            cmd += ["--env", kv]
        log(f"local: job {number}: {' '.join(cmd)}")
        out = open(log_path, "w")
        pids = {}  # replica name -> every pid it has had, over every launch of the job
        state = {"step": -1, "progress_at": time.monotonic(), "restarted": False}
        checkpoints = CheckpointWatch(model_dir, part)
        lock = threading.Lock()
        preemptions = 0
        while True:
            rc, preempted = self.launch(number, cmd, out, pids, state, checkpoints, lock)
            if not (preempted and rc == 128 + signal.SIGTERM):
                break
            self.preempted(number, model_dir, preemptions)
            preemptions += 1
            with lock:
                state["restarted"] = True  # the resumed steps must not go below the checkpoint
            log(f"local: job {number} preempted; resuming it: taas run with --model-dir "
                f"{model_dir}")
        out.close()
        with lock:
            checkpoints.check()
        if rc == 0:
            part.jobs_succeeded += 1
            log(f"local: job {number} succeeded at step {state['step']}; its log: {log_path}")
            shutil.rmtree(model_dir, ignore_errors=True)  # a failed job's model dir stays
        else:
            log(f"local: job {number} FAILED with {rc}; its log: {log_path}, model dir {model_dir}")
        return rc == 0

    def launch(self, number, cmd, out, pids, state, checkpoints, lock):
        """One `taas run` of the job, with faults, to its end: (exit code, preempted)."""
        part = self.part
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1)

        def reader():
            for line in proc.stdout:
                out.write(line)
                now = time.monotonic()
                m = self.STARTED_RE.match(line)
                if m:
                    with lock:
                        name, pid = m.group(1), int(m.group(2))
                        alive = [p for p in pids.get(name, []) if process_alive(p)]
                        if alive:
                            part.duplicates.add(f"job{number}/{name}")
                            log(f"local: duplicate: {name} started as {pid} while {alive} live")
                        pids.setdefault(name, []).append(pid)
                        if "(restart" in line:
                            state["restarted"] = True
                    continue
                m = self.STEP_RE.match(line)
                if m:
                    step = int(m.group(1))
                    with lock:
                        if state["restarted"] and checkpoints.newest >= 0 \
                                and step < checkpoints.newest:
                            checkpoints.lost(f"job{number}: global step {step} after a restart is "
                                             f"below the newest checkpoint {checkpoints.newest}")
                        if step > state["step"]:
                            if state["step"] >= 0:
                                part.stalls.waited(state["progress_at"], now)
                            state["progress_at"] = now
                            state["restarted"] = False
                        state["step"] = max(state["step"], step)

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        # The next fault waits until the job progressed again after the last one, so a stall
        # that spans two faults is a restart that did not recover, not two faults close together.
        next_kill = time.monotonic() + self.rng.uniform(*self.args.kill_every)
        killed_at = None
        preempted = False
        while proc.poll() is None:
            time.sleep(0.2)
            now = time.monotonic()
            if killed_at is not None and state["progress_at"] > killed_at:
                self.part.recoveries.append(state["progress_at"] - killed_at)
                killed_at = None
                next_kill = now + self.rng.uniform(*self.args.kill_every)
            with lock:
                checkpoints.check()
                for name, plist in pids.items():
                    live = [p for p in plist if process_alive(p)]
                    if len(live) > 1:
                        part.duplicates.add(f"job{number}/{name}")
            if now >= self.deadline + self.args.grace:
                log(f"local: job {number} still running at the deadline; interrupting it")
                proc.send_signal(signal.SIGINT)
                break
            if killed_at is None and not preempted and now >= next_kill \
                    and now < self.deadline and state["step"] >= 0:
                if self.rng.random() < self.args.preempt_share:
                    log(f"local: SIGTERM taas run of job {number} (pid {proc.pid}): preempted")
                    proc.send_signal(signal.SIGTERM)
                    self.part.killed("preemption (SIGTERM to the job)")
                    preempted = True
                elif self.kill_one(pids, lock):
                    killed_at = now
        rc = proc.wait()
        t.join(timeout=10)
        return rc, preempted

    # A PS-mode job's lines on SIGTERM (docs/trainer-runtime.md, "Faults"), in its replicas' logs.
    SAVED_RE = re.compile(r'msg="checkpoint on termination saved" .*global_step=(\d+)')
    ENDED_RE = re.compile(r'msg="terminating: done waiting" .*global_step=(\d+)')

    def preempted(self, number, model_dir, index):
        """Reads what preemption `index` (from 0) of job `number` cost from the replicas' logs,
        which every `taas run` of the job appends to: the step the chief saved on the signal
        against the PS's step when it ended (the steps the resumed job re-does)."""
        logs = os.path.join(model_dir, "logs")

        def nth(replica_suffix, pattern):
            """The step of the index-th line matching `pattern`, or None: a preemption that
            saved nothing leaves no line, and an earlier preemption's must not stand in."""
            names = sorted(n for n in os.listdir(logs) if n.endswith(replica_suffix)) \
                if os.path.isdir(logs) else []
            steps = []
            for name in names:
                with open(os.path.join(logs, name), errors="replace") as f:
                    steps += [int(m.group(1)) for m in map(pattern.search, f) if m]
            return steps[index] if index < len(steps) else None

        saved = nth("-worker-0.log", self.SAVED_RE)
        ended = nth("-ps-0.log", self.ENDED_RE)
        if saved is None or ended is None:
            self.part.notes.append(f"job{number}: preemption {index + 1} saved no checkpoint on "
                                   f"the signal (saved {saved}, PS ended at {ended}): it resumes "
                                   "from the last periodic one")
            return
        self.part.redone.append(max(0, ended - saved))
        log(f"local: job {number}: saved step {saved} on the signal; the PS ended at {ended}")

    def kill_one(self, pids, lock):
        with lock:
            live = {n: p[-1] for n, p in pids.items() if p and process_alive(p[-1])}
        if not live:
            return False
        name = self.rng.choice(sorted(live))
        kind = re.sub(r"^.*-(ps|worker|evaluator|chief|master)-(\d+)$", r"\1", name)
        if kind == "worker" and name.endswith("-worker-0"):
            kind = "chief (worker 0)"
        log(f"local: SIGKILL {name} (pid {live[name]})")
        try:
            os.killpg(live[name], signal.SIGKILL)  # each replica leads its own process group
        except ProcessLookupError:
            return False
        self.part.killed(kind)
        return True


# ---------------------------------------------------------------------------------------------
# cluster: taas-operator against the test control plane


class Cluster:
    def __init__(self, args, deadline):
        self.args = args
        self.deadline = deadline
        self.part = Part("cluster")
        self.rng = random.Random(args.seed + 1)
        self.name = f"faults-{os.getpid()}"
        self.tmp = tempfile.mkdtemp(prefix="taas-faults-cluster-")
        self.env = dict(os.environ)
        self.operator = None
        self.operator_log = open(os.path.join(self.tmp, "operator.log"), "a")
        self.stop = threading.Event()
        self.jobs = {}  # name -> {"created": t, "finished": t or None, "succeeded": bool}
        self.api_down = threading.Event()
        self.operator_lock = threading.Lock()
        self.operator_exits = 0

    # ---- control plane ----
    def up(self):
        subprocess.run([self.args.cluster, "up", "--name", self.name, "--nodes", "4",
                        "--owner-pid", str(os.getpid())], check=True, stdout=sys.stderr)
        out = subprocess.run([self.args.cluster, "env", "--name", self.name], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"export (\w+)=(.*)$", line.strip())
            if m:
                self.env[m.group(1)] = m.group(2).strip("'\"").replace(
                    "$PATH", self.env.get("PATH", ""))
        self.state = os.path.dirname(self.env["KUBECONFIG"])
        self.kubectl("apply", "--server-side", "-f", self.args.crd)
        # Not `kubectl wait --for=condition=established`, which fails at once while the API
        # server has written no condition yet.
        start = time.monotonic()
        while time.monotonic() - start < 60:
            p = self.kubectl("get", "crd/tfjobs.kubeflow.org", "-o",
                             "jsonpath={.status.conditions[?(@.type=='Established')].status}",
                             check=False)
            if p is not None and p.stdout.strip() == "True":
                break
            time.sleep(0.2)
        else:
            raise RuntimeError("the TFJob CRD was not established within 60 s")

    def down(self):
        subprocess.run([self.args.cluster, "down", "--name", self.name])

    def kubectl(self, *args, input=None, check=True, timeout=30):
        try:
            p = subprocess.run(["kubectl", "--request-timeout", "10s", *args], env=self.env,
                               input=input, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            if check:
                raise RuntimeError(f"kubectl {' '.join(args)} timed out")
            return None
        if check and p.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {p.stderr.strip()}")
        return p

    def apiserver_pid(self):
        with open(os.path.join(self.state, "pids", "kube-apiserver")) as f:
            return int(f.read().strip())

    def restart_apiserver(self):
        """SIGKILLs the kube-apiserver and starts it again with the same command line (etcd keeps
        the state), as a static pod's kubelet would."""
        pid = self.apiserver_pid()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = [a.decode() for a in f.read().split(b"\0") if a]
        log(f"cluster: SIGKILL kube-apiserver (pid {pid})")
        self.api_down.set()
        os.kill(pid, signal.SIGKILL)
        self.part.killed("kube-apiserver")
        while process_alive(pid):
            time.sleep(0.1)
        time.sleep(self.rng.uniform(1, 5))
        logf = open(os.path.join(self.state, "logs", "kube-apiserver.log"), "a")
        proc = subprocess.Popen(cmdline, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        with open(os.path.join(self.state, "pids", "kube-apiserver"), "w") as f:
            f.write(f"{proc.pid}\n")
        start = time.monotonic()
        while time.monotonic() - start < 180:
            p = self.kubectl("get", "--raw", "/readyz", check=False)
            if p is not None and p.returncode == 0:
                break
            time.sleep(0.5)
        log(f"cluster: kube-apiserver back after {time.monotonic() - start:.1f} s")
        self.api_down.clear()

    # ---- operator ----
    def start_operator(self):
        # The operator's own lease timings (15 s lease, 10 s renew deadline), as deployed.
        cmd = [self.args.operator, "--kubeconfig", self.env["KUBECONFIG"], "--health-port", "0",
               "--health-address", "127.0.0.1", "--workers", "4", "--lease-namespace", "default",
               "--node-failure-seconds", str(NODE_FAILURE_S)]
        self.operator = subprocess.Popen(cmd, stdout=self.operator_log, stderr=subprocess.STDOUT,
                                         env=self.env)

    def restart_operator(self):
        with self.operator_lock:
            log(f"cluster: SIGKILL taas-operator (pid {self.operator.pid})")
            self.operator.send_signal(signal.SIGKILL)
            self.operator.wait()
            self.part.killed("taas-operator")
            time.sleep(self.rng.uniform(0, 3))
            self.start_operator()

    def supervise_operator(self):
        """Restarts an operator that exited by itself (a leader that cannot renew its lease
        exits), one second later, as its Deployment's kubelet would."""
        with self.operator_lock:
            code = self.operator.poll()
            if code is None:
                return
            self.operator_exits += 1
            log(f"cluster: taas-operator exited by itself with {code}; restarting it")
            time.sleep(1)
            self.start_operator()

    # ---- nodes ----
    def node_command(self, command, node):
        """`taas-cluster node-down` (what a dead kubelet leaves) or `node-up` (it comes back)."""
        subprocess.run([self.args.cluster, command, "--name", self.name, node], env=self.env,
                       check=True, capture_output=True, text=True)

    def fail_node(self):
        """Makes a node that holds job pods NotReady as a dead kubelet leaves it (kwok stops
        managing it, Ready False: `taas-cluster node-down`), then hands it back, as a node that
        was only cut off, NODE_BACK_S later. The operator replaces its pods after
        --node-failure-seconds; a replacement beside its old pod is a duplicate."""
        p = self.kubectl("get", "pods", "-n", "default", "-o", "json", check=False)
        if p is None or p.returncode != 0:
            return
        nodes = sorted({pod["spec"].get("nodeName") for pod in json.loads(p.stdout)["items"]
                        if pod["spec"].get("nodeName")
                        and pod.get("status", {}).get("phase") == "Running"})
        if not nodes:
            return
        node = self.rng.choice(nodes)
        self.node_command("node-down", node)
        log(f"cluster: node {node} NotReady")
        self.part.killed("node NotReady")
        self.stop.wait(self.rng.uniform(*NODE_BACK_S))
        self.node_command("node-up", node)
        log(f"cluster: node {node} handed back to kwok")

    # ---- jobs ----
    def tfjob(self, name):
        container = {"name": "tensorflow", "image": "taas/trainer:latest",
                     "command": ["/opt/taas/bin/fashion-mnist-cnn"]}
        spec = {"replicas": 1, "restartPolicy": "ExitCode",
                "template": {"spec": {"containers": [container]}}}
        workers = dict(spec, replicas=2)
        return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                         "tfReplicaSpecs": {"PS": spec, "Worker": workers, "Evaluator": spec}}}

    def create_job(self):
        name = f"fault-{len(self.jobs)}"
        p = self.kubectl("create", "-f", "-", input=json.dumps(self.tfjob(name)), check=False)
        if p is None or p.returncode != 0:
            return  # the API server is down: try again at the next tick
        self.jobs[name] = {"created": time.monotonic(), "running": None, "finished": None,
                           "succeeded": None}
        self.part.jobs_started += 1
        log(f"cluster: created TFJob {name}")

    def observe(self):
        """One poll of pods and TFJobs: duplicates, jobs to finish, jobs finished."""
        p = self.kubectl("get", "pods", "-n", "default", "-o", "json", check=False)
        if p is None or p.returncode != 0:
            return
        now = time.monotonic()
        live = {}
        for pod in json.loads(p.stdout)["items"]:
            labels = pod["metadata"].get("labels", {})
            job = labels.get("training.kubeflow.org/job-name")
            if not job:
                continue
            if pod.get("status", {}).get("phase", "") not in ALIVE_PHASES:
                continue
            key = (job, labels.get("training.kubeflow.org/replica-type"),
                   labels.get("training.kubeflow.org/replica-index"))
            live.setdefault(key, []).append(pod)
        for key, pods in live.items():
            if len(pods) > 1:
                what = "/".join(str(k) for k in key)
                if what not in self.part.duplicates:
                    log(f"cluster: duplicate pods for {what}: "
                        f"{[x['metadata']['name'] for x in pods]}")
                self.part.duplicates.add(what)
        p = self.kubectl("get", "tfjobs", "-n", "default", "-o", "json", check=False)
        if p is None or p.returncode != 0:
            return
        for tfj in json.loads(p.stdout)["items"]:
            name = tfj["metadata"]["name"]
            job = self.jobs.get(name)
            if job is None:
                continue
            conds = {c["type"]: c["status"] for c in tfj.get("status", {}).get("conditions", [])}
            running = [k for k in live if k[0] == name]
            if job["running"] is None and len(running) == 4 and all(
                    x["status"].get("phase") == "Running" for k in running for x in live[k]):
                job["running"] = now
                self.part.stalls.waited(job["created"], now)
            if conds.get("Succeeded") == "True" and job["succeeded"] is None:
                job["succeeded"] = now
                self.part.jobs_succeeded += 1
                if job["finished"] is not None:
                    self.part.stalls.waited(job["finished"], now)
                log(f"cluster: TFJob {name} succeeded")
            if conds.get("Failed") == "True" and job["succeeded"] is None:
                job["succeeded"] = False
                log(f"cluster: TFJob {name} FAILED")

    def finish_ready_jobs(self):
        """Worker 0 (the chief) of a job running for a while exits 0, then its evaluator, as a
        real one does once it scored the final checkpoint: the operator waits up to two minutes
        for an evaluator after the chief's success, which kwok's evaluator would always use up."""
        now = time.monotonic()
        for name, job in self.jobs.items():
            if job["running"] is None or job["finished"] is not None:
                continue
            if now - job["running"] < self.args.job_seconds:
                continue
            finished = True
            for replica in ("worker-0", "evaluator-0"):
                p = subprocess.run([self.args.cluster, "finish-pod", "--name", self.name,
                                    "--timeout", "20", "default", f"{name}-{replica}", "0"],
                                   env=self.env, capture_output=True, text=True)
                finished = finished and p.returncode == 0
                if p.returncode == 0:
                    log(f"cluster: {name}-{replica} finished with 0")
            if finished:
                job["finished"] = time.monotonic()

    def faults(self):
        while not self.stop.wait(self.rng.uniform(*self.args.cluster_fault_every)):
            if time.monotonic() >= self.deadline:
                return
            try:
                fault = self.rng.random()
                if fault < 1 / 3:
                    self.restart_operator()
                elif fault < 2 / 3:
                    self.restart_apiserver()
                else:
                    self.fail_node()
            except Exception as e:  # a fault that could not be injected is noted, not fatal
                self.part.notes.append(f"fault not injected: {e}")

    def run(self):
        self.up()
        self.start_operator()
        injector = threading.Thread(target=self.faults, daemon=True)
        injector.start()
        next_job = time.monotonic()
        try:
            while True:
                now = time.monotonic()
                if now < self.deadline and now >= next_job:
                    self.create_job()
                    next_job = now + self.args.job_every
                self.supervise_operator()
                self.observe()
                self.finish_ready_jobs()
                pending = [n for n, j in self.jobs.items() if j["succeeded"] is None]
                if now >= self.deadline and not pending:
                    break
                if now >= self.deadline + self.args.grace:
                    self.part.notes.append(f"still unfinished {self.args.grace} s after the "
                                           f"deadline: {', '.join(pending)}")
                    break
                time.sleep(1)
        finally:
            self.stop.set()
            injector.join(timeout=200)
            if self.operator and self.operator.poll() is None:
                self.operator.terminate()
                self.operator.wait()
            for name, job in self.jobs.items():
                if job["running"] is None:
                    self.part.stalls.waited(job["created"], time.monotonic())
            self.part.notes.append(f"the operator exited by itself {self.operator_exits} times "
                                   f"(restarted as a Deployment would); its log: "
                                   f"{self.operator_log.name}")
            self.down()
        self.part.notes.append("checkpoints are not written here (kwok pods do not train)")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--only", choices=["local", "cluster"])
    parser.add_argument("--taas", required=True)
    parser.add_argument("--operator", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--crd", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--checkpoint-steps", type=int, default=500)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="more environment for every local replica (taas run --env)")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--grace", type=float, default=600,
                        help="seconds after the deadline the last jobs may take to finish")
    parser.add_argument("--preempt-share", type=float, default=0.25,
                        help="the share of local faults that preempt the whole job (SIGTERM to "
                        "taas run, then run it again) instead of SIGKILLing a replica")
    parser.add_argument("--job-every", type=float, default=15)
    parser.add_argument("--job-seconds", type=float, default=20)
    args = parser.parse_args()
    if not 0 < args.minutes <= 24 * 60:
        parser.error(f"--minutes must be in (0, 1440], got {args.minutes}")
    args.kill_every = (10, 30)
    args.cluster_fault_every = (20, 40)
    args.log_dir = tempfile.mkdtemp(prefix="taas-faults-logs-")
    log(f"seed {args.seed}; {args.minutes} minutes; launcher logs in {args.log_dir}")

    deadline = time.monotonic() + args.minutes * 60
    parts = []
    threads = []
    if args.only in (None, "local"):
        parts.append(LocalRun(args, deadline))
    if args.only in (None, "cluster"):
        parts.append(Cluster(args, deadline))
    errors = []
    for p in parts:
        def body(p=p):
            try:
                p.run()
            except Exception as e:
                errors.append(f"{p.part.name}: {e}")
        threads.append(threading.Thread(target=body))
        threads[-1].start()
    for t in threads:
        t.join()

    print("\n== fault run results", flush=True)
    ok = not errors
    for p in parts:
        for line in p.part.report():
            print(line)
        part = p.part
        ok = ok and part.jobs_succeeded == part.jobs_started and not part.duplicates \
            and not part.checkpoints_lost and part.stalls.longest_faults <= 1 \
            and part.stalls.without_fault < 60
    total = [p.part for p in parts]
    print(f"total: jobs succeeded: {sum(p.jobs_succeeded for p in total)}/"
          f"{sum(p.jobs_started for p in total)}; duplicate pods seen: "
          f"{sum(len(p.duplicates) for p in total)}; checkpoints lost: "
          f"{sum(len(p.checkpoints_lost) for p in total)}; longest stall: "
          f"{max((p.stalls.longest for p in total), default=0):.1f} s")
    for e in errors:
        print(f"error: {e}")
    print("target met" if ok else "target NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
