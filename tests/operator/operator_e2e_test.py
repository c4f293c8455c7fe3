#!/usr/bin/env python3
"""Integration tests of taas-operator against a real control plane (scripts/cluster/taas-cluster).

Each run starts its own uniquely named instance, applies the TFJob CRD, runs the operator
binary, and checks one group of scenarios (argument --group). Every scenario uses its own
namespace. The instance and the operators are torn down even on failure; on failure the
operator's log, the pods and the events are printed.

Usage: operator_e2e_test.py --operator BIN --crd FILE --cluster taas-cluster --group NAME
"""

import argparse
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

import slow_api_proxy  # beside this file

TIMEOUT = 120  # seconds for each wait; a loaded 2-core machine is slow


class TestFailure(Exception):
    pass


def log(message):
    print(f"== {message}", flush=True)


class Env:
    def __init__(self, args):
        self.args = args
        self.name = f"op-{os.getpid()}-{random.randint(0, 99999)}"
        self.tmp = tempfile.mkdtemp(prefix="taas-operator-e2e-")
        self.env = dict(os.environ)
        self.operators = []
        self.operator_flags = []  # the group's extra flags, for every operator it starts

    # ---- cluster ----
    def up(self):
        log(f"starting control plane {self.name}")
        # --owner-pid: the instance goes down by itself if ctest kills this test on a timeout.
        subprocess.run([self.args.cluster, "up", "--name", self.name, "--nodes", "2",
                        "--owner-pid", str(os.getpid())],
                       check=True, stdout=sys.stdout, stderr=sys.stderr)
        out = subprocess.run([self.args.cluster, "env", "--name", self.name], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"export (\w+)=(.*)$", line.strip())
            if not m:
                continue
            value = m.group(2).strip("'\"")
            value = value.replace("$PATH", self.env.get("PATH", ""))
            self.env[m.group(1)] = value
        self.kubeconfig = self.env["KUBECONFIG"]

    def down(self):
        subprocess.run([self.args.cluster, "down", "--name", self.name])

    # ---- kubectl ----
    def kubectl(self, *args, input=None, check=True):
        p = subprocess.run(["kubectl", *args], env=self.env, input=input, capture_output=True,
                           text=True)
        if check and p.returncode != 0:
            raise TestFailure(f"kubectl {' '.join(args)} failed: {p.stderr.strip()}")
        return p

    def get(self, *args):
        p = self.kubectl("get", *args, "-o", "json", check=False)
        if p.returncode != 0:
            return None
        return json.loads(p.stdout)

    def apply(self, manifest, check=True):
        return self.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=check)

    def wait_established(self, crd):
        """Until the CRD serves. Not `kubectl wait --for=condition=established`: right after the
        apply, before the API server has written any condition, that fails at once (".status.
        conditions accessor error: <nil>"), as it did once here."""
        wait_for(f"{crd} established", lambda: any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (self.get(crd) or {}).get("status", {}).get("conditions", [])), 120)

    def namespace(self, ns):
        self.kubectl("create", "namespace", ns)
        # Pods need the namespace's default service account (made by the controller manager).
        wait_for(f"service account in {ns}", lambda: self.get("-n", ns, "serviceaccount", "default"))

    def finish_pod(self, ns, pod, code, message_file=None):
        """The pod's end as a kubelet reports it; `message_file`'s content becomes its container's
        termination message (the file the trainer wrote at TAAS_TERMINATION_MESSAGE_PATH)."""
        extra = ["--message-file", message_file] if message_file else []
        self.cluster_pod_command("finish-pod", ns, pod, code, *extra)

    def restart_container(self, ns, pod, code):
        """The kubelet's in-place restart (restartPolicy Always/OnFailure), as kwok has none."""
        self.cluster_pod_command("restart-container", ns, pod, code)

    def cluster_pod_command(self, command, ns, pod, code, *extra):
        subprocess.run([self.args.cluster, command, "--name", self.name, "--timeout", "120",
                        *extra, ns, pod, str(code)], check=True, env=self.env)

    def cluster_node_command(self, command, node):
        """`taas-cluster node-down NODE` (what a dead kubelet leaves) or `node-up NODE`."""
        subprocess.run([self.args.cluster, command, "--name", self.name, node], check=True,
                       env=self.env)

    # ---- operator ----
    def start_operator(self, *extra, identity=None, kubeconfig=None):
        index = len(self.operators)
        port_file = os.path.join(self.tmp, f"port-{index}")
        log_path = os.path.join(self.tmp, f"operator-{index}.log")
        cmd = [self.args.operator, "--kubeconfig", kubeconfig or self.kubeconfig,
               "--health-port", "0", "--health-address", "127.0.0.1", "--port-file", port_file,
               "--workers", "4",
               "--lease-duration-seconds", "4", "--lease-namespace", "default",
               "--stuck-after-seconds", "8", *self.operator_flags, *extra]
        if identity:
            cmd += ["--identity", identity]
        out = open(log_path, "w")
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        op = {"proc": proc, "port_file": port_file, "log": log_path, "out": out}
        self.operators.append(op)
        wait_for("operator health port", lambda: os.path.exists(port_file) or proc.poll() is not None)
        if proc.poll() is not None:
            raise TestFailure(f"operator exited with {proc.returncode}; log:\n" + open(log_path).read())
        op["port"] = int(open(port_file).read())
        return op

    def metrics(self, op):
        with urllib.request.urlopen(f"http://127.0.0.1:{op['port']}/metrics", timeout=10) as r:
            text = r.read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                values[key] = float(value)
        return values

    def ready(self, op):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{op['port']}/readyz", timeout=5) as r:
                return r.status == 200
        except Exception:
            return False

    def stop_operator(self, op, sig=signal.SIGTERM):
        if op["proc"].poll() is None:
            op["proc"].send_signal(sig)
            try:
                op["proc"].wait(timeout=60)
            except subprocess.TimeoutExpired:
                op["proc"].kill()
                op["proc"].wait()
        op["out"].close()

    def cleanup(self, failed):
        for op in self.operators:
            if op["proc"].poll() is None:
                op["proc"].kill()
                op["proc"].wait()
        if failed:
            try:
                print("--- tfjobs, pods and events at failure:", flush=True)
                print(self.kubectl("get", "tfjobs,pods,services", "-A", "-o", "wide", check=False).stdout)
                print(self.kubectl("get", "events", "-A", check=False).stdout[-20000:])
            except Exception:
                pass
            for i, op in enumerate(self.operators):
                print(f"--- operator {i} log (tail):")
                print(open(op["log"]).read()[-30000:], flush=True)
        self.down()
        shutil.rmtree(self.tmp, ignore_errors=True)  # what a failure needs is printed above


def wait_for(what, predicate, timeout=TIMEOUT):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except TestFailure:
            raise
        except Exception as e:  # transient: keep polling
            last = e
        time.sleep(0.5)
    raise TestFailure(f"timed out after {timeout}s waiting for: {what} (last: {last!r})")


def check(condition, message):
    if not condition:
        raise TestFailure(message)


# ---------------------------------------------------------------------------------------------
# manifests and helpers

def template(extra_ports=()):
    ports = [{"name": "tfjob-port", "containerPort": 2222}] + list(extra_ports)
    return {"spec": {"containers": [{"name": "tensorflow", "image": "taas/trainer:test",
                                     "command": ["/opt/taas/bin/fashion-mnist-cnn"],
                                     "ports": ports}]}}


def tfjob(name, ns, replicas, run_policy=None, restart="Never"):
    specs = {}
    for rtype, n in replicas.items():
        policy = restart if rtype == "Worker" else "Never"
        specs[rtype] = {"replicas": n, "restartPolicy": policy, "template": template()}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"tfReplicaSpecs": specs}}
    if run_policy:
        job["spec"]["runPolicy"] = run_policy
    return job


def job_pods(env, ns, name):
    pods = env.get("-n", ns, "pods", "-l", f"training.kubeflow.org/job-name={name}")
    return pods["items"] if pods else []


def live_pods(env, ns, name):
    return [p for p in job_pods(env, ns, name) if not p["metadata"].get("deletionTimestamp")]


