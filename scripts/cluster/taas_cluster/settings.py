"""taas-cluster's configuration: every environment variable it reads, read here once into one
typed value (docs/test-cluster.md names them)."""

import os
from dataclasses import dataclass
from pathlib import Path

from .parse import whole_number
from .report import Failure

DEFAULT_STATE_ROOT = "/tmp/taas-cluster"
# Seconds to wait for each component to become healthy; a loaded 2-core machine is slow.
DEFAULT_START_TIMEOUT_S = 180
DEFAULT_GOPROXY = "https://proxy.golang.org"


@dataclass(frozen=True)
class Settings:
    cache_root: Path  # $TAAS_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/taas: the builds
    state_root: Path  # $TAAS_CLUSTER_STATE, else /tmp/taas-cluster: one folder per instance
    start_timeout_s: int  # $TAAS_CLUSTER_START_TIMEOUT: the wait for each component
    go: str  # $TAAS_GO: a Go toolchain to try first ("" when unset)
    goproxy: str  # the first entry of $GOPROXY: where a missing toolchain is fetched from
    tmpdir: Path  # $TMPDIR: where the logs of a failed start are kept


def from_environment(env=os.environ) -> Settings:
    """Reads the settings; an empty variable counts as unset, as in the shell's ${VAR:-default}."""
    home = env.get("HOME") or os.path.expanduser("~")
    cache = env.get("TAAS_CACHE") or os.path.join(env.get("XDG_CACHE_HOME") or
                                                  os.path.join(home, ".cache"), "taas")
    return Settings(cache_root=Path(cache),
                    state_root=Path(env.get("TAAS_CLUSTER_STATE") or DEFAULT_STATE_ROOT),
                    start_timeout_s=_start_timeout(env.get("TAAS_CLUSTER_START_TIMEOUT")),
                    go=env.get("TAAS_GO") or "",
                    goproxy=(env.get("GOPROXY") or DEFAULT_GOPROXY).split(",")[0],
                    tmpdir=Path(env.get("TMPDIR") or "/tmp"))


def _start_timeout(text):
    if not text:
        return DEFAULT_START_TIMEOUT_S
    seconds = whole_number(text, 1, 86400)
    if seconds is None:
        raise Failure("TAAS_CLUSTER_START_TIMEOUT must be a whole number of seconds from 1 to "
                      f"86400, got '{text}'")
    return seconds
