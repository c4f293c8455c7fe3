"""Loopback ports of instances: which ports are listening (from /proc/net, no `ss` needed), which
process holds one, and picking free ones for a new instance under a lock so that two concurrent
`up`s never pick the same. An instance's ports are recorded in its state folder as `ports`,
one `component=port` per line."""

import os
import random
import re
from pathlib import Path

from .locks import FileLock
from .parse import whole_number
from .report import Failure

# Picked ports lie below Linux's ephemeral range (32768-60999 by default), so a port the kernel
# gives an outgoing connection in the meantime is never one of them.
PORT_LOW, PORT_HIGH = 20000, 31999
_LOCK_TIMEOUT_S = 60
_PROC_NET_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
_TCP_LISTEN = "0A"  # the state column of a listening socket in /proc/net/tcp
_SOCKET_LINK = re.compile(r"socket:\[([0-9]+)\]")
_PORTS_LINE = re.compile(r"([a-z][a-z0-9-]*)=([0-9]{1,5})")


def parse_listening(proc_net_tcp: str) -> dict:
    """{port: {socket inode, ...}} of the listening sockets in a /proc/net/tcp(6) table."""
    sockets = {}
    for line in proc_net_tcp.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != _TCP_LISTEN:
            continue
        _, _, port_hex = fields[1].rpartition(":")
        try:
            port, inode = int(port_hex, 16), int(fields[9])
        except ValueError:
            continue
        sockets.setdefault(port, set()).add(inode)
    return sockets


def listening() -> dict:
    """{port: {socket inode, ...}} of every TCP port listening on this machine (IPv4 and IPv6)."""
    sockets = {}
    for table in _PROC_NET_TCP:
        try:
            text = table.read_text()
        except OSError:
            continue
        for port, inodes in parse_listening(text).items():
            sockets.setdefault(port, set()).update(inodes)
    return sockets


def pick(count, used, rng) -> list:
    """`count` distinct ports drawn at random (by `rng`) from PORT_LOW..PORT_HIGH less `used`."""
    free = [port for port in range(PORT_LOW, PORT_HIGH + 1) if port not in used]
    if len(free) < count:
        raise Failure(f"could not find {count} free loopback ports in {PORT_LOW}-{PORT_HIGH}")
    return rng.sample(free, count)


def parse_ports_file(text) -> dict:
    """{component: port} from a `ports` file; lines that are not `component=port` are skipped."""
    ports = {}
    for line in text.splitlines():
        m = _PORTS_LINE.fullmatch(line.strip())
        if m and whole_number(m.group(2), 1, 65535) is not None:
            ports[m.group(1)] = int(m.group(2))
    return ports


def format_ports_file(ports: dict) -> str:
    return "".join(f"{name}={port}\n" for name, port in ports.items())


def read_ports_file(path: Path) -> dict:
    try:
        return parse_ports_file(path.read_text())
    except OSError:
        return {}


def recorded_by_instances(state_root: Path) -> set:
    """The ports recorded by every instance under `state_root`, running or not yet."""
    used = set()
    for ports_file in state_root.glob("*/ports"):
        used.update(read_ports_file(ports_file).values())
    return used


def reserve(state_root: Path, ports_file: Path, names, fixed=None, rng=None) -> dict:
    """Picks a free port for each component in `names` (or takes `fixed[name]`) and appends them
    to `ports_file`, under the lock every instance's pick takes; returns {component: port}."""
    fixed = fixed or {}
    rng = rng or random.SystemRandom()
    with FileLock(state_root / ".ports.lock") as lock:
        lock.acquire(_LOCK_TIMEOUT_S, "another taas-cluster picking ports")
        used = set(listening()) | recorded_by_instances(state_root) | set(fixed.values())
        free = iter(pick(sum(name not in fixed for name in names), used, rng))
        ports = {name: fixed[name] if name in fixed else next(free) for name in names}
        with open(ports_file, "a") as f:
            f.write(format_ports_file(ports))
    return ports


def socket_inodes(pid) -> set:
    """The inodes of the sockets process `pid` has open (empty when it cannot be read)."""
    inodes = set()
    try:
        with os.scandir(f"/proc/{pid}/fd") as fds:
            for fd in fds:
                try:
                    m = _SOCKET_LINK.fullmatch(os.readlink(fd.path))
                except OSError:
                    continue
                if m:
                    inodes.add(int(m.group(1)))
    except OSError:
        pass
    return inodes


def listens_on(pid, port) -> bool:
    """True when process `pid` itself holds a listening socket on `port` (not another program)."""
    inodes = listening().get(port)
    return bool(inodes) and not inodes.isdisjoint(socket_inodes(pid))


def holder(port) -> str:
    """Who listens on `port`, as "NAME (pid PID)", or "" when no readable process holds it."""
    inodes = listening().get(port)
    if not inodes:
        return ""
    with os.scandir("/proc") as processes:
        for entry in processes:
            if entry.name.isdigit() and not inodes.isdisjoint(socket_inodes(entry.name)):
                try:
                    name = Path(entry.path, "comm").read_text().strip()
                except OSError:
                    name = "a process"
                return f"{name} (pid {entry.name})"
    return ""
