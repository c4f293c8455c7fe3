"""Processes and ports of the Python cluster tests (tests/conformance, tests/kueue, tests/cluster):
one way to pick a loopback port, run a command and stop a long-running peer, so no test grows its
own."""

import socket
import subprocess


def free_port():
    """A loopback port nobody listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, **kw):
    """Runs cmd; on failure raises RuntimeError with its stderr."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    return p.stdout


def stop(proc, timeout=30):
    """Ends `proc` (a Popen) if it still runs: SIGTERM, then SIGKILL after `timeout` seconds, and
    waits for it either way, so no child outlives the test."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
