"""Exclusive file locks (flock) between taas-cluster processes: one build per version, one
up/down per instance, one port pick at a time. Each wait for a lock is bounded."""

import fcntl
import os
import time

from .report import Failure

_POLL_S = 0.1


class FileLock:
    """An exclusive flock on `path` (created if missing), held until release() or the end of the
    process. The descriptor is not inherited by child processes, so a daemon started while it is
    held does not keep it."""

    def __init__(self, path):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def try_acquire(self) -> bool:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def acquire(self, timeout_s, waiting_for):
        """Waits up to `timeout_s` for the lock; a Failure names what was awaited."""
        deadline = time.monotonic() + timeout_s
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                raise Failure(f"{waiting_for} still holds {self.path} after {timeout_s:.0f} s")
            time.sleep(_POLL_S)

    def release(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
