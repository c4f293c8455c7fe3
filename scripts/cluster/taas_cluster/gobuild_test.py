"""Tests of gobuild.py: the readings of go.mod, go's answers and its build log (pure), the cache
stamp against sha256sum, and the toolchain fetch (curl and unzip) from a loopback proxy."""

import http.server
import io
import os
import subprocess
import tempfile
import threading
import unittest
import zipfile
from pathlib import Path
from unittest import mock

from . import gobuild
from .report import Failure
from .settings import Settings


class Readings(unittest.TestCase):
    def test_go_versions(self):
        self.assertEqual(gobuild.required_go_minor("module x\n\ngo 1.26.0\n"), 26)
        self.assertEqual(gobuild.required_go_minor("module x\n"), None)
        self.assertEqual(gobuild.go_minor("go1.26.8"), 26)
        self.assertEqual(gobuild.go_minor("devel go1.27-abc"), None)
        self.assertEqual(gobuild.go_minor(""), None)

    def test_tools_of_the_pinned_module(self):
        packages = gobuild.tool_packages((gobuild.MODULE_DIR / "go.mod").read_text())
        self.assertIn("go.etcd.io/etcd/server/v3", packages)
        self.assertIn("sigs.k8s.io/kwok/cmd/kwok", packages)
        # Every binary `up` runs comes from one tool (etcd's is named after server/v3).
        names = {p.rstrip("/").split("/")[-1] for p in packages}
        self.assertEqual(names - {"v3"} | {"etcd"}, set(gobuild.BINARIES))
        self.assertEqual(gobuild.tool_packages("module x\n"), [])

    def test_version_ldflags(self):
        flags = gobuild.version_ldflags("v1.36.3")
        self.assertTrue(flags.startswith("-s -w "))
        self.assertIn("-X k8s.io/component-base/version.gitVersion=v1.36.3", flags)
        self.assertIn("version.gitMajor=1 ", flags)
        self.assertIn("version.gitMinor=36 ", flags)

    def test_failed_packages(self):
        log = ("# k8s.io/a/b\nb.go:1: error\n# k8s.io/c\nc.go:2: error\n# k8s.io/a/b\n"
               "not # k8s.io/x\n")
        self.assertEqual(gobuild.failed_packages(log), ["k8s.io/a/b", "k8s.io/c"])

    def test_stamp_is_what_sha256sum_prints(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp, "go.mod"), Path(tmp, "go.sum")
            a.write_bytes(b"module x\n")
            b.write_bytes(b"x v1 h1:abc\n")
            out = subprocess.run(f"cat {a} {b} | sha256sum", shell=True, check=True,
                                 capture_output=True, text=True).stdout.split()[0]
            self.assertEqual(gobuild.build_stamp(a.read_bytes(), b.read_bytes()), out)


def toolchain_zip(version) -> bytes:
    """A stand-in of golang.org/toolchain@VERSION: bin/go, executable, answering GOVERSION."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as z:
        info = zipfile.ZipInfo(f"golang.org/toolchain@{version}/bin/go")
        info.external_attr = 0o755 << 16
        z.writestr(info, "#!/bin/sh\necho go1.26.0\n")
    return data.getvalue()


class FetchToolchain(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        machine = os.uname().machine
        if machine not in ("x86_64", "amd64"):
            self.skipTest(f"the stand-in proxy serves linux-amd64 only, this is {machine}")
        self.version = "v0.0.1-go1.26.0.linux-amd64"
        routes = {f"/golang.org/toolchain/@v/{self.version}.zip": toolchain_zip(self.version)}

        class Proxy(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = routes.get(self.path)
                self.send_response(200 if body else 404)
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *_):
                pass

        self.proxy = http.server.HTTPServer(("127.0.0.1", 0), Proxy)
        threading.Thread(target=self.proxy.serve_forever, daemon=True).start()
        self.addCleanup(self.proxy.server_close)
        self.addCleanup(self.proxy.shutdown)

    def settings(self, proxy_path=""):
        return Settings(cache_root=Path(self.tmp.name), state_root=Path(self.tmp.name),
                        start_timeout_s=1, go="",
                        goproxy=f"http://127.0.0.1:{self.proxy.server_port}{proxy_path}",
                        tmpdir=Path(self.tmp.name))

    def test_fetched_into_the_cache_and_reused(self):
        with mock.patch("taas_cluster.gobuild.say"):
            go = gobuild._fetch_toolchain(self.settings(), 26)
        self.assertEqual(go, f"{self.tmp.name}/go-toolchain/{self.version}/bin/go")
        self.assertEqual(gobuild.go_version(go), "go1.26.0")
        left = sorted(p.name for p in Path(self.tmp.name, "go-toolchain").iterdir())
        self.assertEqual(left, [self.version])  # no zip, no staging folder
        self.proxy.shutdown()  # a second lookup needs no proxy
        self.assertEqual(gobuild._fetch_toolchain(self.settings(), 26), go)

    def test_a_proxy_without_it_is_named(self):
        with mock.patch("taas_cluster.gobuild.say"):
            with self.assertRaisesRegex(Failure, "build step 'fetch Go toolchain' failed: could "
                                                 "not download golang.org/toolchain@v0.0.1-go1."
                                                 "26.0.linux-amd64"):
                gobuild._fetch_toolchain(self.settings("/nothing"), 26)