def pod(env, ns, name):
    return env.get("-n", ns, "pod", name)


def condition(job, ctype):
    for c in (job or {}).get("status", {}).get("conditions", []):
        if c["type"] == ctype:
            return c
    return None


def has_condition(env, ns, name, ctype, status="True"):
    job = env.get("-n", ns, "tfjob", name)
    c = condition(job, ctype)
    return c is not None and c["status"] == status


def pods_running(env, ns, name, n):
    pods = live_pods(env, ns, name)
    return len(pods) == n and all(p["status"].get("phase") == "Running" for p in pods)


def events(env, ns, reason=None):
    items = env.get("-n", ns, "events")["items"]
    return [e for e in items if reason is None or e["reason"] == reason]


def event_count(env, ns, reason, name_prefix=""):
    return sum(e.get("count", 1) for e in events(env, ns, reason)
               if e["message"].split(": ")[-1].startswith(name_prefix))


def env_var(pod_obj, var):
    for c in pod_obj["spec"]["containers"]:
        if c["name"] == "tensorflow":
            for e in c.get("env", []):
                if e["name"] == var:
                    return e["value"]
    return None


def job_status(env, ns, name):
    return (env.get("-n", ns, "tfjob", name) or {}).get("status", {})


def replica_restarts(env, ns, name, rtype):
    return job_status(env, ns, name).get("replicaStatuses", {}).get(rtype, {}).get("restarts", 0)


# ---------------------------------------------------------------------------------------------
# scenarios

def scenario_lifecycle(env):
    ns = "lifecycle"
    env.namespace(ns)
    job = tfjob("mnist", ns, {"PS": 1, "Worker": 2}, run_policy={"cleanPodPolicy": "All"},
                restart="ExitCode")
    env.apply(job)
    wait_for("3 pods", lambda: len(job_pods(env, ns, "mnist")) == 3)
    wait_for("3 services", lambda: len(env.get("-n", ns, "services")["items"]) == 3)
    tfj = env.get("-n", ns, "tfjob", "mnist")
    uid = tfj["metadata"]["uid"]
    expected_cluster = {"ps": ["mnist-ps-0.lifecycle.svc:2222"],
                        "worker": ["mnist-worker-0.lifecycle.svc:2222",
                                   "mnist-worker-1.lifecycle.svc:2222"]}
    for rtype, index in (("ps", 0), ("worker", 0), ("worker", 1)):
        name = f"mnist-{rtype}-{index}"
        p = pod(env, ns, name)
        labels = p["metadata"]["labels"]
        check(labels["training.kubeflow.org/job-name"] == "mnist", f"{name}: job-name label")
        check(labels["training.kubeflow.org/replica-type"] == rtype, f"{name}: replica-type label")
        check(labels["training.kubeflow.org/replica-index"] == str(index), f"{name}: index label")
        check(labels["training.kubeflow.org/operator-name"] == "tfjob-controller", f"{name}: operator")
        check((labels.get("training.kubeflow.org/job-role") == "master") == (name == "mnist-worker-0"),
              f"{name}: job-role label")
        owner = p["metadata"]["ownerReferences"][0]
        check(owner["uid"] == uid and owner["kind"] == "TFJob" and owner["controller"]
              and owner["blockOwnerDeletion"], f"{name}: owner reference {owner}")
        expected = json.dumps({"cluster": expected_cluster, "task": {"type": rtype, "index": index},
                               "environment": "cloud"}, separators=(",", ":"))
        check(env_var(p, "TF_CONFIG") == expected,
              f"{name}: TF_CONFIG {env_var(p, 'TF_CONFIG')} != {expected}")
        check(p["spec"]["restartPolicy"] == "Never", f"{name}: restartPolicy")
        svc = env.get("-n", ns, "service", name)
        check(svc["spec"]["clusterIP"] == "None", f"{name}: service is not headless")
        check({"name": "tfjob-port", "port": 2222} in
              [{"name": x.get("name"), "port": x["port"]} for x in svc["spec"]["ports"]],
              f"{name}: service port {svc['spec']['ports']}")
        # Kubeflow's service selector and labels: no job-role, even on worker 0 (the chief here).
        expected_selector = {k: labels[k] for k in labels if k != "training.kubeflow.org/job-role"}
        check(svc["spec"]["selector"] == expected_selector,
              f"{name}: service selector {svc['spec']['selector']} != {expected_selector}")
        check(svc["metadata"]["labels"] == expected_selector, f"{name}: service labels")
        check(svc["metadata"]["ownerReferences"][0]["uid"] == uid, f"{name}: service owner")
    log("pods and services as expected; waiting for Running")
    wait_for("pods Running", lambda: pods_running(env, ns, "mnist", 3))
    wait_for("job Running", lambda: has_condition(env, ns, "mnist", "Running"))
    tfj = env.get("-n", ns, "tfjob", "mnist")
    check(tfj["status"]["replicaStatuses"]["Worker"]["active"] == 2, "2 active workers")
    check("startTime" in tfj["status"], "startTime set")
    check(condition(tfj, "Created")["reason"] == "TFJobCreated", "Created reason")

    log("worker-0 succeeds -> job Succeeded, cleanPodPolicy All deletes every pod")
    env.finish_pod(ns, "mnist-worker-0", 0)
    wait_for("job Succeeded", lambda: has_condition(env, ns, "mnist", "Succeeded"))
    tfj = env.get("-n", ns, "tfjob", "mnist")
    check(condition(tfj, "Succeeded")["reason"] == "TFJobSucceeded", "Succeeded reason")
    check(condition(tfj, "Running")["status"] == "False", "Running is False once finished")
    check("completionTime" in tfj["status"], "completionTime set")
    wait_for("pods cleaned up", lambda: len(job_pods(env, ns, "mnist")) == 0)
    check(event_count(env, ns, "SuccessfulCreatePod") == 3,
          f"exactly 3 pod creations, got {event_count(env, ns, 'SuccessfulCreatePod')}")
    check(event_count(env, ns, "SuccessfulCreateService") == 3,
          f"exactly 3 service creations, got {event_count(env, ns, 'SuccessfulCreateService')}")
    check(events(env, ns, "TFJobCreated") and events(env, ns, "TFJobRunning"),
          "an Event per condition change (Created, Running)")
    wait_for("Succeeded event", lambda: events(env, ns, "TFJobSucceeded"))
    wait_for("delete events", lambda: event_count(env, ns, "SuccessfulDeletePod") >= 3)


def scenario_chief(env):
    """Chief + PS + Worker + Evaluator: TF_CONFIG lists every type; after the chief's success the
    job waits for its evaluator to score the final checkpoint (Running while it runs, with the
    default 2-minute grace), the evaluator's exit finishes it, and cleanPodPolicy Running deletes
    the replicas still running, keeping the finished pods."""
    ns = "chief"
    env.namespace(ns)
    env.apply(tfjob("cj", ns, {"Chief": 1, "PS": 1, "Worker": 1, "Evaluator": 1},
                    run_policy={"cleanPodPolicy": "Running"}))
    wait_for("pods Running", lambda: pods_running(env, ns, "cj", 4))
    chief = pod(env, ns, "cj-chief-0")
    expected = json.dumps({"cluster": {"chief": ["cj-chief-0.chief.svc:2222"],
                                       "evaluator": ["cj-evaluator-0.chief.svc:2222"],
                                       "ps": ["cj-ps-0.chief.svc:2222"],
                                       "worker": ["cj-worker-0.chief.svc:2222"]},
                           "task": {"type": "chief", "index": 0}, "environment": "cloud"},
                          separators=(",", ":"))
    check(env_var(chief, "TF_CONFIG") == expected, f"chief TF_CONFIG {env_var(chief, 'TF_CONFIG')}")
    check(chief["metadata"]["labels"].get("training.kubeflow.org/job-role") == "master",
          "job-role=master on the chief")
    check("training.kubeflow.org/job-role" not in pod(env, ns, "cj-worker-0")["metadata"]["labels"],
          "no job-role on worker 0 when there is a chief")
    env.finish_pod(ns, "cj-worker-0", 0)
    time.sleep(2)
    check(not has_condition(env, ns, "cj", "Succeeded"), "a worker's success does not finish a job with a chief")
    env.finish_pod(ns, "cj-chief-0", 0)
    wait_for("the chief's success counted",
             lambda: job_status(env, ns, "cj")["replicaStatuses"]["Chief"].get("succeeded") == 1)
    time.sleep(3)  # a reconcile or two: the chief's success alone must not finish the job
    check(not has_condition(env, ns, "cj", "Succeeded") and has_condition(env, ns, "cj", "Running"),
          f"Running while the evaluator scores the final checkpoint: {job_status(env, ns, 'cj')}")
    check(pod(env, ns, "cj-evaluator-0")["status"]["phase"] == "Running",
          "the evaluator is left to finish, not deleted")
    env.finish_pod(ns, "cj-evaluator-0", 0)
    wait_for("job Succeeded", lambda: has_condition(env, ns, "cj", "Succeeded"))
    wait_for("running replicas cleaned up",
             lambda: sorted(p["metadata"]["name"] for p in live_pods(env, ns, "cj"))
             == ["cj-chief-0", "cj-evaluator-0", "cj-worker-0"])


