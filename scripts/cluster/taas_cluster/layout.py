"""Where an instance keeps its state: ${TAAS_CLUSTER_STATE:-/tmp/taas-cluster}/<name>, laid out
as docs/test-cluster.md describes (kubeconfig, pki/, etcd/, logs/, pids/, ports, ...)."""

import re
from pathlib import Path

from .report import Failure

DEFAULT_NAME = "default"
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


def check_name(name) -> str:
    if not _NAME.fullmatch(name):
        raise Failure(f"bad instance name '{name}': use lower-case letters, digits, '.', '_' and "
                      "'-'")
    return name


class Layout:
    """The paths of instance `name` under `state_root`."""

    def __init__(self, state_root: Path, name):
        self.name = check_name(name)
        self.root = state_root
        self.state = state_root / name
        self.lock = state_root / f".{name}.lock"  # held by `up` and `down`
        self.kubeconfig = self.state / "kubeconfig"  # the admin's
        self.pki = self.state / "pki"
        self.etcd = self.state / "etcd"
        self.ports = self.state / "ports"
        self.config = self.state / "config"
        self.ready = self.state / "ready"  # written once `up` has finished
        self.pod_logs = self.state / "pod-logs"
        self.all_pods_log = self.pod_logs / "all.log"
        self.kwok_logs = self.state / "kwok-logs.yaml"
        self.nodes = self.state / "nodes.yaml"

    def identity_kubeconfig(self, identity) -> Path:
        """The kubeconfig of a component's identity (the admin's is `kubeconfig`)."""
        return self.state / f"{identity}.kubeconfig"

    def pod_log(self, namespace, pod) -> Path:
        return self.pod_logs / f"{namespace}_{pod}.log"
