"""One instance as a whole: its layout, processes, ports and API, whether it is healthy, and the
commands that look at or end it (env, status, down, and the watchdog of `up --owner-pid`)."""

import json
import shutil
import time

from . import gobuild, health, ports
from .certs import Pki
from .kubectl import Kubectl
from .layout import Layout
from .locks import FileLock
from .report import Failure, PortTaken, say
from .supervise import Components, pid_running

# The components every instance runs, in the order `up` starts them and `status` lists them; the
# coscheduler runs only with `up --coscheduler`. `down` stops the watchdog first (it would start
# a second `down`), then the rest in reverse: the API server's clients, the API server, etcd.
CORE_COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
OPTIONAL_COMPONENTS = ("coscheduler",)
WATCHDOG = "watchdog"
STOP_ORDER = (WATCHDOG, *reversed(CORE_COMPONENTS + OPTIONAL_COMPONENTS))
DOWN_LOCK_TIMEOUT_S = 60
CRD_ESTABLISHED_S = 60
CRD_POLL_S = 0.2
WATCH_POLL_S = 2


def established(crd) -> bool:
    """Whether a CRD as kubectl reads it (any JSON) has its Established condition True."""
    status = crd.get("status") if isinstance(crd, dict) else None
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return isinstance(conditions, list) and any(
        isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
        for c in conditions)


class Instance:
    def __init__(self, settings, name):
        self.settings = settings
        self.layout = Layout(settings.state_root, name)
        self.name = self.layout.name
        self.components = Components(self.layout.state)
        self.pki = Pki(self.layout.pki)
        self.cache = gobuild.Cache(settings.cache_root)
        self.bin_dir = self.cache.bin_dir
        self.kubectl = Kubectl(self.bin_dir, self.layout.kubeconfig)

    def port(self, component) -> int:
        port = ports.read_ports_file(self.layout.ports).get(component)
        if port is None:
            raise Failure(f"{self.layout.ports} names no port for {component}")
        return port

    def admin_api(self) -> health.AdminApi:
        return health.AdminApi(self.port("apiserver"), health.client_tls(
            self.pki.crt("ca"), self.pki.crt("admin"), self.pki.key("admin")))

    def owns_port(self, component, port) -> bool:
        pid = self.components.pid_of(component)
        return pid is not None and ports.listens_on(pid, port)

    def apiserver_ready(self, api: health.AdminApi) -> bool:
        return self.owns_port("kube-apiserver", api.port) and api.ready()

    def healthy(self) -> bool:
        """Finished starting, every component alive and the API server ready."""
        if not self.layout.ready.exists():
            return False
        if not all(map(self.components.alive, CORE_COMPONENTS)):
            return False
        try:
            return self.apiserver_ready(self.admin_api())
        except (Failure, OSError):
            return False

    def await_healthy(self, component, what, check):
        """Waits (TAAS_CLUSTER_START_TIMEOUT) until `check` passes while `component` runs. A
        component that exited is explained (PortTaken when its port was taken); a timeout
        names what was awaited and shows the component's log."""
        timeout_s = self.settings.start_timeout_s
        outcome = health.wait_until(check, lambda: self.components.alive(component), timeout_s)
        if outcome is health.Outcome.EXITED:
            port_taken, message = self.components.death_report(component)
            raise (PortTaken if port_taken else Failure)(message)
        if outcome is health.Outcome.TIMED_OUT:
            log, lines = self.components.log(component), self.components.log_tail(component)
            raise Failure(f"{component} did not become {what} within {timeout_s}s; last lines of "
                          f"{log}:\n{lines}")

    def kubectl_logged(self, log_name, failure, *args):
        """Runs `kubectl ARGS`, its output appended to logs/<log_name>.log; a Failure saying
        `failure`, with that output, when it fails."""
        result = self.kubectl.run(*args)
        with open(self.components.log(log_name), "a") as log:
            log.write(result.out + result.err)
        if not result.ok:
            raise Failure(f"{failure}:\n{result.reason()}")

    def install_crds(self, log_name, failure, files, crds, server_side=False):
        """Applies CRD `files` and waits until `crds` (crd/NAME) are established. Not `kubectl
        wait --for=condition=established`: right after the apply, before the API server has
        written any condition, that fails at once (".status.conditions accessor error: <nil> is
        of the type <nil>"), as it did twice on a loaded machine."""
        apply = ["apply", *(["--server-side"] if server_side else [])]
        self.kubectl_logged(log_name, failure, *apply, *(a for f in files for a in ("-f", f)))
        deadline = time.monotonic() + CRD_ESTABLISHED_S
        pending = list(crds)
        while True:
            pending = [crd for crd in pending if not self.crd_established(crd)]
            if not pending:
                return
            if time.monotonic() > deadline:
                raise Failure(f"{failure}: {', '.join(pending)} not established within "
                              f"{CRD_ESTABLISHED_S}s")
            time.sleep(CRD_POLL_S)

    def crd_established(self, crd):
        result = self.kubectl.run("get", crd, "-o", "json")
        if not result.ok:
            return False
        try:
            return established(json.loads(result.out))
        except ValueError:
            return False

    def require(self):
        if not self.layout.kubeconfig.is_file():
            raise Failure(f"no instance '{self.name}' (no {self.layout.kubeconfig}); start it "
                          f"with: taas-cluster up --name {self.name}")

    def stop(self):
        """Stops every process of the instance and removes its state."""
        if self.layout.state.is_dir():
            self.components.stop_all(STOP_ORDER)
            shutil.rmtree(self.layout.state, ignore_errors=True)