def scenario_exit_codes(env):
    ns = "exitcode"
    env.namespace(ns)
    env.apply(tfjob("ec", ns, {"PS": 1, "Worker": 2}, restart="ExitCode"))
    wait_for("pods Running", lambda: pods_running(env, ns, "ec", 3))
    old_uid = pod(env, ns, "ec-worker-1")["metadata"]["uid"]
    log("exit 137 (retryable) -> the pod is recreated and the job is Restarting")
    env.finish_pod(ns, "ec-worker-1", 137)

    def recreated():
        p = pod(env, ns, "ec-worker-1")
        return p and p["metadata"]["uid"] != old_uid and not p["metadata"].get("deletionTimestamp")
    wait_for("worker-1 recreated", recreated)
    tfj = env.get("-n", ns, "tfjob", "ec")
    check(not has_condition(env, ns, "ec", "Failed"), "job must not fail on a retryable code")
    check(tfj["status"]["replicaStatuses"]["Worker"].get("restarts", 0) >= 1,
          f"restarts counted: {tfj['status']['replicaStatuses']}")
    wait_for("Restarting event", lambda: events(env, ns, "TFJobRestarting"))
    wait_for("RestartingReplica event naming the pod and code",
             lambda: any("ec-worker-1" in e["message"] and "137" in e["message"]
                         for e in events(env, ns, "RestartingReplica")))
    wait_for("pods Running again", lambda: pods_running(env, ns, "ec", 3))
    log("exit 1 (permanent) -> job Failed")
    env.finish_pod(ns, "ec-worker-1", 1)
    wait_for("job Failed", lambda: has_condition(env, ns, "ec", "Failed"))
    tfj = env.get("-n", ns, "tfjob", "ec")
    check(condition(tfj, "Failed")["reason"] == "TFJobFailed", "Failed reason")
    msg = condition(tfj, "Failed")["message"]
    check(msg == 'job "ec" is failing because "Worker" replica(s) failed.',
          f"Kubeflow's message for a permanent ExitCode failure: {msg}")
    p = pod(env, ns, "ec-worker-1")
    check(p is not None and p["status"]["phase"] == "Failed", "the failed pod is kept (cleanPodPolicy None)")
    time.sleep(3)
    check(has_condition(env, ns, "ec", "Failed"), "Failed is final")
    check(len(live_pods(env, ns, "ec")) == 3, "nothing recreated after failure")


def scenario_allreduce(env):
    """Workers and an evaluator, no PS (all-reduce training): TF_CONFIG lists no ps; a lost worker
    (137) and the peer that noticed (150, the runtime's transient code) are both recreated under
    ExitCode, as Kubeflow does, and worker 0's success finishes the job once the evaluator has
    exited, as the runtime's does after scoring the final checkpoint."""
    ns = "allreduce"
    env.namespace(ns)
    env.apply(tfjob("ar", ns, {"Worker": 2, "Evaluator": 1}, restart="ExitCode"))
    wait_for("pods Running", lambda: pods_running(env, ns, "ar", 3))
    tf_config = json.loads(env_var(pod(env, ns, "ar-worker-1"), "TF_CONFIG"))
    check("ps" not in tf_config["cluster"], f"no ps in TF_CONFIG: {tf_config}")
    check(tf_config["cluster"]["worker"] == ["ar-worker-0.allreduce.svc:2222",
                                             "ar-worker-1.allreduce.svc:2222"],
          f"workers in TF_CONFIG: {tf_config}")
    old = {n: pod(env, ns, n)["metadata"]["uid"] for n in ("ar-worker-0", "ar-worker-1")}
    env.finish_pod(ns, "ar-worker-1", 137)
    env.finish_pod(ns, "ar-worker-0", 150)

    def recreated():
        pods = {n: pod(env, ns, n) for n in old}
        return all(p and p["metadata"]["uid"] != old[n] and not p["metadata"].get("deletionTimestamp")
                   for n, p in pods.items())
    wait_for("both workers recreated", recreated)
    check(not has_condition(env, ns, "ar", "Failed"), "a lost worker is retried, not a failure")
    wait_for("pods Running again", lambda: pods_running(env, ns, "ar", 3))
    check(replica_restarts(env, ns, "ar", "Worker") >= 2, "both restarts counted")
    env.finish_pod(ns, "ar-worker-1", 0)
    env.finish_pod(ns, "ar-worker-0", 0)
    env.finish_pod(ns, "ar-evaluator-0", 0)  # kwok's evaluator never exits by itself
    wait_for("job Succeeded", lambda: has_condition(env, ns, "ar", "Succeeded"))


def scenario_never(env):
    """restartPolicy Never: any failure, even a retryable code, fails the job; nothing restarts."""
    ns = "never"
    env.namespace(ns)
    env.apply(tfjob("nv", ns, {"PS": 1, "Worker": 2}, restart="Never"))
    wait_for("pods Running", lambda: pods_running(env, ns, "nv", 3))
    env.finish_pod(ns, "nv-worker-1", 137)
    wait_for("job Failed", lambda: has_condition(env, ns, "nv", "Failed"))
    status = job_status(env, ns, "nv")
    check(status["replicaStatuses"]["Worker"].get("failed") == 1, f"1 failed worker: {status}")
    check(replica_restarts(env, ns, "nv", "Worker") == 0, "no restart under Never")
    check(event_count(env, ns, "SuccessfulCreatePod") == 3, "nothing recreated")


def scenario_backoff(env):
    ns = "backoff"
    env.namespace(ns)
    env.apply(tfjob("bo", ns, {"Worker": 2}, run_policy={"backoffLimit": 1}, restart="ExitCode"))
    wait_for("pods Running", lambda: pods_running(env, ns, "bo", 2))
    uid = pod(env, ns, "bo-worker-0")["metadata"]["uid"]
    env.finish_pod(ns, "bo-worker-0", 137)
    wait_for("worker-0 recreated and Running",
             lambda: (p := pod(env, ns, "bo-worker-0")) and p["metadata"]["uid"] != uid
             and p["status"].get("phase") == "Running")
    check(not has_condition(env, ns, "bo", "Failed"), "one restart is within backoffLimit 1")
    log("a second retryable failure exceeds backoffLimit 1 -> Failed")
    env.finish_pod(ns, "bo-worker-0", 137)
    wait_for("job Failed (backoffLimit)", lambda: has_condition(env, ns, "bo", "Failed"))
    msg = condition(env.get("-n", ns, "tfjob", "bo"), "Failed")["message"]
    check(msg == "Job bo has failed because it has reached the specified backoff limit",
          f"Kubeflow's backoff message: {msg}")
    log("as Kubeflow, past backoffLimit every pod and service goes, though cleanPodPolicy is None")
    wait_for("pods released", lambda: job_pods(env, ns, "bo") == [])
    wait_for("services released", lambda: env.get("-n", ns, "services")["items"] == [])
    time.sleep(2)
    check(job_pods(env, ns, "bo") == [], "nothing recreated after the failure")


