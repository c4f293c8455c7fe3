"""Health of an instance's components: probes that make one loopback HTTP(S) request each and
answer yes or no (never raise), the pure readings of their answers, and the bounded wait for a
probe to pass while the component's process stays alive."""

import enum
import json
import ssl
import time
import urllib.parse

PROBE_TIMEOUT_S = 5
POLL_S = 0.2
# A node list of a few thousand kwok nodes is a few MB; nothing we ask for is near this.
MAX_BODY_BYTES = 64 << 20


class Outcome(enum.Enum):
    READY = "ready"
    EXITED = "exited"
    TIMED_OUT = "timed out"


def wait_until(check, alive, timeout_s, clock=time.monotonic, sleep=time.sleep,
               poll_s=POLL_S) -> Outcome:
    """Polls `check` every `poll_s` until it passes (READY), `alive` turns false (EXITED) or
    `timeout_s` has passed (TIMED_OUT); `check` is tried once more than `alive`."""
    deadline = clock() + timeout_s
    while not check():
        if not alive():
            return Outcome.EXITED
        if clock() >= deadline:
            return Outcome.TIMED_OUT
        sleep(poll_s)
    return Outcome.READY


# ----------------------------------------------------------------------------------------------
# readings of answers (pure)

def says_ok(status, body: bytes) -> bool:
    """A /healthz or /readyz answer that passes: 200 with a line that is exactly "ok"."""
    return status == 200 and "ok" in body.decode("utf-8", "replace").splitlines()


def etcd_says_healthy(status, body: bytes) -> bool:
    """etcd's /health answer that passes: 200 and {"health":"true", ...}."""
    if status != 200:
        return False
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return isinstance(answer, dict) and answer.get("health") == "true"


def count_ready_nodes(node_list) -> int:
    """How many nodes of a NodeList (parsed JSON of any shape) have condition Ready=True."""
    items = node_list.get("items") if isinstance(node_list, dict) else None
    ready = 0
    for node in items if isinstance(items, list) else []:
        status = node.get("status") if isinstance(node, dict) else None
        conditions = status.get("conditions") if isinstance(status, dict) else None
        ready += any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
                     for c in (conditions if isinstance(conditions, list) else []))
    return ready


# ----------------------------------------------------------------------------------------------
# requests

def client_tls(ca, cert, key) -> ssl.SSLContext:
    """TLS as a client of the instance: the server verified against its CA, our certificate."""
    context = ssl.create_default_context(cafile=str(ca))
    context.load_cert_chain(str(cert), str(key))
    return context


def unverified_tls() -> ssl.SSLContext:
    """For /healthz of components that serve a self-signed certificate made at start."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def get(port, path, tls=None, timeout_s=PROBE_TIMEOUT_S):
    """(status, body) of GET http(s)://127.0.0.1:port/path, or None when it did not answer."""
    # Imported here: it takes most of the start-up time of commands that never probe (build).
    import http.client  # pylint: disable=import-outside-toplevel
    if tls is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    else:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout_s, context=tls)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read(MAX_BODY_BYTES)
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def etcd_healthy(port) -> bool:
    answer = get(port, "/health")
    return answer is not None and etcd_says_healthy(*answer)


def healthz_ok(port) -> bool:
    answer = get(port, "/healthz", unverified_tls())
    return answer is not None and says_ok(*answer)


class AdminApi:
    """The instance's API server as its admin: GETs for readiness and what `up` waits for."""

    def __init__(self, port, tls: ssl.SSLContext):
        self.port = port
        self.tls = tls

    def ready(self) -> bool:
        answer = get(self.port, "/readyz", self.tls)
        return answer is not None and says_ok(*answer)

    def get_json(self, path):
        """The parsed answer to GET `path`, or None unless it answered 200 with JSON."""
        answer = get(self.port, path, self.tls)
        if answer is None or answer[0] != 200:
            return None
        try:
            return json.loads(answer[1])
        except ValueError:
            return None

    def nodes_ready(self, label_selector, count) -> bool:
        query = urllib.parse.urlencode({"labelSelector": label_selector})
        nodes = self.get_json(f"/api/v1/nodes?{query}")
        return count_ready_nodes(nodes) == count

    def exists(self, path) -> bool:
        return self.get_json(path) is not None
