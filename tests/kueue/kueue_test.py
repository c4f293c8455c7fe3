#!/usr/bin/env python3
"""Queueing and quotas with Kueue: TFJobs run by taas-operator wait in a Kueue LocalQueue while
their ClusterQueue's nvidia.com/gpu quota is used up, start in creation order (StrictFIFO) when
it frees, and Kueue sees them finish.

Kueue (built from its Go module by scripts/cluster/kueue) runs out of cluster against a test
control plane (scripts/cluster/taas-cluster) with only its TFJob integration on, as
docs/install.md ("Queueing with Kueue") installs it: its own serving certificates (made here), its
webhooks called by the API server on 127.0.0.1, no leader election. Its mutating webhook
suspends a labelled TFJob at creation; its scheduler unsuspends it on admission and injects the
ResourceFlavor's node labels and tolerations into the replica templates, which taas-operator must
carry into the pods (the test's nodes are tainted and labelled so that only such pods schedule).

Scenario (quota 8 GPUs, StrictFIFO), jobs created in this order:
  j1, j2 (2 workers x 2 GPUs) admitted at once; j3 (the same) waits suspended, no pods, its
  Workload pending without quota; j4 (3 workers x 2 GPUs) and j5 (1 worker x 2 GPUs) wait too.
  j1 finishes -> Kueue marks its Workload Finished, admits j3 (first in line), not j4 or j5.
  j2 finishes -> 4 GPUs free: j4 (6) does not fit, and j5 (2) would, but waits behind j4.
  j3 finishes -> j4 and j5 admitted; then both finish and the ClusterQueue is empty.

Preemption (a second ClusterQueue of 8 GPUs, withinClusterQueue: LowerPriority):
  low (priority 100, 4 workers x 2 GPUs) runs; high (priority 1000, 2 x 2) is created -> Kueue
  evicts low's Workload and suspends it, taas-operator deletes its pods and marks it Suspended
  (not Failed), high runs; high finishes -> low is admitted again and gets new pods, and succeeds.
  What the trainers do on the eviction's SIGTERM (checkpoint the step in flight, exit 150, resume
  from it) needs real processes, which kwok's pods are not: the launcher's sigterm_resume tests.

Usage: kueue_test.py --operator BIN --crd FILE --cluster taas-cluster --kueue-build scripts/cluster/kueue
Exits 77 (skipped) only when Kueue is not built and no Go toolchain can build it.
"""

import argparse
import base64
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import urllib.request

# The e2e suite's control-plane and kubectl helpers and the webhook certificates, shared rather
# than copied.
_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_TESTS, "operator"))
sys.path.insert(0, os.path.join(_TESTS, "lib"))
import operator_e2e_test as e2e  # noqa: E402
import webhook_certs  # noqa: E402
from operator_e2e_test import TestFailure, check, has_condition, live_pods, log, wait_for  # noqa: E402
from processes import free_port, stop  # noqa: E402

SKIP = 77
NS = "team-a"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GPU = "nvidia.com/gpu"
QUOTA = 8
# The flavor's node label and toleration: the nodes carry both (label and NoSchedule taint), so
# a replica schedules only if taas-operator kept what Kueue injected on admission.
POOL_KEY, POOL_VALUE = "taas.dev/gpu-pool", "kueue-test"
KUEUE_NAMESPACE = "kueue-system"
KUEUE_SERVICE_DNS = "kueue-webhook-service.kueue-system.svc"
# With internalCertManagement off Kueue v0.17 reads its metrics serving certificate from this
# fixed path (cmd/kueue/main.go); any valid pair will do, nothing here scrapes it over TLS.
KUEUE_METRICS_CERT_DIR = "/etc/kueue/metrics/certs"
# The webhooks kept from Kueue's manifests: its own objects' and the TFJob integration's (the
# others would intercept pods, Jobs and Deployments for integrations that are off).
KEPT_WEBHOOK_PATHS = ("-kueue-x-k8s-io-", "-kubeflow-org-v1-tfjob")
HOLD = 6  # seconds a waiting job is watched for staying suspended


# ---------------------------------------------------------------------------------------------
# Kueue, out of cluster

def _die_with_parent():
    # Kueue goes down with this test even when ctest kills it on a timeout (PR_SET_PDEATHSIG).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