def scenario_deleted_pod(env):
    ns = "handdelete"
    env.namespace(ns)
    env.apply(tfjob("hd", ns, {"PS": 1, "Worker": 1}))
    wait_for("pods Running", lambda: pods_running(env, ns, "hd", 2))
    uid = pod(env, ns, "hd-worker-0")["metadata"]["uid"]
    env.kubectl("-n", ns, "delete", "pod", "hd-worker-0", "--wait=false")
    wait_for("worker-0 recreated",
             lambda: (p := pod(env, ns, "hd-worker-0")) and p["metadata"]["uid"] != uid)
    wait_for("pods Running", lambda: pods_running(env, ns, "hd", 2))
    env.kubectl("-n", ns, "delete", "service", "hd-ps-0", "--wait=false")
    wait_for("service recreated", lambda: env.get("-n", ns, "service", "hd-ps-0"))


def scenario_invalid(env):
    ns = "invalid"
    env.namespace(ns)
    cases = [
        ("unknown replica type", {"Foo": 1}, None, 'unknown replica type "Foo"'),
        ("negative replicas", {"Worker": -1}, None, "spec.tfReplicaSpecs.Worker.replicas"),
        ("chief and master", {"Chief": 1, "Master": 1}, None, "Chief"),
        ("two chiefs", {"Chief": 2}, None, "spec.tfReplicaSpecs.Chief.replicas"),
        ("no tensorflow container", {"Worker": 1}, "rename", "tensorflow"),
        ("bad restartPolicy", {"Worker": 1}, "policy", "spec.tfReplicaSpecs.Worker.restartPolicy"),
        ("bad cleanPodPolicy", {"Worker": 1}, "clean", "spec.runPolicy.cleanPodPolicy"),
        ("no image", {"Worker": 1}, "noimage",
         "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image: Required value"),
        ("unsupported managedBy", {"Worker": 1}, "manager",
         'spec.runPolicy.managedBy: Unsupported value: "example.com/other"'),
    ]
    for i, (what, replicas, mutate, field) in enumerate(cases):
        job = tfjob(f"bad-{i}", ns, replicas)
        if mutate == "rename":
            job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "main"
        if mutate == "policy":
            job["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
        if mutate == "clean":
            job["spec"]["runPolicy"] = {"cleanPodPolicy": "Sometimes"}
        if mutate == "noimage":
            del job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
        if mutate == "manager":
            job["spec"]["runPolicy"] = {"managedBy": "example.com/other"}
        p = env.apply(job, check=False)
        check(p.returncode != 0, f"{what}: the API server accepted an invalid TFJob")
        check(field in p.stderr, f"{what}: the error does not name {field}: {p.stderr.strip()}")
        log(f"rejected ({what}): {p.stderr.strip()[:200]}")
    check(env.get("-n", ns, "tfjobs")["items"] == [], "no TFJob was stored")
    check(env.get("-n", ns, "pods")["items"] == [], "no pod was created")

    log("a job the schema accepts but the rules reject (service names too long) fails, naming it")
    name = "n" * 60  # a valid 60-character name; "-worker-0" makes its service name 69
    env.apply(tfjob(name, ns, {"Worker": 2}))
    wait_for("Failed condition", lambda: has_condition(env, ns, name, "Failed"))
    msg = condition(env.get("-n", ns, "tfjob", name), "Failed")["message"]
    check("metadata.name is too long" in msg, f"message names the field: {msg}")
    wait_for("InvalidSpec event", lambda: events(env, ns, "InvalidSpec"))
    check(env.get("-n", ns, "pods")["items"] == [], "no pod was created for the invalid job")


def scenario_managed_by(env):
    """runPolicy.managedBy (Kubeflow 1.9): a job Kueue's MultiKueue manages gets no pod, service
    or status from the operator; one managed by the training operator runs; the field cannot be
    set, changed or removed after creation."""
    ns = "managedby"
    env.namespace(ns)
    env.apply(tfjob("mk", ns, {"PS": 1, "Worker": 1},
                    run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    env.apply(tfjob("to", ns, {"PS": 1, "Worker": 1},
                    run_policy={"managedBy": "kubeflow.org/training-operator"}))
    wait_for("the training operator's job runs", lambda: pods_running(env, ns, "to", 2))
    time.sleep(2)  # the operator saw both jobs at once; give it time to get mk wrong
    check(job_pods(env, ns, "mk") == [], "no pod for a job MultiKueue manages")
    check([s["metadata"]["name"] for s in env.get("-n", ns, "services")["items"]
           if s["metadata"]["name"].startswith("mk-")] == [], "no service for it")
    check(job_status(env, ns, "mk") == {}, f"no status written: {job_status(env, ns, 'mk')}")
    for job, patch in (("mk", '{"spec":{"runPolicy":{"managedBy":"kubeflow.org/training-operator"}}}'),
                       ("mk", '{"spec":{"runPolicy":{"managedBy":null}}}'),
                       ("to", '{"spec":{"runPolicy":{"managedBy":"kueue.x-k8s.io/multikueue"}}}')):
        p = env.kubectl("-n", ns, "patch", "tfjob", job, "--type=merge", "-p", patch, check=False)
        check(p.returncode != 0 and "managedBy is immutable" in p.stderr,
              f"{job} {patch}: not refused as immutable: {p.stderr.strip()}")
    env.apply(tfjob("plain", ns, {"Worker": 1}))
    p = env.kubectl("-n", ns, "patch", "tfjob", "plain", "--type=merge", "-p",
                    '{"spec":{"runPolicy":{"managedBy":"kueue.x-k8s.io/multikueue"}}}', check=False)
    check(p.returncode != 0 and "managedBy is immutable" in p.stderr,
          f"setting managedBy later is refused: {p.stderr.strip()}")


def scenario_suspend(env):
    ns = "suspend"
    env.namespace(ns)
    env.apply(tfjob("sj", ns, {"PS": 1, "Worker": 1}, run_policy={"suspend": True}))
    wait_for("Suspended condition", lambda: has_condition(env, ns, "sj", "Suspended"))
    time.sleep(2)
    check(job_pods(env, ns, "sj") == [], "a suspended job has no pods")
    log("resume -> pods created")
    env.kubectl("-n", ns, "patch", "tfjob", "sj", "--type=merge", "-p",
                '{"spec":{"runPolicy":{"suspend":false}}}')
    wait_for("pods Running after resume", lambda: pods_running(env, ns, "sj", 2))
    wait_for("Suspended False", lambda: has_condition(env, ns, "sj", "Suspended", "False"))
    wait_for("job Running", lambda: has_condition(env, ns, "sj", "Running"))
    log("suspend a running job -> pods deleted")
    env.kubectl("-n", ns, "patch", "tfjob", "sj", "--type=merge", "-p",
                '{"spec":{"runPolicy":{"suspend":true}}}')
    wait_for("pods deleted on suspend", lambda: len(job_pods(env, ns, "sj")) == 0)
    wait_for("Suspended again", lambda: has_condition(env, ns, "sj", "Suspended"))


def scenario_ttl_and_deadline(env):
    ns = "ttl"
    env.namespace(ns)
    env.apply(tfjob("single", ns, {"Worker": 1}, run_policy={"ttlSecondsAfterFinished": 3}))
    wait_for("pod Running", lambda: pods_running(env, ns, "single", 1))
    check(env_var(pod(env, ns, "single-worker-0"), "TF_CONFIG") is None,
          "a single-replica job gets no TF_CONFIG")
    env.finish_pod(ns, "single-worker-0", 0)
    wait_for("job Succeeded", lambda: has_condition(env, ns, "single", "Succeeded"))
    finished = time.time()
    wait_for("job deleted after its TTL", lambda: env.get("-n", ns, "tfjob", "single") is None)
    check(time.time() - finished >= 1.5, "deleted before the TTL expired")

    log("activeDeadlineSeconds fires with no other event")
    env.apply(tfjob("deadline", ns, {"Worker": 1}, run_policy={"activeDeadlineSeconds": 8}))
    wait_for("pod Running", lambda: pods_running(env, ns, "deadline", 1))
    wait_for("job Failed at its deadline", lambda: has_condition(env, ns, "deadline", "Failed"), 60)
    msg = condition(env.get("-n", ns, "tfjob", "deadline"), "Failed")["message"]
    check(msg == "Job deadline has failed because it was active longer than specified deadline",
          f"Kubeflow's deadline message: {msg}")
    log("as Kubeflow, past its deadline the running pod and its service go (cleanPodPolicy None)")
    wait_for("pod released", lambda: job_pods(env, ns, "deadline") == [])
    wait_for("service released", lambda: env.get("-n", ns, "service", "deadline-worker-0") is None)


def scenario_stuck(env):
    """A replica Pending, or in CrashLoopBackOff, past --stuck-after-seconds surfaces as a Stuck
    condition with the pod's reason."""
    ns = "stuck"
    env.namespace(ns)
    job = tfjob("huge", ns, {"Worker": 2})
    job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": 100}}
    env.apply(job)
    env.apply(tfjob("crash", ns, {"Worker": 1}, restart="OnFailure"))
    wait_for("Stuck condition", lambda: has_condition(env, ns, "huge", "Stuck"), 90)
    c = condition(env.get("-n", ns, "tfjob", "huge"), "Stuck")
    check(c["reason"] == "Unschedulable", f"Stuck reason is the pod's: {c}")
    log(f"stuck: {c['message'][:160]}")
    check(not has_condition(env, ns, "huge", "Running"), "a stuck job is not Running")

    log("a container in CrashLoopBackOff (its status written as a kubelet would)")
    wait_for("pod Running", lambda: pods_running(env, ns, "crash", 1))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"status": {"containerStatuses": [{
        "name": "tensorflow", "image": "taas/trainer:test", "ready": False, "started": False,
        "restartCount": 3,
        "state": {"waiting": {"reason": "CrashLoopBackOff",
                              "message": "back-off 40s restarting failed container"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now,
                                     "finishedAt": now}}}]}}
    env.kubectl("-n", ns, "patch", "pod", "crash-worker-0", "--subresource=status",
                "--type=merge", "-p", json.dumps(status))
    wait_for("Stuck condition (CrashLoopBackOff)", lambda: has_condition(env, ns, "crash", "Stuck"),
             90)
    c = condition(env.get("-n", ns, "tfjob", "crash"), "Stuck")
    check(c["reason"] == "CrashLoopBackOff" and "back-off" in c["message"],
          f"Stuck reason and message are the container's: {c}")
    check(replica_restarts(env, ns, "crash", "Worker") == 3, "its 3 in-place restarts counted")


def scenario_no_duplicates(env, op):
    """An operator killed mid-reconcile, and a burst of events, never create a pod twice."""
    ns = "burst"
    workers = 40
    total = workers + 1
    env.namespace(ns)
    # A pod quota stops the first operator part-way through creating the job's pods, as a crash
    # in the middle of a reconcile would; then it is killed and the quota lifted.
    env.apply({"apiVersion": "v1", "kind": "ResourceQuota",
               "metadata": {"name": "pods", "namespace": ns}, "spec": {"hard": {"pods": "10"}}})
    wait_for("quota status", lambda: env.get("-n", ns, "resourcequota", "pods")
             .get("status", {}).get("hard"))
    env.apply(tfjob("big", ns, {"PS": 1, "Worker": workers}))
    wait_for("10 pods created", lambda: len(job_pods(env, ns, "big")) == 10)
    wait_for("creation failures", lambda: events(env, ns, "FailedCreatePod"))
    check(env.metrics(op)["taas_operator_api_errors_total"] > 0,
          "the refused creations count as API errors in /metrics")
    env.stop_operator(op, signal.SIGKILL)
    time.sleep(1)  # requests the API server had already received complete
    env.kubectl("-n", ns, "delete", "resourcequota", "pods")
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in job_pods(env, ns, "big")}
    log(f"operator killed with {len(before)} of {total} pods created")
    op2 = env.start_operator()
    # A burst of updates to the job, each an event.
    for i in range(15):
        env.kubectl("-n", ns, "annotate", "tfjob", "big", f"burst={i}", "--overwrite")
    wait_for(f"{total} pods", lambda: len(job_pods(env, ns, "big")) == total)
    wait_for("pods Running", lambda: pods_running(env, ns, "big", total), 240)
    time.sleep(2)
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in job_pods(env, ns, "big")}
    check(len(after) == total, f"exactly {total} pods, got {len(after)}")
    for name, uid in before.items():
        check(after.get(name) == uid, f"{name} was recreated by the new operator")
    created = env.metrics(op2)["taas_operator_pods_created_total"]
    check(created == total - len(before),
          f"the new operator created {created} pods, expected {total - len(before)}")
    check(len(env.get("-n", ns, "services")["items"]) == total, f"exactly {total} services")
    return op2


