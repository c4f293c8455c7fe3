"""Kubeconfig files of an instance: one per identity, with the CA, client certificate and key
embedded, so a file alone reaches the API server (tests read its one `server:` line)."""

import base64
import os
from pathlib import Path

from .certs import Pki


def render(instance, server_url, user, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> str:
    def b64(data):
        return base64.b64encode(data).decode("ascii")

    return f"""apiVersion: v1
kind: Config
clusters:
- name: taas-{instance}
  cluster:
    server: {server_url}
    certificate-authority-data: {b64(ca_pem)}
users:
- name: {user}
  user:
    client-certificate-data: {b64(cert_pem)}
    client-key-data: {b64(key_pem)}
contexts:
- name: taas-{instance}
  context:
    cluster: taas-{instance}
    user: {user}
current-context: taas-{instance}
"""


def write(path: Path, instance, api_port, pki: Pki, user):
    """Writes the kubeconfig of `user` (a certificate name in `pki`), mode 0600: it holds a key."""
    text = render(instance, f"https://127.0.0.1:{api_port}", user, pki.crt("ca").read_bytes(),
                  pki.crt(user).read_bytes(), pki.key(user).read_bytes())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
