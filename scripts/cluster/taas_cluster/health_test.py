"""Tests of health.py: the bounded wait on a fake clock, the readings of answers, and the probes
against real loopback servers (HTTP, and HTTPS with an instance PKI made by certs.py)."""

import http.server
import json
import socket
import ssl
import tempfile
import threading
import time
import unittest
from pathlib import Path

from . import certs, health


class FakeClock:
    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def counting(results):
    """A probe answering `results` in turn (the last one forever), counting its calls."""
    calls = []

    def probe():
        calls.append(1)
        return results[min(len(calls), len(results)) - 1]
    return probe, calls


class WaitUntil(unittest.TestCase):
    def wait(self, check, alive, timeout_s=10, poll_s=1):
        self.fake = FakeClock()
        return health.wait_until(check, alive, timeout_s, clock=self.fake.clock,
                                 sleep=self.fake.sleep, poll_s=poll_s)

    def test_ready_at_once_does_not_sleep(self):
        self.assertIs(self.wait(lambda: True, lambda: False), health.Outcome.READY)
        self.assertEqual(self.fake.sleeps, [])

    def test_ready_after_polls(self):
        check, calls = counting([False, False, True])
        self.assertIs(self.wait(check, lambda: True), health.Outcome.READY)
        self.assertEqual((len(calls), self.fake.sleeps), (3, [1, 1]))

    def test_exited_component_ends_the_wait(self):
        check, calls = counting([False])
        alive, _ = counting([True, False])
        self.assertIs(self.wait(check, alive), health.Outcome.EXITED)
        self.assertEqual(len(calls), 2)

    def test_deadline_bounds_the_wait(self):
        check, calls = counting([False])
        self.assertIs(self.wait(check, lambda: True, timeout_s=5, poll_s=2),
                      health.Outcome.TIMED_OUT)
        self.assertEqual(sum(self.fake.sleeps), 6)  # 0, 2, 4 then 6 >= 5
        self.assertEqual(len(calls), 4)

    def test_probe_passing_at_the_deadline_counts(self):
        check, _ = counting([False, False, True])
        self.assertIs(self.wait(check, lambda: True, timeout_s=2, poll_s=1), health.Outcome.READY)


class Readings(unittest.TestCase):
    def test_says_ok(self):
        self.assertTrue(health.says_ok(200, b"ok"))
        self.assertTrue(health.says_ok(200, b"ok\n"))
        self.assertFalse(health.says_ok(500, b"ok"))
        self.assertFalse(health.says_ok(200, b"[+]ping ok\nreadyz check failed"))
        self.assertFalse(health.says_ok(200, b"\xff\xfe"))

    def test_etcd_says_healthy(self):
        self.assertTrue(health.etcd_says_healthy(200, b'{"health":"true","reason":""}'))
        for status, body in ((200, b'{"health":"false"}'), (503, b'{"health":"true"}'),
                             (200, b'{"health":true}'), (200, b'["health"]'), (200, b"true"),
                             (200, b"<html>")):
            self.assertFalse(health.etcd_says_healthy(status, body), body)

    def test_count_ready_nodes(self):
        def node(*conditions):
            return {"status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}
        nodes = {"items": [node(("Ready", "True")), node(("MemoryPressure", "False"),
                                                          ("Ready", "True")),
                           node(("Ready", "False")), node(("Ready", "Unknown")), node()]}
        self.assertEqual(health.count_ready_nodes(nodes), 2)

    def test_count_ready_nodes_of_any_shape(self):
        for hostile in (None, [], "items", {"items": None}, {"items": [1, "x", None]},
                        {"items": [{"status": []}]}, {"items": [{"status": {"conditions": 5}}]},
                        {"items": [{"status": {"conditions": [7, {"type": "Ready"}]}}]}):
            self.assertEqual(health.count_ready_nodes(hostile), 0, hostile)


class Handler(http.server.BaseHTTPRequestHandler):
    """Answers what the test server's `routes` say: {path: (status, body)}."""

    def do_GET(self):
        status, body = self.server.routes.get(self.path, (404, b"not found"))
        if status is None:  # never answers: a hung component
            time.sleep(body)
            return
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_):
        pass


class Server:
    def __init__(self, routes, tls=None):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.routes = routes
        if tls:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PlainProbes(unittest.TestCase):
    def test_etcd_probe(self):
        server = Server({"/health": (200, b'{"health":"true","reason":""}')})
        self.addCleanup(server.close)
        self.assertTrue(health.etcd_healthy(server.port))

    def test_nobody_listening_is_no(self):
        self.assertFalse(health.etcd_healthy(closed_port()))
        self.assertIsNone(health.get(closed_port(), "/health"))

    def test_a_hung_component_is_bounded_by_the_probe_timeout(self):
        server = Server({"/health": (None, 3)})
        self.addCleanup(server.close)
        started = time.monotonic()
        self.assertIsNone(health.get(server.port, "/health", timeout_s=0.3))
        self.assertLess(time.monotonic() - started, 2)


class TlsProbes(unittest.TestCase):
    """An API server stand-in serving the instance's apiserver certificate and asking for a
    client certificate from the instance CA, as kube-apiserver does."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.pki = certs.Pki(Path(cls.tmp.name))
        cls.pki.create("unit")
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cls.pki.crt("apiserver"), cls.pki.key("apiserver"))
        tls.load_verify_locations(cls.pki.crt("ca"))
        tls.verify_mode = ssl.CERT_REQUIRED
        nodes = {"items": [{"status": {"conditions": [{"type": "Ready", "status": "True"}]}}]}
        cls.server = Server({
            "/readyz": (200, b"ok"), "/healthz": (200, b"ok"),
            "/api/v1/nodes?labelSelector=type%3Dkwok": (200, json.dumps(nodes).encode()),
            "/api/v1/namespaces/default/serviceaccounts/default": (200, b"{}")}, tls)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        cls.tmp.cleanup()

    def admin(self):
        tls = health.client_tls(self.pki.crt("ca"), self.pki.crt("admin"), self.pki.key("admin"))
        return health.AdminApi(self.server.port, tls)

    def test_admin_sees_the_api_server_ready(self):
        self.assertTrue(self.admin().ready())

    def test_nodes_and_objects(self):
        api = self.admin()
        self.assertTrue(api.nodes_ready("type=kwok", 1))
        self.assertFalse(api.nodes_ready("type=kwok", 2))
        self.assertTrue(api.exists("/api/v1/namespaces/default/serviceaccounts/default"))
        self.assertFalse(api.exists("/api/v1/namespaces/default/serviceaccounts/other"))

    def test_a_client_without_certificate_is_refused(self):
        tls = ssl.create_default_context(cafile=str(self.pki.crt("ca")))
        self.assertFalse(health.AdminApi(self.server.port, tls).ready())

    def test_a_server_of_another_ca_is_not_trusted(self):
        with tempfile.TemporaryDirectory() as other:
            pki = certs.Pki(Path(other))
            pki.create("other")
            tls = health.client_tls(pki.crt("ca"), pki.crt("admin"), pki.key("admin"))
            self.assertFalse(health.AdminApi(self.server.port, tls).ready())

    def test_healthz_of_a_component_with_its_own_certificate(self):
        # kube-controller-manager and kube-scheduler serve a certificate they made themselves
        # (here: one the probe's CA store does not hold) and ask no client certificate.
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(self.pki.crt("kwok"), self.pki.key("kwok"))
        server = Server({"/healthz": (200, b"ok")}, tls)
        self.addCleanup(server.close)
        self.assertTrue(health.healthz_ok(server.port))
        self.assertFalse(health.healthz_ok(closed_port()))
