"""Tests of supervise.py with real processes: a component is ours only while its command line
names the state folder, `stop_all` ends it, and a death is explained."""

import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from . import supervise

SLEEPER = "import sys, time; time.sleep(float(sys.argv[1]))"
ORDER = ("kwok", "etcd")
# Writes when it got SIGTERM to argv[1], takes argv[2] seconds to shut down, writes when it ended.
SLOW_STOPPER = """
import signal, sys, time
def stop(*_):
    with open(sys.argv[1], "a") as f:
        f.write(f"term {time.monotonic()}\\n")
    time.sleep(float(sys.argv[2]))
    with open(sys.argv[1], "a") as f:
        f.write(f"exit {time.monotonic()}\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
with open(sys.argv[1], "a") as f:
    f.write("ready 0\\n")
time.sleep(60)
"""


class ProcStat(unittest.TestCase):
    def test_states(self):
        self.assertTrue(supervise.state_is_running("42 (etcd) S 1 42 42 0"))
        self.assertFalse(supervise.state_is_running("42 (etcd) Z 1 42 42 0"))
        # The command name may hold ") " itself: the state follows the last one.
        self.assertTrue(supervise.state_is_running("42 (a) Z (b) R 1 42"))
        self.assertFalse(supervise.state_is_running(""))

    def test_this_process_runs_and_a_free_pid_does_not(self):
        self.assertTrue(supervise.pid_running(os.getpid()))
        self.assertFalse(supervise.pid_running(2**22 + 1))

    def test_bind_failure(self):
        log = "starting\nlisten tcp 127.0.0.1:2379: bind: address already in use\nexit\n"
        self.assertEqual(supervise.bind_failure(log),
                         "listen tcp 127.0.0.1:2379: bind: address already in use")
        self.assertEqual(supervise.bind_failure("failed to listen: Address already in use"),
                         "failed to listen: Address already in use")
        self.assertEqual(supervise.bind_failure("panic: nil map\n"), "")


class Components(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.state = Path(self.tmp.name) / "inst"
        self.components = supervise.Components(self.state)
        self.addCleanup(self.tmp.cleanup)
        self.addCleanup(self.components.stop_all, ORDER)  # runs first: the pids are in tmp

    def start(self, component, seconds, *args):
        self.components.start(component, [sys.executable, "-c", SLEEPER, seconds, *args])

    def test_started_component_is_alive_until_stopped(self):
        self.start("etcd", "60", f"{self.state}/")
        self.assertTrue(self.components.alive("etcd"))
        pid = self.components.pid_of("etcd")
        self.assertEqual(os.getsid(pid), pid)  # its own session: it outlives `up`
        self.components.stop_all(ORDER)
        self.assertFalse(self.components.alive("etcd"))
        self.assertFalse(supervise.pid_running(pid))

    def test_stopped_one_after_the_other(self):
        # etcd gets SIGTERM only once kwok, stopped first, has ended.
        for component in ORDER:
            self.components.start(component, [sys.executable, "-c", SLOW_STOPPER,
                                              self.state / f"{component}.times", "0.5",
                                              f"{self.state}/"])
        self.wait_for_handlers("kwok", "etcd")
        self.components.stop_all(ORDER)
        kwok = dict(line.split() for line in (self.state / "kwok.times").read_text().splitlines())
        etcd = dict(line.split() for line in (self.state / "etcd.times").read_text().splitlines())
        self.assertLessEqual(float(kwok["exit"]), float(etcd["term"]))

    def test_a_component_ignoring_sigterm_is_killed_at_the_deadline(self):
        self.components.start("etcd", [sys.executable, "-c", SLOW_STOPPER,
                                       self.state / "etcd.times", "60", f"{self.state}/"])
        self.wait_for_handlers("etcd")
        pid = self.components.pid_of("etcd")
        started = time.monotonic()
        with mock.patch.object(supervise, "STOP_GRACE_S", 0.5):
            self.components.stop_all(ORDER)
        self.assertLess(time.monotonic() - started, 5)
        self.assertFalse(supervise.pid_running(pid))

    def wait_for_handlers(self, *components):
        """Waits (30 s at most) until each started SLOW_STOPPER has its SIGTERM handler."""
        deadline = time.monotonic() + 30
        for component in components:
            times = self.state / f"{component}.times"
            while not (times.exists() and "ready" in times.read_text()):
                self.assertLess(time.monotonic(), deadline, f"{component} never got ready")
                time.sleep(0.05)

    def test_a_child_is_alive_while_its_command_line_is_not_yet_readable(self):
        # Between vfork's return and the end of exec, /proc/<pid>/cmdline reads empty.
        self.start("etcd", "60", f"{self.state}/")
        with mock.patch.object(Path, "read_bytes", return_value=b""):
            self.assertTrue(self.components.alive("etcd"))
        self.components.stop_all(ORDER)
        self.assertFalse(self.components.alive("etcd"))

    def test_a_recycled_pid_is_not_the_component(self):
        self.components.pids.mkdir(parents=True)
        (self.components.pids / "etcd").write_text(f"{os.getpid()}\n")
        self.assertFalse(self.components.alive("etcd"))
        self.components.stop_all(ORDER)  # and it is never signalled
        self.assertTrue(supervise.pid_running(os.getpid()))

    def test_a_process_of_another_state_folder_is_not_ours(self):
        other = subprocess.Popen([sys.executable, "-c", SLEEPER, "60", f"{self.state}-other/"])
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        self.components.pids.mkdir(parents=True)
        (self.components.pids / "etcd").write_text(f"{other.pid}\n")
        self.assertFalse(self.components.alive("etcd"))
        self.components.stop_all(ORDER)
        self.assertIsNone(other.poll())

    def test_hostile_pid_files(self):
        self.components.pids.mkdir(parents=True)
        for text in ("", "abc", "-1", "1 2", "99999999999999"):
            (self.components.pids / "etcd").write_text(text)
            self.assertIsNone(self.components.pid_of("etcd"), text)
            self.assertFalse(self.components.alive("etcd"), text)

    def test_a_death_by_a_taken_port_is_explained(self):
        self.components.start("kwok", [sys.executable, "-c",
                                       "print('bind: address already in use')", f"{self.state}/"])
        deadline = time.monotonic() + 30
        while self.components.alive("kwok") and time.monotonic() < deadline:
            time.sleep(0.05)
        port_taken, message = self.components.death_report("kwok")
        self.assertTrue(port_taken)
        self.assertEqual(message, "kwok could not bind its port: bind: address already in use")

    def test_another_death_shows_the_log(self):
        self.components.start("kwok", [sys.executable, "-c", "print('boom')", f"{self.state}/"])
        deadline = time.monotonic() + 30
        while self.components.alive("kwok") and time.monotonic() < deadline:
            time.sleep(0.05)
        port_taken, message = self.components.death_report("kwok")
        self.assertFalse(port_taken)
        self.assertIn("kwok exited; last lines of", message)
        self.assertTrue(message.endswith(":\nboom"), message)

    def test_rss_of_a_live_component(self):
        self.start("etcd", "60", f"{self.state}/")
        self.assertGreater(self.components.rss_kib("etcd"), 0)
        self.assertEqual(self.components.rss_kib("kwok"), 0)
