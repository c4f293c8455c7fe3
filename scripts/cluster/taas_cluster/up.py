"""`up`: starting an instance. Ports are reserved, then etcd, the API server, the controller
manager and scheduler, kwok and its nodes start in dependency order, each awaited by its health
probe; a port taken in the meantime restarts the attempt on other ports (three attempts), and
any other failure stops what was started and keeps the logs."""

import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import coscheduler, gobuild, health, kubeconfig, manifests, ports
from .certs import ADMIN, CLIENTS
from .instance import WATCHDOG, Instance
from .locks import FileLock
from .report import Failure, PortTaken, say

INSTANCE_PORTS = ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok")
START_ATTEMPTS = 3
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"  # its first address is in the API server certificate
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
POD_CIDR = "10.244.0.1/16"
NODE_LEASE_S = 40
LAUNCHER = Path(__file__).resolve().parent.parent / "taas-cluster"


@dataclass(frozen=True)
class Request:
    nodes: int = 4
    gpus_per_node: int = 8
    apiserver_port: int = 0  # 0: a free port is picked
    owner_pid: int = 0  # 0: no watchdog
    coscheduler: bool = False


def up(settings, name, request: Request):
    """Starts instance `name` (or reuses it when healthy) and prints its kubeconfig path."""
    instance = Instance(settings, name)
    settings.state_root.mkdir(parents=True, exist_ok=True)
    with FileLock(instance.layout.lock) as lock:
        if not lock.try_acquire():
            raise Failure(f"another 'taas-cluster up/down --name {name}' is running")
        if instance.layout.state.is_dir():
            if instance.healthy():
                say(f"instance '{name}' is already running")
                print(instance.layout.kubeconfig)
                return
            say(f"found a stopped or half-started instance '{name}' in {instance.layout.state}; "
                "cleaning it up first")
            instance.stop()
        _refuse_busy_port(request.apiserver_port)
        gobuild.build(settings)
        coscheduler_dir = coscheduler.build() if request.coscheduler else None
        started = time.monotonic()
        _start_with_retries(instance, request, coscheduler_dir)
        instance.layout.ready.touch()
        if request.owner_pid:
            instance.components.start(WATCHDOG, [sys.executable, LAUNCHER, "_watch", name,
                                                   request.owner_pid, f"{instance.layout.state}/"])
    say(f"instance '{name}' is up in {time.monotonic() - started:.1f} s: {request.nodes} nodes x "
        f"{request.gpus_per_node} GPUs, API server https://127.0.0.1:{instance.port('apiserver')}")
    print(instance.layout.kubeconfig)


def _refuse_busy_port(port):
    if port and port in ports.listening():
        holder = ports.holder(port)
        raise Failure(f"port {port} is already in use{' by ' + holder if holder else ''}; pick "
                      "another --apiserver-port or omit it")


def _start_with_retries(instance: Instance, request: Request, coscheduler_dir):
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            _start(instance, request, coscheduler_dir)
            return
        except (Failure, OSError, subprocess.SubprocessError) as error:
            say(str(error) if isinstance(error, Failure) else f"starting failed: {error}")
            kept = _keep_logs(instance)
            instance.stop()
            if (isinstance(error, PortTaken) and not request.apiserver_port
                    and attempt < START_ATTEMPTS):
                say("a port was taken while starting; retrying with other ports "
                    f"(attempt {attempt + 1}/{START_ATTEMPTS})")
                shutil.rmtree(kept, ignore_errors=True)
                continue
            raise Failure(f"instance '{instance.name}' failed to start (logs kept in {kept}/logs); "
                          "nothing is left running") from None
        except BaseException:  # interrupted: leave nothing running, then stop as asked
            instance.stop()
            raise


def _keep_logs(instance: Instance) -> Path:
    instance.settings.tmpdir.mkdir(parents=True, exist_ok=True)
    kept = Path(tempfile.mkdtemp(prefix=f"taas-cluster-{instance.name}-failed.",
                                 dir=instance.settings.tmpdir))
    if instance.components.logs.is_dir():
        shutil.copytree(instance.components.logs, kept / "logs")
    return kept


def _start(instance: Instance, request: Request, coscheduler_dir):
    layout = instance.layout
    for folder in (instance.components.pids, instance.components.logs, layout.etcd):
        folder.mkdir(parents=True, exist_ok=True)
    fixed = {"apiserver": request.apiserver_port} if request.apiserver_port else {}
    port = ports.reserve(layout.root, layout.ports, INSTANCE_PORTS, fixed)
    layout.config.write_text(f"nodes={request.nodes} gpus-per-node={request.gpus_per_node}\n")
    _start_etcd(instance, port)
    _make_identities(instance, port["apiserver"])  # while etcd starts: it needs none
    instance.await_healthy("etcd", "healthy", lambda: instance.owns_port("etcd", port["etcd"])
                           and health.etcd_healthy(port["etcd"]))
    _start_apiserver(instance, port)
    api = instance.admin_api()
    instance.await_healthy("kube-apiserver", "ready", lambda: instance.apiserver_ready(api))
    _start_controllers(instance, port)
    _start_kwok(instance, port["kwok"])
    _create_nodes(instance, request)
    for component, name in (("kube-controller-manager", "controller-manager"),
                            ("kube-scheduler", "scheduler")):
        instance.await_healthy(component, "healthy", lambda p=port[name]: health.healthz_ok(p))
    if request.nodes:
        instance.await_healthy("kwok", f"Ready on all {request.nodes} nodes",
                               lambda: api.nodes_ready(manifests.NODE_LABEL_SELECTOR,
                                                       request.nodes))
    # Pods need the namespace's "default" service account, which the controller manager creates.
    instance.await_healthy("kube-controller-manager", "ready (default service account)",
                           lambda: api.exists("/api/v1/namespaces/default/serviceaccounts/default"))
    if coscheduler_dir:
        coscheduler.start(instance, coscheduler_dir)