def env(instance: Instance):
    instance.require()
    print(f"export KUBECONFIG={instance.layout.kubeconfig}")
    print(f"export PATH={instance.bin_dir}:$PATH")


def down(instance: Instance):
    layout = instance.layout
    layout.root.mkdir(parents=True, exist_ok=True)
    with FileLock(layout.lock) as lock:
        lock.acquire(DOWN_LOCK_TIMEOUT_S, f"another 'taas-cluster up/down --name {instance.name}'")
        if not layout.state.is_dir():
            say(f"instance '{instance.name}' is not running")
        else:
            instance.stop()
            say(f"instance '{instance.name}' stopped")
        layout.lock.unlink(missing_ok=True)


def status(instance: Instance) -> int:
    """Prints each component's pid and memory, the ports and whether the instance is healthy;
    returns the exit status (1 when not healthy)."""
    if not instance.layout.state.is_dir():
        raise Failure(f"no instance '{instance.name}'")
    components = instance.components
    total_kib = 0
    for component in CORE_COMPONENTS + OPTIONAL_COMPONENTS:
        if component in OPTIONAL_COMPONENTS and not components.recorded(component):
            continue
        if components.alive(component):
            rss = components.rss_kib(component)
            total_kib += rss
            print(f"{component:<24} pid {components.pid_of(component):<8} rss {rss // 1024:6d} MiB")
        else:
            print(f"{component:<24} not running")
    print(f"{'total':<24} {'':>14} {total_kib // 1024:6d} MiB")
    for name, port in ports.read_ports_file(instance.layout.ports).items():
        print(f"port {name}={port}")
    healthy = instance.healthy()
    print("healthy" if healthy else "not healthy")
    return 0 if healthy else 1


def watch(instance: Instance, owner_pid):
    """The watchdog of `up --owner-pid`: takes the instance down once its owner has exited, so
    a test killed by a timeout does not leave its control plane running. It waits for as long
    as the owner runs (that is its job); each look is WATCH_POLL_S apart."""
    while instance.layout.state.is_dir() and pid_running(owner_pid):
        time.sleep(WATCH_POLL_S)
    if instance.layout.state.is_dir():
        say(f"owner process {owner_pid} is gone; taking instance '{instance.name}' down")
        down(instance)