class Kueue:
    def __init__(self, env, bin_dir):
        self.env = env
        self.bin_dir = bin_dir
        self.proc = None
        self.log_path = os.path.join(env.tmp, "kueue.log")

    def install(self):
        env = self.env
        crds = os.path.join(self.bin_dir, "crds")
        env.kubectl("apply", "--server-side", "-f", crds)
        for f in sorted(os.listdir(crds)):
            name = f.removeprefix("kueue.x-k8s.io_").removesuffix(".yaml") + ".kueue.x-k8s.io"
            env.wait_established(f"crd/{name}")
        env.kubectl("create", "namespace", KUEUE_NAMESPACE)
        certs = webhook_certs.make_certs(os.path.join(env.tmp, "kueue-certs"), "kueue", "kueue-ca",
                                         KUEUE_SERVICE_DNS)
        self.metrics_certs(certs)
        port = free_port()
        self.configure_webhooks(certs["ca.crt"], port)
        self.health_port = free_port()
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": KUEUE_NAMESPACE,
            "manageJobsWithoutQueueName": False,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            "metrics": {"bindAddress": f"127.0.0.1:{free_port()}"},
            "webhook": {"host": "127.0.0.1", "port": port,
                        "certDir": os.path.join(env.tmp, "kueue-certs")},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "integrations": {"frameworks": ["kubeflow.org/tfjob"]},
            # The on-demand visibility API is an aggregated API server; not needed here.
            "featureGates": {"VisibilityOnDemand": False},
        }
        config_path = os.path.join(env.tmp, "kueue-config.yaml")
        with open(config_path, "w") as f:
            json.dump(config, f)  # JSON is YAML
        self.out = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [os.path.join(self.bin_dir, "kueue"), "--config", config_path, "--zap-log-level", "2"],
            stdout=self.out, stderr=subprocess.STDOUT, env=env.env, preexec_fn=_die_with_parent)

        def ready():
            if self.proc.poll() is not None:
                raise TestFailure(f"kueue exited with {self.proc.returncode}:\n" + self.logs(5000))
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=5) as r:
                return r.status == 200
        wait_for("Kueue ready (/readyz)", ready, 180)

        # Its mutating webhook answers once the API server reaches it with the CA it was given.
        def suspends():
            p = env.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                            input=json.dumps(job("webhook-probe", 1)), check=False)
            return p.returncode == 0 and json.loads(p.stdout)["spec"]["runPolicy"]["suspend"] is True
        wait_for("Kueue's webhook suspending a queued TFJob (server-side dry run)", suspends, 120)

    def metrics_certs(self, certs):
        if os.path.exists(os.path.join(KUEUE_METRICS_CERT_DIR, "tls.crt")):
            return
        try:
            os.makedirs(KUEUE_METRICS_CERT_DIR, exist_ok=True)
            for n in ("tls.crt", "tls.key"):
                with open(os.path.join(KUEUE_METRICS_CERT_DIR, n), "wb") as f:
                    f.write(certs[n])
        except OSError as e:
            raise TestFailure(
                f"Kueue reads its metrics certificate from {KUEUE_METRICS_CERT_DIR} (tls.crt, "
                f"tls.key) and this user cannot create it ({e}): create it once as root, e.g. "
                "with any self-signed pair, or run the test as root")

    def configure_webhooks(self, ca, port):
        text = self.env.kubectl("create", "--dry-run=client", "-o", "json", "-f",
                                os.path.join(self.bin_dir, "webhook-manifests.yaml")).stdout
        # One JSON object per YAML document, one after the other.
        configs, decoder, at = [], json.JSONDecoder(), 0
        while text[at:].strip():
            obj, end = decoder.raw_decode(text[at:].lstrip())
            at = len(text) - len(text[at:].lstrip()) + end
            configs.append(obj)
        check(sorted(c["kind"] for c in configs) ==
              ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"],
              f"unexpected objects in Kueue's webhook manifests: {[c['kind'] for c in configs]}")
        for config in configs:
            hooks = [w for w in config["webhooks"]
                     if any(k in w["clientConfig"]["service"]["path"] for k in KEPT_WEBHOOK_PATHS)]
            check(any("tfjob" in w["name"] for w in hooks),
                  f"no TFJob webhook in Kueue's {config['kind']}")
            for w in hooks:
                path = w["clientConfig"]["service"]["path"]
                w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}",
                                     "caBundle": base64.b64encode(ca).decode()}
            config["metadata"] = {"name": "kueue-" + config["metadata"]["name"]}
            config["webhooks"] = hooks
            self.env.apply(config)

    def logs(self, n=30000):
        return open(self.log_path).read()[-n:] if self.proc else ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            stop(self.proc)
            self.out.close()


# ---------------------------------------------------------------------------------------------
# objects and observations