def _make_identities(instance: Instance, api_port):
    """The PKI and a kubeconfig per client identity; the admin's is the instance's kubeconfig."""
    layout = instance.layout
    instance.pki.create(instance.name)
    for identity in CLIENTS:
        path = (layout.kubeconfig if identity is ADMIN
                else layout.identity_kubeconfig(identity.name))
        kubeconfig.write(path, instance.name, api_port, instance.pki, identity.name)


def _start_etcd(instance: Instance, port):
    client, peer = f"http://127.0.0.1:{port['etcd']}", f"http://127.0.0.1:{port['etcd-peer']}"
    instance.components.start("etcd", [
        instance.bin_dir / "etcd", "--name", "taas", "--data-dir", instance.layout.etcd,
        "--listen-client-urls", client, "--advertise-client-urls", client,
        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
        "--initial-cluster", f"taas={peer}", "--unsafe-no-fsync", "--log-level", "warn"])


def _start_apiserver(instance: Instance, port):
    pki = instance.pki
    instance.components.start("kube-apiserver", [
        instance.bin_dir / "kube-apiserver", "--etcd-servers", f"http://127.0.0.1:{port['etcd']}",
        "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
        "--secure-port", port["apiserver"], "--cert-dir", instance.layout.pki,
        "--tls-cert-file", pki.crt("apiserver"), "--tls-private-key-file", pki.key("apiserver"),
        "--client-ca-file", pki.crt("ca"), "--authorization-mode", "Node,RBAC",
        "--service-account-issuer", SERVICE_ACCOUNT_ISSUER,
        "--service-account-key-file", pki.service_account_public,
        "--service-account-signing-key-file", pki.key("sa"),
        "--service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE,
        "--allow-privileged=true", "--profiling=false"])


def _start_controllers(instance: Instance, port):
    """kube-controller-manager and kube-scheduler, each with its own identity."""
    layout, pki = instance.layout, instance.pki
    for component, identity, cert_dir, extra in (
            ("kube-controller-manager", "controller-manager", "kcm", [
                "--use-service-account-credentials",
                "--service-account-private-key-file", pki.key("sa"),
                "--root-ca-file", pki.crt("ca"),
                "--cluster-signing-cert-file", pki.crt("ca"),
                "--cluster-signing-key-file", pki.key("ca")]),
            ("kube-scheduler", "scheduler", "scheduler", [])):
        config = layout.identity_kubeconfig(identity)
        instance.components.start(component, [
            instance.bin_dir / component, "--kubeconfig", config,
            "--authentication-kubeconfig", config, "--authorization-kubeconfig", config,
            "--bind-address", "127.0.0.1", "--secure-port", port[identity],
            "--cert-dir", layout.pki / cert_dir, *extra,
            "--leader-elect=false", "--profiling=false"])


def _start_kwok(instance: Instance, kwok_port):
    """kwok, after its Logs CRD. Container logs are served by kwok's kubelet endpoint on
    127.0.0.1:<kwok port>, so `kubectl logs [-f]` works: a pod with a kwok Logs object (made by
    `pod-log`) reads its own file, any other pod the shared pod-logs/all.log (CRI log format)."""
    layout = instance.layout
    instance.install_crds("crd", "installing kwok's Logs CRD failed", [instance.cache.logs_crd],
                          ["crd/logs.kwok.x-k8s.io"])
    layout.pod_logs.mkdir(parents=True, exist_ok=True)
    layout.all_pods_log.write_text("")
    layout.kwok_logs.write_text(manifests.cluster_logs(layout.all_pods_log))
    instance.components.start("kwok", [
        instance.bin_dir / "kwok", "--config", instance.cache.stages,
        "--config", layout.kwok_logs, "--enable-crds", "Logs",
        "--kubeconfig", layout.identity_kubeconfig("kwok"), "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector", manifests.KWOK_NODE_ANNOTATION,
        "--server-address", f"127.0.0.1:{kwok_port}",
        "--node-lease-duration-seconds", NODE_LEASE_S,
        "--cidr", POD_CIDR, "--node-ip", "127.0.0.1", "--node-port", kwok_port])


def _create_nodes(instance: Instance, request: Request):
    instance.layout.nodes.write_text(manifests.nodes(request.nodes, request.gpus_per_node))
    if request.nodes:
        instance.kubectl_logged("nodes", "creating the kwok nodes failed", "apply", "-f",
                                instance.layout.nodes)
