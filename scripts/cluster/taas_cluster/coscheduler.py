"""`up --coscheduler`: scheduler-plugins' scheduler (kube-scheduler 1.32 with the Coscheduling
plugin, built by scripts/cluster/coscheduler) beside the default scheduler. Pods whose
schedulerName is its profile's are placed all-or-nothing per PodGroup (scheduling.x-k8s.io,
named by the pod's scheduling.x-k8s.io/pod-group label); every other pod stays with the default
scheduler."""

import subprocess
from pathlib import Path

from . import certs, gobuild, health, kubeconfig, ports
from .report import Failure

BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "coscheduler"
BINARY = "scheduler-plugins-scheduler"  # in the folder the build script prints
CRDS = ("scheduling.x-k8s.io_podgroups.yaml", "scheduling.x-k8s.io_elasticquotas.yaml")
SCHEDULER_NAME = "scheduler-plugins-scheduler"  # the schedulerName its pods name
# How long a gang's first members wait in Permit for the rest before all of them are rejected.
PERMIT_WAIT_S = 10
# Coscheduling (v0.32) requeues a rejected gang only when a pod is created or a PodGroup changes,
# not when a pod is deleted: the scheduler's sweep of pods left unschedulable is what retries a
# gang once capacity frees. Its default, 5 minutes, would keep such a gang waiting that long.
RETRY_S = 15


def build() -> Path:
    """Builds the coscheduler (or reuses its cached build); returns the folder it printed."""
    try:
        p = subprocess.run([str(BUILD_SCRIPT), "build"], stdout=subprocess.PIPE, text=True,
                           timeout=gobuild.OTHER_BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise Failure("building the coscheduler did not finish within "
                      f"{gobuild.OTHER_BUILD_TIMEOUT_S // 3600} h") from None
    if p.returncode != 0 or not p.stdout.strip():
        raise Failure("building the coscheduler failed (see the message above)")
    return Path(p.stdout.strip())


def config(kubeconfig_path) -> str:
    """Its KubeSchedulerConfiguration: one profile, Coscheduling at every extension point and as
    the only queue sort, leader election off."""
    return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: {kubeconfig_path}
profiles:
- schedulerName: {SCHEDULER_NAME}
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: {PERMIT_WAIT_S}
"""


def start(instance, build_dir: Path):
    """Starts it as a component of `instance` (an Instance whose API server is ready)."""
    layout = instance.layout
    port = ports.reserve(layout.root, layout.ports, ("coscheduler",))["coscheduler"]
    instance.pki.issue(certs.COSCHEDULER)
    client_config = layout.identity_kubeconfig("coscheduler")
    kubeconfig.write(client_config, instance.name, instance.port("apiserver"), instance.pki,
                     certs.COSCHEDULER.name)
    instance.install_crds("coscheduler-crds",
                          "installing the coscheduler's CRDs (PodGroup, ElasticQuota) failed",
                          [build_dir / crd for crd in CRDS],
                          ["crd/podgroups.scheduling.x-k8s.io",
                           "crd/elasticquotas.scheduling.x-k8s.io"], server_side=True)
    config_file = layout.state / "coscheduler.yaml"
    config_file.write_text(config(client_config))
    instance.components.start("coscheduler", [
        build_dir / BINARY, "--config", config_file,
        "--authentication-kubeconfig", client_config,
        "--authorization-kubeconfig", client_config,
        "--bind-address", "127.0.0.1", "--secure-port", port,
        "--cert-dir", layout.pki / "coscheduler",
        "--pod-max-in-unschedulable-pods-duration", f"{RETRY_S}s"])
    instance.await_healthy("coscheduler", "healthy", lambda: health.healthz_ok(port))
