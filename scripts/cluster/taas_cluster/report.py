"""How taas-cluster talks to its user: progress on standard error prefixed "taas-cluster: ", and
one exception type for a failure the user must act on (standard output carries only results:
a directory, a kubeconfig path, exports)."""

import sys
from collections import deque
from pathlib import Path


class Failure(Exception):
    """A failure reported as "taas-cluster: error: MESSAGE" with exit status 1 (or, while `up`
    starts an instance, as the reason the attempt failed). MESSAGE names what failed and how
    to go on; it may end with lines of a log."""


class PortTaken(Failure):
    """A component could not bind its port: another program took it after it was picked, so
    starting again with other ports may succeed."""


def say(text):
    print(f"taas-cluster: {text}", file=sys.stderr, flush=True)


def tail(path: Path, lines: int) -> str:
    """The last `lines` lines of a text file, or "" when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return "".join(deque(f, maxlen=lines))
    except OSError:
        return ""
