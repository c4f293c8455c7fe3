"""Tests of ports.py: reading /proc/net/tcp, picking ports, the ports file, and reserving under
the lock, against real sockets and files in a temporary folder."""

import os
import random
import socket
import tempfile
import threading
import unittest
from pathlib import Path

from . import ports
from .report import Failure

# Two listening sockets (127.0.0.1:8080 and 0.0.0.0:22), one established connection.
PROC_NET_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0
   2: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 99 1 0
"""
PROC_NET_TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0
"""


def listener(port=0):
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def listener_in_range():
    """A listening socket on a port of the range picked from (the kernel's own are above it)."""
    for port in range(ports.PORT_LOW + 500, ports.PORT_LOW + 600):
        try:
            return listener(port)
        except OSError:
            continue
    raise unittest.SkipTest("no port free in 20500-20599 to listen on")


class ParseListening(unittest.TestCase):
    def test_listening_sockets_by_port(self):
        self.assertEqual(ports.parse_listening(PROC_NET_TCP), {8080: {4242}, 22: {17}})

    def test_ipv6_table(self):
        self.assertEqual(ports.parse_listening(PROC_NET_TCP6), {8080: {777}})

    def test_malformed_lines_are_skipped(self):
        text = PROC_NET_TCP.splitlines()[0] + "\n   0: garbage 0A\n   1: 0100007F:ZZZZ x x 0A\n"
        self.assertEqual(ports.parse_listening(text), {})

    def test_a_real_listener_is_seen_and_its_holder_named(self):
        with listener() as s:
            port = s.getsockname()[1]
            self.assertIn(port, ports.listening())
            self.assertTrue(ports.listens_on(os.getpid(), port))
            self.assertIn(f"(pid {os.getpid()})", ports.holder(port))
        self.assertNotIn(port, ports.listening())
        self.assertFalse(ports.listens_on(os.getpid(), port))
        self.assertEqual(ports.holder(port), "")

    def test_another_process_on_the_port_is_not_ours(self):
        with listener() as s:
            parent = os.getppid()
            self.assertFalse(ports.listens_on(parent, s.getsockname()[1]))


class Pick(unittest.TestCase):
    def test_distinct_in_range_and_not_used(self):
        used = set(range(ports.PORT_LOW, ports.PORT_LOW + 11000))
        picked = ports.pick(6, used, random.Random(1))
        self.assertEqual(len(set(picked)), 6)
        for port in picked:
            self.assertTrue(ports.PORT_LOW <= port <= ports.PORT_HIGH)
            self.assertNotIn(port, used)

    def test_same_seed_same_ports(self):
        self.assertEqual(ports.pick(3, set(), random.Random(7)),
                         ports.pick(3, set(), random.Random(7)))

    def test_the_last_free_port_is_found_and_then_none(self):
        used = set(range(ports.PORT_LOW, ports.PORT_HIGH))  # only PORT_HIGH is free
        self.assertEqual(ports.pick(1, used, random.Random(3)), [ports.PORT_HIGH])
        with self.assertRaisesRegex(Failure, "could not find 2 free loopback ports"):
            ports.pick(2, used, random.Random(3))


class PortsFile(unittest.TestCase):
    def test_round_trip(self):
        recorded = {"etcd": 20001, "etcd-peer": 20002, "apiserver": 31999}
        self.assertEqual(ports.parse_ports_file(ports.format_ports_file(recorded)), recorded)
        self.assertEqual(ports.format_ports_file({"kwok": 20005}), "kwok=20005\n")

    def test_hostile_lines_are_skipped(self):
        text = "etcd=20001\n=5\nkwok=99999\napiserver=-1\n$(rm)=20003\nscheduler=0\nx=20004 \n"
        self.assertEqual(ports.parse_ports_file(text), {"etcd": 20001, "x": 20004})


class Reserve(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def instance(self, name):
        (self.root / name).mkdir()
        return self.root / name / "ports"

    def record_all_but(self, name, free):
        """Instance `name` has recorded every port of the range except `free`."""
        taken = {f"p{port}": port for port in range(ports.PORT_LOW, ports.PORT_HIGH + 1)
                 if port not in free}
        self.instance(name).write_text(ports.format_ports_file(taken))

    def test_recorded_ports_are_not_picked_again(self):
        self.record_all_but("a", {20100, 20200, 31999})
        got = ports.reserve(self.root, self.instance("b"), ("etcd", "apiserver"))
        self.assertLessEqual(set(got.values()), {20100, 20200, 31999})
        with self.assertRaisesRegex(Failure, "could not find 2 free"):
            ports.reserve(self.root, self.instance("c"), ("etcd", "apiserver"))

    def test_fixed_port_is_kept_and_never_picked_for_another(self):
        self.record_all_but("a", {25000, 25001})
        path = self.instance("b")
        got = ports.reserve(self.root, path, ("etcd", "apiserver"), {"apiserver": 25000})
        self.assertEqual(got, {"etcd": 25001, "apiserver": 25000})
        self.assertEqual(path.read_text(), "etcd=25001\napiserver=25000\n")

    def test_listening_ports_are_not_picked(self):
        with listener_in_range() as s:
            busy = s.getsockname()[1]
            self.record_all_but("a", {busy, 20100})
            got = ports.reserve(self.root, self.instance("b"), ("etcd",))
        self.assertEqual(got, {"etcd": 20100})

    def test_later_reservations_are_appended(self):
        path = self.instance("a")
        ports.reserve(self.root, path, ("etcd",))
        ports.reserve(self.root, path, ("coscheduler",))
        self.assertEqual(list(ports.read_ports_file(path)), ["etcd", "coscheduler"])

    def test_concurrent_reservations_never_share_a_port(self):
        paths = [self.instance(f"i{n}") for n in range(8)]
        # Every thread proposes the same sequence: only the lock keeps them apart.
        def reserve(path):
            rng = random.Random(42)
            ports.reserve(self.root, path, ("a", "b", "c", "d", "e", "f"), rng=rng)
        threads = [threading.Thread(target=reserve, args=(p,)) for p in paths]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        picked = [port for p in paths for port in ports.read_ports_file(p).values()]
        self.assertEqual(len(picked), 48)
        self.assertEqual(len(set(picked)), 48)
