"""The instance's certificates, made with openssl: a CA (ECDSA P-256), a serving certificate for
the API server, a client certificate per identity, and the service-account token signing pair.
What each certificate says (subject, names, usage) is plain data, so it is tested without
openssl; `Pki` writes the files."""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .report import Failure

CURVE = "prime256v1"
VALID_DAYS = 3650
_OPENSSL_TIMEOUT_S = 60

# The names a client may use for the API server: loopback, and the in-cluster Service names and
# ClusterIP (first address of --service-cluster-ip-range) that pods are given.
API_SERVER_NAMES = ("IP:127.0.0.1", "IP:10.96.0.1", "DNS:localhost", "DNS:kubernetes",
                    "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
                    "DNS:kubernetes.default.svc.cluster.local")


@dataclass(frozen=True)
class CertSpec:
    """A certificate signed by the instance CA: `name` is its file stem in the PKI folder. One
    with `alt_names` serves TLS for them; one without is a client identity (the subject's O is
    the group, CN the user)."""

    name: str
    subject: str
    alt_names: tuple = ()

    def extensions(self) -> str:
        """The X.509 v3 extensions, in openssl's extfile syntax."""
        lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment"]
        if self.alt_names:
            lines += ["extendedKeyUsage=serverAuth", "subjectAltName=" + ",".join(self.alt_names)]
        else:
            lines.append("extendedKeyUsage=clientAuth")
        return "\n".join(lines) + "\n"


API_SERVER = CertSpec("apiserver", "/CN=kube-apiserver", API_SERVER_NAMES)
# The identities with a kubeconfig; "admin" is the user's (cluster-admin through system:masters).
ADMIN = CertSpec("admin", "/O=system:masters/CN=taas-admin")
CONTROLLER_MANAGER = CertSpec("controller-manager", "/CN=system:kube-controller-manager")
SCHEDULER = CertSpec("scheduler", "/CN=system:kube-scheduler")
KWOK = CertSpec("kwok", "/O=system:masters/CN=kwok")
# system:masters: the system:kube-scheduler role does not cover PodGroups and ElasticQuotas.
COSCHEDULER = CertSpec("coscheduler", "/O=system:masters/CN=taas-coscheduler")
CLIENTS = (ADMIN, CONTROLLER_MANAGER, SCHEDULER, KWOK)


def ca_subject(instance):
    return f"/CN=taas-cluster-{instance}-ca"


class Pki:
    """The PKI folder of one instance: <name>.crt and <name>.key per certificate, ca.*, sa.*."""

    def __init__(self, folder: Path):
        self.folder = folder

    def crt(self, name) -> Path:
        return self.folder / f"{name}.crt"

    def key(self, name) -> Path:
        return self.folder / f"{name}.key"

    @property
    def service_account_public(self) -> Path:
        return self.folder / "sa.pub"

    def create(self, instance):
        """The CA, the API server's and every client's certificate, and the signing pair."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._new_key(self.key("ca"), "CA certificate")
        self._openssl("CA certificate", "req", "-x509", "-new", "-key", self.key("ca"), "-subj",
                      ca_subject(instance), "-days", str(VALID_DAYS), "-sha256", "-out",
                      self.crt("ca"))
        for spec in (API_SERVER, *CLIENTS):
            self.issue(spec)
        what = "service-account key pair"
        self._new_key(self.key("sa"), what)
        self._openssl(what, "ec", "-in", self.key("sa"), "-pubout", "-out",
                      self.service_account_public)

    def issue(self, spec: CertSpec):
        """<name>.key and <name>.crt for `spec`, signed by the CA."""
        what = f"{spec.name} certificate"
        key, csr, ext = (self.folder / f"{spec.name}.{suffix}" for suffix in ("key", "csr", "ext"))
        self._new_key(key, what)
        self._openssl(what, "req", "-new", "-key", key, "-subj", spec.subject, "-out", csr)
        ext.write_text(spec.extensions())
        self._openssl(what, "x509", "-req", "-in", csr, "-CA", self.crt("ca"), "-CAkey",
                      self.key("ca"), "-CAcreateserial", "-days", str(VALID_DAYS), "-sha256",
                      "-extfile", ext, "-out", self.crt(spec.name))
        csr.unlink()
        ext.unlink()

    def _new_key(self, path: Path, what):
        # Created 0600 before openssl writes to it: a private key is never readable by others.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        self._openssl(what, "ecparam", "-name", CURVE, "-genkey", "-noout", "-out", path)

    @staticmethod
    def _openssl(what, *args):
        command = ["openssl", *map(str, args)]
        try:
            p = subprocess.run(command, capture_output=True, text=True,
                               timeout=_OPENSSL_TIMEOUT_S)
        except FileNotFoundError:
            raise Failure(f"creating the {what} failed: openssl is not installed") from None
        except subprocess.TimeoutExpired:
            raise Failure(f"creating the {what} with openssl did not finish within "
                          f"{_OPENSSL_TIMEOUT_S} s") from None
        if p.returncode != 0:
            raise Failure(f"creating the {what} with openssl failed: {p.stderr.strip()}")