def scenario_leader_election(env, op):
    ns = "ha"
    env.namespace(ns)
    standby = env.start_operator(identity="standby")
    time.sleep(3)
    m1, m2 = env.metrics(op), env.metrics(standby)
    check(m1["taas_operator_leader"] + m2["taas_operator_leader"] == 1,
          f"exactly one leader: {m1['taas_operator_leader']} {m2['taas_operator_leader']}")
    leader, other = (op, standby) if m1["taas_operator_leader"] == 1 else (standby, op)
    check(env.ready(other), "a standby reports ready (else a 2-replica Deployment never rolls out)")
    log("killing the leader; the standby must take over within the lease time")
    env.stop_operator(leader, signal.SIGKILL)
    killed = time.time()
    wait_for("standby leads", lambda: env.metrics(other)["taas_operator_leader"] == 1, 60)
    log(f"standby took over after {time.time() - killed:.1f}s")
    env.apply(tfjob("after", ns, {"Worker": 2}))
    wait_for("pods created by the new leader", lambda: pods_running(env, ns, "after", 2))
    m = env.metrics(other)
    check(m["taas_operator_reconcile_total"] > 0, "reconciles counted")
    check(m.get('taas_operator_reconcile_duration_seconds_count', 0) > 0, "latency histogram")
    check("taas_operator_workqueue_depth" in m, "queue depth exported")
    check(env.ready(other), "/readyz")