def job(name, workers, gpus=2, queue="gpu", priority=None):
    """A TFJob of `workers` workers with `gpus` GPUs each, queued in LocalQueue `queue` with
    WorkloadPriorityClass `priority` (none: Kueue's default); created unsuspended (Kueue's webhook
    suspends it)."""
    job = e2e.tfjob(name, NS, {"Worker": workers})
    container = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {GPU: gpus}}
    job["metadata"]["labels"] = {QUEUE_LABEL: queue}
    if priority:
        job["metadata"]["labels"][PRIORITY_LABEL] = priority
    return job


def cluster_queue(name, **spec):
    """A ClusterQueue of QUOTA GPUs of the flavor gpu-pool, with `spec`'s other fields."""
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {"namespaceSelector": {}, **spec,
                     "resourceGroups": [{"coveredResources": [GPU], "flavors": [
                         {"name": "gpu-pool",
                          "resources": [{"name": GPU, "nominalQuota": QUOTA}]}]}]}}


def local_queue(name, cluster_queue_name):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"clusterQueue": cluster_queue_name}}


def queues():
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": "gpu-pool"},
              "spec": {"nodeLabels": {POOL_KEY: POOL_VALUE},
                       "tolerations": [{"key": POOL_KEY, "operator": "Equal", "value": POOL_VALUE,
                                        "effect": "NoSchedule"}]}}
    return [flavor, cluster_queue("gpus", queueingStrategy="StrictFIFO"),
            local_queue("gpu", "gpus")]


def preemption_queues():
    """Two WorkloadPriorityClasses and a ClusterQueue whose higher-priority Workloads preempt its
    lower-priority ones (Kueue's withinClusterQueue: LowerPriority)."""
    classes = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": name}, "value": value,
                "description": f"kueue_test's {name} priority"}
               for name, value in (("low", 100), ("high", 1000))]
    return classes + [cluster_queue("preempting", queueingStrategy="BestEffortFIFO",
                                    preemption={"withinClusterQueue": "LowerPriority"}),
                      local_queue("preempting", "preempting")]


def tfjob_obj(env, name):
    return env.get("-n", NS, "tfjob", name)


def suspended(env, name):
    return tfjob_obj(env, name)["spec"].get("runPolicy", {}).get("suspend") is True


def workload(env, name):
    """The Workload Kueue made for TFJob `name` (owned by it), or None."""
    for w in (env.get("-n", NS, "workloads.kueue.x-k8s.io") or {}).get("items", []):
        for o in w["metadata"].get("ownerReferences", []):
            if o["kind"] == "TFJob" and o["name"] == name:
                return w
    return None


def wl_conditions(env, name):
    w = workload(env, name)
    return {c["type"]: c for c in (w or {}).get("status", {}).get("conditions", [])}


def wl_true(env, name, ctype):
    c = wl_conditions(env, name).get(ctype)
    return c is not None and c["status"] == "True"


def assert_waiting(env, name):
    """Suspended with no pods for HOLD seconds, its Workload holding no quota and not admitted.
    Returns the Workload's QuotaReserved message (set once Kueue tried to admit it; a job queued
    behind another under StrictFIFO may not have been tried yet)."""
    wait_for(f"Workload of {name}", lambda: workload(env, name))
    end = time.time() + HOLD
    while time.time() < end:
        check(suspended(env, name), f"{name}: unsuspended while its quota is used up")
        pods = live_pods(env, NS, name)
        check(not pods, f"{name}: pods {[p['metadata']['name'] for p in pods]} while queued")
        cs = wl_conditions(env, name)
        check(cs.get("QuotaReserved", {}).get("status") != "True", f"{name}: quota reserved: {cs}")
        check(cs.get("Admitted", {}).get("status") != "True", f"{name}: admitted: {cs}")
        time.sleep(1)
    return wl_conditions(env, name).get("QuotaReserved", {}).get("message", "")


def assert_admitted(env, name, workers, cluster_queue_name="gpus"):
    """Admitted by Kueue, unsuspended, its pods created with the flavor's node selector and
    toleration, and Running (the scheduler placed them on the tainted pool)."""
    wait_for(f"Workload of {name} admitted (QuotaReserved and Admitted True)",
             lambda: wl_true(env, name, "QuotaReserved") and wl_true(env, name, "Admitted"))
    wait_for(f"{name} unsuspended by Kueue", lambda: not suspended(env, name))
    wait_for(f"{workers} pods of {name} Running",
             lambda: e2e.pods_running(env, NS, name, workers))
    for p in live_pods(env, NS, name):
        spec, pname = p["spec"], p["metadata"]["name"]
        check(spec.get("nodeSelector", {}).get(POOL_KEY) == POOL_VALUE,
              f"{pname}: the flavor's node label missing from nodeSelector {spec.get('nodeSelector')}")
        check(any(t.get("key") == POOL_KEY and t.get("value") == POOL_VALUE
                  for t in spec.get("tolerations", [])),
              f"{pname}: the flavor's toleration missing from {spec.get('tolerations')}")
    admission = workload(env, name)["status"]["admission"]
    check(admission["clusterQueue"] == cluster_queue_name, f"{name}: admitted by {admission}")


