"""The instance's processes: each component runs in its own session (so it outlives the `up`
that started it), logs to logs/<component>.log and has its pid in pids/<component>. A recorded
pid counts as the component only while that process's command line names the instance's state
folder, so a recycled pid is never signalled."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from .parse import whole_number
from .report import tail

STOP_GRACE_S = 15
_STOP_POLL_S = 0.05
_KILL_WAIT_S = 2
_BIND_FAILURE = re.compile(r"address already in use|bind: address", re.IGNORECASE)
_LOG_TAIL_LINES = 15


def state_is_running(proc_stat: str) -> bool:
    """Whether a /proc/<pid>/stat line describes a live process (a zombie, exited but not yet
    reaped, is not). The state follows the command name, which may itself hold ") "."""
    _, sep, rest = proc_stat.rpartition(") ")
    return bool(sep) and not rest.startswith("Z")


def pid_running(pid) -> bool:
    try:
        return state_is_running(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return False


def bind_failure(log_text: str) -> str:
    """The line of a component's log saying it could not bind its port, or ""."""
    for line in log_text.splitlines():
        if _BIND_FAILURE.search(line):
            return line.strip()
    return ""


class Components:
    """Starts, checks and stops the processes of the instance whose state folder is `state`."""

    def __init__(self, state: Path):
        self.state = state
        self.pids = state / "pids"
        self.logs = state / "logs"
        self._children = {}  # pid -> Popen of what this process started, to reap it

    def log(self, component) -> Path:
        return self.logs / f"{component}.log"

    def start(self, component, argv):
        self.pids.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.log(component), "wb") as log:
            child = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self._children[child.pid] = child
        (self.pids / component).write_text(f"{child.pid}\n")

    def pid_of(self, component):
        try:
            text = (self.pids / component).read_text().strip()
        except OSError:
            return None
        return whole_number(text, 1, 2**22)

    def recorded(self, component) -> bool:
        return (self.pids / component).exists()

    def alive(self, component) -> bool:
        """The recorded process runs and is this instance's: one this object started while it
        has not exited, any other while its command line names the state folder. A child of
        ours is judged by its handle because the kernel lets Popen return (vfork) before the
        exec'd program's arguments are readable: for that moment /proc/<pid>/cmdline is empty,
        and a loaded machine made `up` take a component that had just started for dead."""
        pid = self.pid_of(component)
        if pid in self._children:
            return self._children[pid].poll() is None
        if pid is None or not pid_running(pid):
            return False
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
        return f"{self.state}/".encode() in cmdline.replace(b"\0", b" ")

    def rss_kib(self, component) -> int:
        try:
            status = Path(f"/proc/{self.pid_of(component)}/status").read_text()
        except OSError:
            return 0
        m = re.search(r"^VmRSS:\s+([0-9]+)", status, re.MULTILINE)
        return int(m.group(1)) if m else 0

    def death_report(self, component):
        """(port_taken, message) about a component that exited."""
        log = self.log(component)
        try:
            bound = bind_failure(log.read_text(errors="replace"))
        except OSError:
            bound = ""
        if bound:
            return True, f"{component} could not bind its port: {bound}"
        return False, f"{component} exited; last lines of {log}:\n{self.log_tail(component)}"

    def log_tail(self, component) -> str:
        return tail(self.log(component), _LOG_TAIL_LINES).rstrip("\n")

    def stop_all(self, order):
        """Stops the live components named in `order` one after the other, each awaited before
        the next: an API server still needs its etcd while it shuts down (given SIGTERM
        together, it waits on the dead etcd until killed). SIGKILL to any still running
        STOP_GRACE_S after the first signal. Never signals this process (the watchdog runs
        `down` itself)."""
        deadline = time.monotonic() + STOP_GRACE_S
        for component in order:
            pid = self.pid_of(component)
            if pid == os.getpid() or not self.alive(component):
                continue
            _signal(pid, signal.SIGTERM)
            if not self._ended(pid, deadline):
                _signal(pid, signal.SIGKILL)
                self._ended(pid, time.monotonic() + _KILL_WAIT_S)

    def _ended(self, pid, deadline) -> bool:
        """Waits until process `pid` has ended or `deadline` has passed; whether it ended."""
        while self._still_running(pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(_STOP_POLL_S)
        return True

    def _still_running(self, pid):
        if pid in self._children:
            self._children[pid].poll()  # reaps our own child, so it does not linger as a zombie
        return pid_running(pid)


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