def scenario_slow_api(env, op):
    """A leader whose API server turns slow (a delaying proxy in front of it) stops leading by its
    renew deadline, before its lease can expire; the standby, which talks to the API server
    directly, takes over only after that, and runs the jobs created afterwards."""
    ns = "slowapi"
    env.namespace(ns)
    lease_seconds, renew_deadline = 4, 2  # start_operator's lease; main.cc derives the deadline
    delay = 3.0  # seconds per chunk, beyond the renew deadline: no renewal can complete
    lost_line = "could not renew the lease within the renew deadline"
    host, port = slow_api_proxy.kubeconfig_server(env.kubeconfig)
    proxy = slow_api_proxy.SlowApiProxy(host, port)
    kubeconfig = os.path.join(env.tmp, "through-proxy.kubeconfig")
    try:
        slow_api_proxy.write_proxied_kubeconfig(env.kubeconfig, kubeconfig, proxy.port)
        env.stop_operator(op)  # SIGTERM releases the lease, so A takes it at once
        a = env.start_operator(identity="through-proxy", kubeconfig=kubeconfig)
        wait_for("A (through the proxy) leads",
                 lambda: env.metrics(a)["taas_operator_leader"] == 1, 60)
        b = env.start_operator(identity="direct")
        wait_for("B (direct) ready as a standby", lambda: env.ready(b))

        def gauge(o, name):
            """o's leader gauge and when the read ended; 0 once o has exited (its health server
            goes with it)."""
            if o["proc"].poll() is None:
                try:
                    url = f"http://127.0.0.1:{o['port']}/metrics"
                    with urllib.request.urlopen(url, timeout=2) as r:
                        text = r.read().decode()
                    m = re.search(r"^taas_operator_leader (\S+)$", text, flags=re.M)
                    check(m, f"{name}: no taas_operator_leader in /metrics")
                    return float(m.group(1)), time.time()
                except TestFailure:
                    raise
                except Exception as e:
                    try:  # the read may have raced the exit
                        o["proc"].wait(timeout=1)
                    except subprocess.TimeoutExpired:
                        raise TestFailure(f"{name} is running but its /metrics failed: {e!r}")
            return 0.0, time.time()

        samples = []  # (A's gauge, A read at, B's gauge, B read started at)

        def sample():
            b_started = time.time()
            la, la_at = gauge(a, "A")
            lb, _ = gauge(b, "B")
            samples.append((la, la_at, lb, b_started))
            if la == 1 and lb == 1:
                timeline = "\n".join(f"{t:.2f} A={x:g} B={y:g}" for x, t, y, _ in samples[-50:])
                raise TestFailure(f"two leaders at {la_at:.2f}; last samples:\n{timeline}")
            return la, la_at, lb, b_started

        # The baseline: A leads, B waits.
        end = time.time() + 2
        while time.time() < end:
            la, _, lb, _ = sample()
            check(la == 1 and lb == 0, f"before the slowdown: A={la:g} B={lb:g}, expected 1 and 0")
            time.sleep(0.1)

        log(f"proxy delays every chunk by {delay:g}s (renew deadline {renew_deadline}s, "
            f"lease {lease_seconds}s); sampling both leader gauges every 100 ms")
        proxy.set_delay(delay)
        slowed = time.time()
        a_last_lead = samples[-1][1]
        a_stopped = b_first_lead = lease = None
        while b_first_lead is None or time.time() < b_first_lead + 3:  # a late A would show
            if time.time() > slowed + 30:
                def since(t):
                    return "never" if t is None else f"{t - slowed:.2f}s"
                raise TestFailure(f"30 s after the slowdown: A stopped leading: "
                                  f"{since(a_stopped)}, B led: {since(b_first_lead)} "
                                  f"(after the slowdown)")
            started = time.monotonic()
            la, la_at, lb, b_started = sample()
            if la == 1:
                check(a_stopped is None, "A leads again after it stopped leading")
                a_last_lead = la_at
            elif a_stopped is None:
                a_stopped = la_at
                # Read before B can take it (B waits a whole lease duration after A's last
                # renewal): A's last renewTime, to compare A's stop with when the lease expires.
                lease = env.get("-n", "default", "lease", "taas-operator")
            if lb == 1 and b_first_lead is None:
                b_first_lead = b_started
            time.sleep(max(0.0, 0.1 - (time.monotonic() - started)))

        check(a_stopped is not None and b_first_lead is not None, "A stopped and B leads")
        check(b_first_lead > a_last_lead,
              f"B led (read from {b_first_lead:.2f}) before A's last lead sample "
              f"({a_last_lead:.2f})")
        check(b_first_lead - slowed <= 30, f"B took {b_first_lead - slowed:.1f}s to lead")
        try:
            code = a["proc"].wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise TestFailure("A stopped leading but is still running 30 s later")
        check(code != 0, f"A exited with {code}; a leader that loses its lease exits non-zero")
        with open(a["log"]) as f:
            a_log = f.read()
        check(lost_line in a_log, f"A's log does not say it {lost_line}")
        check("stopped leading; exiting" in a_log, "A's log does not say it exits")

        spec = (lease or {}).get("spec", {})
        renewed = None
        if spec.get("holderIdentity") == "through-proxy":
            try:
                renewed = datetime.datetime.strptime(
                    spec["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                        tzinfo=datetime.timezone.utc).timestamp()
            except (KeyError, TypeError, ValueError) as e:
                raise TestFailure(f"lease renewTime {spec.get('renewTime')!r}: {e}")
            check(a_stopped < renewed + lease_seconds,
                  f"A stopped {a_stopped - renewed:.2f}s after its last renewal, when its lease "
                  f"({lease_seconds}s) had already expired")
        else:
            log(f"the lease read at A's stop was held by {spec.get('holderIdentity')!r}; "
                f"no renewTime bound checked")
        since_renewal = f"{a_stopped - renewed:.2f}s" if renewed else "?"
        log(f"A exited with {code}; A last led {a_last_lead - slowed:.2f}s after the slowdown, "
            f"stopped {a_stopped - a_last_lead:.2f}s later ({since_renewal} after its last "
            f"renewal), B led {b_first_lead - a_stopped:.2f}s after that "
            f"({b_first_lead - slowed:.2f}s after the slowdown); {len(samples)} samples, "
            f"{proxy.accepted} proxied connections")
    finally:
        proxy.close()
        if os.path.exists(kubeconfig):  # A read it at start; it holds the client's private key
            os.remove(kubeconfig)

    env.apply(tfjob("after", ns, {"Worker": 2}))
    wait_for("pods of a job created after the takeover", lambda: pods_running(env, ns, "after", 2))
    created = env.metrics(b)["taas_operator_pods_created_total"]
    check(created == 2, f"B created {created} pods, expected the new job's 2")
    return b


def scenario_in_place(env):
    """OnFailure and Always: the kubelet restarts the container in place (restart-container plays
    the kubelet); the operator surfaces Restarting, keeps the pod, and counts every restart per
    replica type and job-wide against backoffLimit."""
    ns = "inplace"
    env.namespace(ns)
    job = tfjob("ip", ns, {"PS": 1, "Worker": 2}, run_policy={"backoffLimit": 2})
    job["spec"]["tfReplicaSpecs"]["PS"]["restartPolicy"] = "Always"
    job["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"
    env.apply(job)
    wait_for("pods Running", lambda: pods_running(env, ns, "ip", 3))
    wait_for("job Running", lambda: has_condition(env, ns, "ip", "Running"))
    check(pod(env, ns, "ip-ps-0")["spec"]["restartPolicy"] == "Always", "PS pod restartPolicy")
    check(pod(env, ns, "ip-worker-1")["spec"]["restartPolicy"] == "OnFailure",
          "worker pod restartPolicy")
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in job_pods(env, ns, "ip")}

    log("worker-1 exits 1 and is restarted in place -> Restarting, 1 Worker restart")
    env.restart_container(ns, "ip-worker-1", 1)
    p = pod(env, ns, "ip-worker-1")
    cs = [c for c in p["status"]["containerStatuses"] if c["name"] == "tensorflow"][0]
    check(p["status"]["phase"] == "Running" and cs["restartCount"] == 1 and "running" in cs["state"]
          and cs["lastState"]["terminated"]["exitCode"] == 1,
          f"restart-container wrote what a kubelet writes: {p['status']}")
    wait_for("Worker restart counted", lambda: replica_restarts(env, ns, "ip", "Worker") == 1)
    wait_for("Restarting event", lambda: event_count(env, ns, "TFJobRestarting") >= 1)
    wait_for("job Running again", lambda: has_condition(env, ns, "ip", "Running"))
    log("PS exits 0 under Always and is restarted in place -> 1 PS restart (2 job-wide)")
    env.restart_container(ns, "ip-ps-0", 0)
    wait_for("PS restart counted", lambda: replica_restarts(env, ns, "ip", "PS") == 1)
    time.sleep(2)  # nothing else happens: 2 restarts are within backoffLimit 2
    check(not has_condition(env, ns, "ip", "Failed"), "2 restarts are within backoffLimit 2")
    check(replica_restarts(env, ns, "ip", "Worker") == 1, "an in-place restart is counted once")
    check({p["metadata"]["name"]: p["metadata"]["uid"] for p in job_pods(env, ns, "ip")} == uids,
          "in-place restarts keep the pods")
    check(event_count(env, ns, "SuccessfulDeletePod") == 0, "no pod deleted for an in-place restart")

    log("a third restart, of worker-0, exceeds backoffLimit 2 job-wide -> Failed")
    env.restart_container(ns, "ip-worker-0", 137)
    wait_for("job Failed (backoffLimit)", lambda: has_condition(env, ns, "ip", "Failed"))
    tfj = env.get("-n", ns, "tfjob", "ip")
    check("backoff limit" in condition(tfj, "Failed")["message"],
          f"failed for the backoff limit: {condition(tfj, 'Failed')['message']}")
    check(tfj["status"]["replicaStatuses"]["Worker"]["restarts"] == 2, "2 Worker restarts")
    log("past backoffLimit the pods are released (as Kubeflow); Failed is terminal")
    conditions = tfj["status"]["conditions"]
    wait_for("pods released", lambda: job_pods(env, ns, "ip") == [])
    time.sleep(3)
    check(env.get("-n", ns, "tfjob", "ip")["status"]["conditions"] == conditions,
          "conditions changed after Failed")
    check(job_pods(env, ns, "ip") == [], "nothing recreated after the failure")


def scenario_succeeded_kept(env):
    """successPolicy AllWorkers; a worker that succeeded is never run again when its pod is
    deleted, and still counts towards the job's success."""
    ns = "kept"
    env.namespace(ns)
    job = tfjob("aw", ns, {"PS": 1, "Worker": 2})
    job["spec"]["successPolicy"] = "AllWorkers"
    env.apply(job)
    wait_for("pods Running", lambda: pods_running(env, ns, "aw", 3))
    env.finish_pod(ns, "aw-worker-1", 0)
    wait_for("worker-1 succeeded in status",
             lambda: job_status(env, ns, "aw")["replicaStatuses"]["Worker"].get("succeeded") == 1)
    check(not has_condition(env, ns, "aw", "Succeeded"), "AllWorkers waits for worker 0 too")
    env.kubectl("-n", ns, "delete", "pod", "aw-worker-1", "--wait=false")
    wait_for("worker-1 pod gone", lambda: pod(env, ns, "aw-worker-1") is None)
    time.sleep(3)  # time for a wrong recreation to show
    check(pod(env, ns, "aw-worker-1") is None, "a succeeded replica was run again")
    check(job_status(env, ns, "aw")["replicaStatuses"]["Worker"].get("succeeded") == 1,
          "the succeeded worker still counts once its pod is gone")
    check(has_condition(env, ns, "aw", "Running"), "the job is still Running")
    env.finish_pod(ns, "aw-worker-0", 0)
    wait_for("job Succeeded", lambda: has_condition(env, ns, "aw", "Succeeded"))
    check(event_count(env, ns, "SuccessfulCreatePod") == 3, "exactly 3 pod creations")


def scenario_terminating(env):
    """A pod of a job with a retryable policy that fails while terminating (a kubelet's SIGTERM
    on deletion) is neither a failure nor a restart: with backoffLimit 0 the job goes on and the
    replica is created again once the pod is gone."""
    ns = "terminating"
    env.namespace(ns)
    env.apply(tfjob("tp", ns, {"Worker": 2}, run_policy={"backoffLimit": 0}, restart="ExitCode"))
    wait_for("pods Running", lambda: pods_running(env, ns, "tp", 2))
    old_uid = pod(env, ns, "tp-worker-1")["metadata"]["uid"]
    # A finalizer keeps the pod terminating (kwok would otherwise remove it at once).
    env.kubectl("-n", ns, "patch", "pod", "tp-worker-1", "--type=merge", "-p",
                '{"metadata":{"finalizers":["taas.test/hold"]}}')
    env.kubectl("-n", ns, "delete", "pod", "tp-worker-1", "--wait=false")
    wait_for("worker-1 terminating",
             lambda: pod(env, ns, "tp-worker-1")["metadata"].get("deletionTimestamp"))
    env.finish_pod(ns, "tp-worker-1", 143)
    time.sleep(3)  # time for a wrong failure to show
    status = job_status(env, ns, "tp")
    check(not has_condition(env, ns, "tp", "Failed"), f"a terminating pod failed the job: {status}")
    check(status["replicaStatuses"]["Worker"].get("failed", 0) == 0, f"counted as failed: {status}")
    check(status["replicaStatuses"]["Worker"].get("restarts", 0) == 0,
          f"counted as a restart: {status}")
    env.kubectl("-n", ns, "patch", "pod", "tp-worker-1", "--type=merge", "-p",
                '{"metadata":{"finalizers":null}}')
    wait_for("worker-1 created again",
             lambda: (p := pod(env, ns, "tp-worker-1")) and p["metadata"]["uid"] != old_uid
             and p["status"].get("phase") == "Running")
    check(not has_condition(env, ns, "tp", "Failed"), "the job goes on")
    check(replica_restarts(env, ns, "tp", "Worker") == 0, "recreating a deleted pod is no restart")


def scenario_metrics(env):
    """/metrics after the group's scenarios: jobs by state agree with the API server, the
    reconcile latency histogram is consistent, queue depth and API errors are exported."""
    op = env.operators[-1]

    def states_from_api():
        counts = {}
        for job in env.get("tfjobs", "-A")["items"]:
            state = "Unknown"
            for c in job.get("status", {}).get("conditions", []):
                if c["status"] == "True" and c["type"] in (
                        "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"):
                    state = c["type"]
            counts[state] = counts.get(state, 0) + 1
        return counts

    def agree():
        m = env.metrics(op)
        api = states_from_api()
        prefix = 'taas_operator_jobs{state="'
        exported = {k[len(prefix):-2]: int(v) for k, v in m.items() if k.startswith(prefix)}
        same = all(exported.get(state, 0) == n for state, n in api.items()) and \
            sum(exported.values()) == sum(api.values())
        return same and (api, exported)
    api, exported = wait_for("jobs by state agree with the API server", agree)
    log(f"jobs by state: {exported}")
    check(api.get("Succeeded", 0) >= 1 and api.get("Failed", 0) >= 1, f"states seen: {api}")
    m = env.metrics(op)
    prefix = 'taas_operator_reconcile_duration_seconds_bucket{le="'
    buckets = sorted((float(k[len(prefix):-2]), v) for k, v in m.items() if k.startswith(prefix))
    check(len(buckets) >= 2 and buckets[-1][0] == float("inf"), f"histogram buckets {buckets}")
    check(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), "buckets are cumulative")
    check(buckets[-1][1] == m["taas_operator_reconcile_duration_seconds_count"] > 0,
          "+Inf bucket equals the count")
    check(m["taas_operator_reconcile_duration_seconds_sum"] > 0, "latency sum")
    check(m["taas_operator_workqueue_depth"] >= 0, "queue depth")
    check(m["taas_operator_api_requests_total"] > 0, "API requests counted")
    check("taas_operator_api_errors_total" in m, "API errors exported")
    with urllib.request.urlopen(f"http://127.0.0.1:{op['port']}/healthz", timeout=5) as r:
        check(r.status == 200, "/healthz")
    check(env.ready(op), "/readyz")


def scenario_master_domain(env):
    """Master as a synonym of Chief, under an operator started with --cluster-domain."""
    ns = "master"
    env.namespace(ns)
    job = tfjob("mj", ns, {"Master": 1, "Worker": 1})
    for spec in job["spec"]["tfReplicaSpecs"].values():
        del spec["restartPolicy"]  # Kubeflow's default: Never
    env.apply(job)
    wait_for("pods Running", lambda: pods_running(env, ns, "mj", 2))
    master = pod(env, ns, "mj-master-0")
    check(master["spec"]["restartPolicy"] == "Never", "default restartPolicy Never")
    check(master["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "master",
          "replica-type=master")
    check(master["metadata"]["labels"].get("training.kubeflow.org/job-role") == "master",
          "job-role=master on the master")
    check("training.kubeflow.org/job-role" not in pod(env, ns, "mj-worker-0")["metadata"]["labels"],
          "no job-role on worker 0 when there is a master")
    domain = CLUSTER_DOMAIN
    expected = json.dumps({"cluster": {"master": [f"mj-master-0.master.svc.{domain}:2222"],
                                       "worker": [f"mj-worker-0.master.svc.{domain}:2222"]},
                           "task": {"type": "master", "index": 0}, "environment": "cloud"},
                          separators=(",", ":"))
    check(env_var(master, "TF_CONFIG") == expected,
          f"master TF_CONFIG {env_var(master, 'TF_CONFIG')} != {expected}")
    env.finish_pod(ns, "mj-worker-0", 0)
    time.sleep(2)
    check(not has_condition(env, ns, "mj", "Succeeded"), "worker 0 does not finish a job with a master")
    env.finish_pod(ns, "mj-master-0", 0)
    wait_for("job Succeeded", lambda: has_condition(env, ns, "mj", "Succeeded"))
    time.sleep(2)  # time for a wrong cleanup to show
    check(len(live_pods(env, ns, "mj")) == 2, "default cleanPodPolicy None keeps every pod")


PODGROUP_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
    "spec": {"group": "scheduling.x-k8s.io", "scope": "Namespaced",
             "names": {"kind": "PodGroup", "listKind": "PodGroupList", "plural": "podgroups",
                       "singular": "podgroup"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


GANG_FLAG = "--gang-scheduler-name=scheduler-plugins-scheduler"


def scenario_gang(env, op):
    """schedulingPolicy. Under the group's operator (no --gang-scheduler-name, Kubeflow's default)
    it is ignored: no PodGroup, no schedulerName, so a manifest written for Volcano runs where no
    gang scheduler is installed. Under an operator started with GANG_FLAG (watching only the gang
    namespace): a PodGroup (a minimal scheduler-plugins CRD is installed here) with minMember,
    owned by the job; the pods name the gang scheduler and their group. Returns the group's
    operator, restarted with the group's flags."""
    env.apply(PODGROUP_CRD)
    env.wait_established("crd/podgroups.scheduling.x-k8s.io")
    plain_ns = "nogang"
    env.namespace(plain_ns)
    env.apply(tfjob("vj", plain_ns, {"PS": 1, "Worker": 2},
                    run_policy={"schedulingPolicy": {"minAvailable": 3, "queue": "default"}}))
    wait_for("3 pods without a gang", lambda: len(job_pods(env, plain_ns, "vj")) == 3)
    for p in job_pods(env, plain_ns, "vj"):
        name = p["metadata"]["name"]
        check("scheduling.x-k8s.io/pod-group" not in p["metadata"].get("labels", {}),
              f"{name}: no pod-group label without {GANG_FLAG}")
        check(p["spec"].get("schedulerName") in (None, "default-scheduler"),
              f"{name}: schedulerName {p['spec'].get('schedulerName')} without {GANG_FLAG}")
    check(not env.get("-n", plain_ns, "podgroups.scheduling.x-k8s.io")["items"],
          f"no PodGroup without {GANG_FLAG}")

    log(f"an operator with {GANG_FLAG}")
    ns = "gang"
    env.namespace(ns)
    env.stop_operator(op)  # SIGTERM releases the lease, so the next operator takes it at once
    gang_op = env.start_operator(GANG_FLAG, "--namespaces", ns, identity="gang")
    try:
        wait_for("the gang operator leads",
                 lambda: env.metrics(gang_op)["taas_operator_leader"] == 1, 60)
        env.apply(tfjob("gj", ns, {"PS": 1, "Worker": 2},
                        run_policy={"schedulingPolicy": {"minAvailable": 2}}))
        group = wait_for("PodGroup",
                         lambda: env.get("-n", ns, "podgroups.scheduling.x-k8s.io", "gj"))
        uid = env.get("-n", ns, "tfjob", "gj")["metadata"]["uid"]
        check(group["spec"]["minMember"] == 2, f"minMember = minAvailable: {group['spec']}")
        check(group["metadata"]["ownerReferences"][0]["uid"] == uid,
              "the PodGroup is owned by the job")
        wait_for("3 pods", lambda: len(job_pods(env, ns, "gj")) == 3)
        for p in job_pods(env, ns, "gj"):
            name = p["metadata"]["name"]
            check(p["metadata"]["labels"].get("scheduling.x-k8s.io/pod-group") == "gj",
                  f"{name}: pod-group label")
            check(p["spec"].get("schedulerName") == "scheduler-plugins-scheduler",
                  f"{name}: schedulerName {p['spec'].get('schedulerName')}")
        log("without minAvailable, minMember is every replica")
        env.apply(tfjob("all", ns, {"PS": 1, "Worker": 3}, run_policy={"schedulingPolicy": {}}))
        group = wait_for("PodGroup",
                         lambda: env.get("-n", ns, "podgroups.scheduling.x-k8s.io", "all"))
        check(group["spec"]["minMember"] == 4, f"minMember = all replicas: {group['spec']}")
    finally:
        env.stop_operator(gang_op)
    op = env.start_operator()
    wait_for("the group's operator leads again",
             lambda: env.metrics(op)["taas_operator_leader"] == 1, 60)
    return op


# Each group runs on its own control plane with one operator, started with the group's flags.
CLUSTER_DOMAIN = "taas.example"
def scenario_ui(env):
    """The operator serves the web UI's API with --ui-listen, a standby replica too: 401 without
    the mounted token, 403 outside --ui-namespaces, the namespace's jobs with the token, and a
    job created through the UI's form is run by the leader."""
    ns = "ui"
    env.namespace(ns)
    token = "ui-token-" + str(random.randrange(10**9))
    token_file = os.path.join(env.tmp, "ui-token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    standby = env.start_operator("--ui-listen", f"127.0.0.1:{port}", "--ui-namespaces", ns,
                                 "--ui-token-file", token_file, identity="ui-standby")
    base = f"http://127.0.0.1:{port}/api/v1"

    def call(method, path, body=None, auth=token):
        request = urllib.request.Request(base + path, method=method,
                                         data=None if body is None else json.dumps(body).encode())
        if auth:
            request.add_header("Authorization", "Bearer " + auth)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    try:
        check(call("GET", "/tfjobs", auth=None)[0] == 401, "no token: 401")
        check(call("GET", "/tfjobs", auth="wrong")[0] == 401, "wrong token: 401")
        check(call("GET", "/namespaces/default/tfjobs")[0] == 403, "outside --ui-namespaces: 403")
        status, config = call("GET", "/config")
        check(status == 200 and config["namespaces"] == [ns] and not config["localRun"],
              f"config {status} {config}")
        env.apply(tfjob("listed", ns, {"Worker": 1}))
        wait_for("the UI lists the kubectl-applied job", lambda: any(
            row["name"] == "listed" for row in call("GET", f"/namespaces/{ns}/tfjobs")[1]["items"]))
        form = {"name": "formed", "image": "taas/trainer:latest", "psReplicas": 1,
                "workerReplicas": 2, "gpusPerWorker": 1}
        status, created = call("POST", f"/namespaces/{ns}/tfjobs", form)
        check(status == 201, f"create through the UI: {status} {created}")
        wait_for("the UI's job runs", lambda: pods_running(env, ns, "formed", 3))
        check(env.ready(standby) and env.metrics(standby)["taas_operator_leader"] == 0,
              "the UI came from the standby")
    finally:
        env.stop_operator(standby)


GROUPS = {
    "lifecycle": {"flags": [],
                  "scenarios": ["lifecycle", "chief", "exit_codes", "allreduce", "never", "backoff",
                                "in_place",
                                "succeeded_kept", "terminating", "deleted_pod", "invalid",
                                "managed_by", "metrics", "ui"]},
    "policies": {"flags": ["--cluster-domain", CLUSTER_DOMAIN],
                 "scenarios": ["master_domain", "gang", "suspend", "ttl_and_deadline", "stuck",
                               "no_duplicates", "leader_election"]},
    "slow_api": {"flags": [], "scenarios": ["slow_api"]},
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--operator", required=True)
    parser.add_argument("--crd", required=True)
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--group", required=True, choices=sorted(GROUPS))
    args = parser.parse_args()
    env = Env(args)
    group = GROUPS[args.group]
    env.operator_flags = group["flags"]
    failed = True
    try:
        env.up()
        env.kubectl("apply", "-f", args.crd)
        env.wait_established("crd/tfjobs.kubeflow.org")
        op = env.start_operator()
        wait_for("operator ready", lambda: env.ready(op))
        for name in group["scenarios"]:
            log(f"scenario {name}")
            started = time.time()
            fn = globals()[f"scenario_{name}"]
            if name in ("gang", "no_duplicates", "leader_election", "slow_api"):
                op = fn(env, op) or op
            else:
                fn(env)
            log(f"scenario {name} passed in {time.time() - started:.1f}s")
        failed = False
        print("PASS", flush=True)
    except Exception:
        traceback.print_exc()
    finally:
        env.cleanup(failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