def finish(env, name, workers):
    """The job's workers exit 0 (worker 0 last: it decides success); then the TFJob is Succeeded
    and Kueue marks its Workload Finished, releasing the quota."""
    for i in reversed(range(workers)):
        env.finish_pod(NS, f"{name}-worker-{i}", 0)
    wait_for(f"{name} Succeeded", lambda: has_condition(env, NS, name, "Succeeded"))
    wait_for(f"Workload of {name} Finished (Kueue saw the job finish)",
             lambda: wl_true(env, name, "Finished"))


def reserved_gpus(env):
    cq = env.get("clusterqueue.kueue.x-k8s.io", "gpus")["status"]
    for f in cq.get("flavorsReservation", []):
        for r in f["resources"]:
            if r["name"] == GPU:
                return r["total"]
    return None


def create(env, name, workers, **queueing):
    env.apply(job(name, workers, **queueing))
    # StrictFIFO orders by creation time, which has a resolution of one second.
    time.sleep(1.2)


# ---------------------------------------------------------------------------------------------

def scenario(env):
    for q in queues():
        env.apply(q)
    wait_for("ClusterQueue gpus active", lambda: any(
        c["type"] == "Active" and c["status"] == "True"
        for c in env.get("clusterqueue.kueue.x-k8s.io", "gpus").get("status", {}).get("conditions", [])))

    log("j1, j2, j3 (4 GPUs each) against a quota of 8")
    for name in ("j1", "j2", "j3"):
        create(env, name, 2)
    assert_admitted(env, "j1", 2)
    assert_admitted(env, "j2", 2)
    wait_for("Workload of j3 pending (QuotaReserved False, reason Pending)",
             lambda: (wl_conditions(env, "j3").get("QuotaReserved") or {}).get("reason") == "Pending")
    message = assert_waiting(env, "j3")
    check(GPU in message and "insufficient unused quota" in message,
          f"j3's Workload pending for another reason: {message!r}")
    log(f"j3 waits: {message}")
    check(reserved_gpus(env) == str(QUOTA), f"ClusterQueue reserves {reserved_gpus(env)} GPUs")

    log("j4 (6 GPUs) and j5 (2 GPUs) queue behind j3")
    create(env, "j4", 3)
    create(env, "j5", 1)
    assert_waiting(env, "j4")
    assert_waiting(env, "j5")

    log("j1 finishes: j3, first in line, is admitted; j4 and j5 still wait")
    finish(env, "j1", 2)
    assert_admitted(env, "j3", 2)
    assert_waiting(env, "j4")
    assert_waiting(env, "j5")

    log("j2 finishes: 4 GPUs free; j4 (6) does not fit and j5 (2) waits behind it (StrictFIFO)")
    finish(env, "j2", 2)
    wait_for("ClusterQueue reserving 4 GPUs", lambda: reserved_gpus(env) == "4")
    assert_waiting(env, "j4")
    assert_waiting(env, "j5")

    log("j3 finishes: j4 and j5 admitted together")
    finish(env, "j3", 2)
    assert_admitted(env, "j4", 3)
    assert_admitted(env, "j5", 1)
    order = sorted(("j1", "j2", "j3", "j4", "j5"), key=lambda n: (
        wl_conditions(env, n)["QuotaReserved"]["lastTransitionTime"], n))
    log(f"admission order: {order}")

    log("j4 and j5 finish: the ClusterQueue is empty")
    finish(env, "j4", 3)
    finish(env, "j5", 1)

    def empty():
        s = env.get("clusterqueue.kueue.x-k8s.io", "gpus")["status"]
        return (s.get("pendingWorkloads", 0), s.get("reservingWorkloads", 0),
                s.get("admittedWorkloads", 0), reserved_gpus(env)) == (0, 0, 0, "0")
    wait_for("ClusterQueue gpus with no pending, reserving or admitted Workloads, 0 GPUs reserved",
             empty)


