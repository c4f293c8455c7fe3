"""Tests of certs.py and kubeconfig.py: what each certificate says, and real files made by
openssl in a temporary folder, checked with openssl."""

import os
import re
import stat
import subprocess
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from . import certs, kubeconfig
from .report import Failure


def openssl(*args) -> str:
    return subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True,
                          text=True).stdout


class Extensions(unittest.TestCase):
    def test_server_certificate_serves_its_names(self):
        ext = certs.API_SERVER.extensions()
        self.assertIn("extendedKeyUsage=serverAuth\n", ext)
        self.assertNotIn("clientAuth", ext)
        names = re.search(r"^subjectAltName=(.*)$", ext, re.MULTILINE).group(1).split(",")
        for name in ("IP:127.0.0.1", "IP:10.96.0.1", "DNS:kubernetes.default.svc"):
            self.assertIn(name, names)

    def test_client_certificate_has_no_names(self):
        for spec in certs.CLIENTS + (certs.COSCHEDULER,):
            ext = spec.extensions()
            self.assertIn("extendedKeyUsage=clientAuth\n", ext, spec.name)
            self.assertNotIn("subjectAltName", ext, spec.name)
            self.assertIn("basicConstraints=CA:FALSE\n", ext, spec.name)

    def test_identities(self):
        self.assertEqual(certs.ADMIN.subject, "/O=system:masters/CN=taas-admin")
        self.assertEqual(certs.SCHEDULER.subject, "/CN=system:kube-scheduler")
        self.assertEqual([c.name for c in certs.CLIENTS],
                         ["admin", "controller-manager", "scheduler", "kwok"])
        self.assertEqual(certs.ca_subject("t1"), "/CN=taas-cluster-t1-ca")


class RealPki(unittest.TestCase):
    """One instance's PKI made once with openssl, read back with openssl."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.pki = certs.Pki(Path(cls.tmp.name) / "pki")
        cls.pki.create("unit")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def text(self, name):
        return openssl("x509", "-in", self.pki.crt(name), "-noout", "-text", "-nameopt", "compat")

    def test_every_certificate_is_signed_by_the_ca(self):
        for spec in (certs.API_SERVER, *certs.CLIENTS):
            out = openssl("verify", "-CAfile", self.pki.crt("ca"), self.pki.crt(spec.name))
            self.assertIn("OK", out, spec.name)

    def test_ca_names_the_instance(self):
        self.assertIn("Subject: CN=taas-cluster-unit-ca", self.text("ca"))

    def test_api_server_certificate_is_for_loopback_and_the_service(self):
        text = self.text("apiserver")
        self.assertIn("IP Address:127.0.0.1", text)
        self.assertIn("DNS:kubernetes.default.svc.cluster.local", text)
        self.assertIn("TLS Web Server Authentication", text)
        self.assertIn("ASN1 OID: prime256v1", text)

    def test_admin_is_in_system_masters(self):
        text = self.text("admin")
        self.assertIn("Subject: O=system:masters, CN=taas-admin", text)
        self.assertIn("TLS Web Client Authentication", text)
        self.assertNotIn("Subject Alternative Name", text)

    def test_private_keys_are_owner_only(self):
        for name in ("ca", "sa", "apiserver", *(c.name for c in certs.CLIENTS)):
            mode = stat.S_IMODE(os.stat(self.pki.key(name)).st_mode)
            self.assertEqual(mode, 0o600, name)

    def test_service_account_public_key_matches_its_private_key(self):
        derived = openssl("ec", "-in", self.pki.key("sa"), "-pubout")
        self.assertEqual(derived, self.pki.service_account_public.read_text())

    def test_no_requests_or_extension_files_are_left(self):
        left = sorted(p.name for p in self.pki.folder.iterdir()
                      if p.suffix in (".csr", ".ext"))
        self.assertEqual(left, [])

    def test_a_later_certificate_is_signed_by_the_same_ca(self):
        self.pki.issue(certs.COSCHEDULER)
        out = openssl("verify", "-CAfile", self.pki.crt("ca"), self.pki.crt("coscheduler"))
        self.assertIn("OK", out)


class Failures(unittest.TestCase):
    def test_missing_openssl_is_named(self):
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(os.environ, {"PATH": tmp}):
            with self.assertRaisesRegex(Failure, "creating the CA certificate failed: openssl is "
                                                 "not installed"):
                certs.Pki(Path(tmp) / "pki").create("unit")

    def test_openssl_error_is_shown(self):
        with tempfile.TemporaryDirectory() as tmp:
            pki = certs.Pki(Path(tmp))
            with self.assertRaisesRegex(Failure, "creating the admin certificate with openssl "
                                                 "failed: .+"):
                pki.issue(certs.ADMIN)  # no CA yet


class Kubeconfig(unittest.TestCase):
    def test_render_embeds_the_identity(self):
        text = kubeconfig.render("t1", "https://127.0.0.1:23456", "admin", b"CA", b"CERT", b"KEY")
        servers = re.findall(r"^\s*server:\s*(\S+)\s*$", text, re.MULTILINE)
        self.assertEqual(servers, ["https://127.0.0.1:23456"])
        self.assertIn("certificate-authority-data: Q0E=\n", text)
        self.assertIn("client-certificate-data: Q0VSVA==\n", text)
        self.assertIn("client-key-data: S0VZ\n", text)
        self.assertIn("current-context: taas-t1\n", text)
        self.assertIn("- name: admin\n", text)

    def test_written_file_is_owner_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            pki = certs.Pki(Path(tmp))
            for name in ("ca", "kwok"):
                pki.crt(name).write_text(f"{name} crt")
            pki.key("kwok").write_text("kwok key")
            path = Path(tmp) / "kwok.kubeconfig"
            kubeconfig.write(path, "t1", 20001, pki, "kwok")
            self.assertEqual(stat.S_IMODE(path.stat().st_mode), 0o600)
            self.assertIn("server: https://127.0.0.1:20001\n", path.read_text())
