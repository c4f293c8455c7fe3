"""Serving certificates for admission webhooks that run out of cluster, beside a test
control plane (scripts/cluster/taas-cluster): the API server calls them on 127.0.0.1 through a
clientConfig.url, so their certificate must be valid for that address and signed by a CA the
webhook configuration carries (caBundle). Shared by tests/conformance (Kubeflow's validation
webhook) and tests/kueue (Kueue's mutating and validating webhooks)."""

import os

from processes import run


def make_certs(d, org, ca_name, service_dns):
    """A CA (O=org, CN=ca_name) and a serving certificate signed by it for the webhook's service
    name (service_dns) and 127.0.0.1, written to d as ca.crt, ca.key, tls.crt and tls.key (keys in
    PKCS#1: some cert rotators parse no other form). Returns the four files' bytes by name."""
    os.makedirs(d, exist_ok=True)
    ca_key, ca_crt = os.path.join(d, "ca.key"), os.path.join(d, "ca.crt")
    key, csr, crt = (os.path.join(d, f) for f in ("tls.key", "tls.csr", "tls.crt"))
    ext = os.path.join(d, "ext.cnf")
    run(["openssl", "genrsa", "-traditional", "-out", ca_key, "2048"])
    run(["openssl", "req", "-x509", "-new", "-key", ca_key, "-days", "3650", "-out", ca_crt,
         "-subj", f"/O={org}/CN={ca_name}",
         "-addext", f"subjectAltName=DNS:{ca_name}",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,digitalSignature,keyEncipherment"])
    run(["openssl", "genrsa", "-traditional", "-out", key, "2048"])
    run(["openssl", "req", "-new", "-key", key, "-out", csr, "-subj", f"/CN={service_dns}"])
    with open(ext, "w") as f:
        f.write(f"subjectAltName=DNS:{service_dns},IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n")
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
         "-CAcreateserial", "-days", "3650", "-extfile", ext, "-out", crt])
    certs = {}
    for n in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        with open(os.path.join(d, n), "rb") as f:
            certs[n] = f.read()
    return certs
