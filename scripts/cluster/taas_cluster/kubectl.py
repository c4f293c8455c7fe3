"""The cached kubectl, run against one instance as its admin, each call bounded."""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .report import Failure

TIMEOUT_S = 120


@dataclass(frozen=True)
class Result:
    ok: bool
    out: str  # standard output: what was asked for
    err: str  # standard error: warnings, or why it failed

    def reason(self) -> str:
        return (self.err or self.out).strip()


class Kubectl:
    def __init__(self, bin_dir: Path, kubeconfig: Path):
        self.binary = bin_dir / "kubectl"
        self.base = [str(self.binary), "--kubeconfig", str(kubeconfig)]

    def run(self, *args, stdin=None, timeout_s=TIMEOUT_S) -> Result:
        argv = [*self.base, *map(str, args)]
        try:
            p = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                               timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return Result(False, "", f"kubectl {' '.join(map(str, args))} did not finish within "
                                     f"{timeout_s} s")
        except OSError as error:
            raise Failure(f"cannot run {self.binary}: {error}") from None
        return Result(p.returncode == 0, p.stdout, p.stderr)

    def replace_process(self, args):
        """Becomes `kubectl ARGS` (the `kubectl` command): its exit status is ours."""
        try:
            os.execv(self.binary, [*self.base, *args])
        except OSError as error:
            raise Failure(f"cannot run {self.binary}: {error}") from None