def preemption_scenario(env):
    """A running low-priority job is preempted for a high-priority one and resumes when the quota
    frees: Kueue evicts its Workload and suspends the TFJob; taas-operator deletes its pods (on a
    kubelet, SIGTERM with the pod's grace period, on which the trainer checkpoints the step in
    flight: the launcher's sigterm_resume tests), keeps the job neither Failed nor restarted, and
    makes new pods once Kueue admits it again."""
    for q in preemption_queues():
        env.apply(q)
    wait_for("ClusterQueue preempting active", lambda: any(
        c["type"] == "Active" and c["status"] == "True" for c in
        env.get("clusterqueue.kueue.x-k8s.io", "preempting").get("status", {}).get("conditions", [])))

    log("low (4 workers x 2 GPUs) fills the quota of 8")
    create(env, "low", 4, queue="preempting", priority="low")
    assert_admitted(env, "low", 4, "preempting")
    first_pods = {p["metadata"]["uid"] for p in live_pods(env, NS, "low")}

    log("high (2 workers x 2 GPUs) preempts it")
    create(env, "high", 2, queue="preempting", priority="high")
    wait_for("low's Workload evicted (Evicted True, reason Preempted)", lambda: (
        wl_conditions(env, "low").get("Evicted") or {}).get("reason") == "Preempted")
    wait_for("low suspended by Kueue", lambda: suspended(env, "low"))
    wait_for("low's pods deleted by taas-operator", lambda: not e2e.job_pods(env, NS, "low"))
    wait_for("low's Suspended condition", lambda: has_condition(env, NS, "low", "Suspended"))
    assert_admitted(env, "high", 2, "preempting")
    check(not has_condition(env, NS, "low", "Failed"), "low: Failed after its preemption")
    message = assert_waiting(env, "low")
    log(f"low waits: {message}")

    log("high finishes: low is admitted again and gets new pods")
    finish(env, "high", 2)
    assert_admitted(env, "low", 4, "preempting")
    again = {p["metadata"]["uid"] for p in live_pods(env, NS, "low")}
    check(not again & first_pods, f"low: pods of before the preemption still live: {again & first_pods}")
    check(not has_condition(env, NS, "low", "Suspended"), "low: still Suspended once readmitted")
    check(not has_condition(env, NS, "low", "Failed"), "low: Failed after it resumed")
    finish(env, "low", 4)


def build_kueue(build_script):
    """The cached Kueue build, or None when it is not built and there is no Go to build it."""
    p = subprocess.run([build_script, "build"], capture_output=True, text=True)
    if p.returncode != 0:
        if "find Go toolchain" in p.stderr:
            return None
        raise TestFailure(f"{build_script} build failed:\n{p.stderr[-5000:]}")
    return p.stdout.strip().splitlines()[-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--operator", required=True, help="taas-operator binary")
    parser.add_argument("--crd", required=True, help="taas's TFJob CRD")
    parser.add_argument("--cluster", required=True, help="scripts/cluster/taas-cluster")
    parser.add_argument("--kueue-build", required=True, help="scripts/cluster/kueue")
    args = parser.parse_args()
    started = time.time()
    # Built once, then cached (scripts/setup.d/36-kueue.sh builds it in setup).
    bin_dir = build_kueue(args.kueue_build)
    if bin_dir is None:
        print("no Go toolchain: cannot build Kueue (scripts/cluster/kueue build); skipped", flush=True)
        return SKIP
    env = e2e.Env(args)
    kueue = Kueue(env, bin_dir)
    failed = True
    try:
        env.up()
        env.kubectl("label", "nodes", "--all", f"{POOL_KEY}={POOL_VALUE}")
        env.kubectl("taint", "nodes", "--all", f"{POOL_KEY}={POOL_VALUE}:NoSchedule")
        env.kubectl("apply", "-f", args.crd)
        env.wait_established("crd/tfjobs.kubeflow.org")
        # One operator: no lease to lose when the loaded API server answers slowly.
        op = env.start_operator("--leader-elect=false")
        wait_for("taas-operator ready", lambda: env.ready(op))
        env.namespace(NS)
        t = time.time()
        kueue.install()
        log(f"Kueue ready in {time.time() - t:.1f}s")
        t = time.time()
        scenario(env)
        log(f"queueing scenario passed in {time.time() - t:.1f}s")
        t = time.time()
        preemption_scenario(env)
        log(f"preemption scenario passed in {time.time() - t:.1f}s")
        failed = False
    except Exception:
        traceback.print_exc()
    finally:
        if failed:
            try:
                print(env.kubectl("get", "workloads.kueue.x-k8s.io,clusterqueues,localqueues", "-A",
                                  "-o", "yaml", check=False).stdout[-20000:], flush=True)
            except Exception:
                pass
            print(f"--- kueue log (tail):\n{kueue.logs()}", flush=True)
        kueue.stop()
        env.cleanup(failed)
    log(f"total {time.time() - started:.1f}s")
    print("FAIL" if failed else "PASS", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
