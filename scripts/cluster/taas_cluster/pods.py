"""What a kubelet does to a pod and kwok does not: end it with an exit code (finish-pod), restart
a container in place (restart-container), write its container log (pod-log). The status patches
are built from the pod as read (pure, tested); the commands read, patch and report."""

import json
import re
import sys
import time

from .instance import Instance
from .manifests import pod_logs
from .report import Failure, say

MAIN_CONTAINER = "tensorflow"  # the container whose exit code is set; else the pod's first
POLL_S = 0.3
# Namespace and pod names as Kubernetes allows them (DNS-1123 subdomain): nothing else can name
# a file or an object.
_OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


# The most of a termination message the kubelet keeps (it cuts a longer file to this).
MAX_MESSAGE_BYTES = 4096

# ----------------------------------------------------------------------------------------------
# pure parts

def containers(pod) -> list:
    """[(name, image)] of the pod's spec.containers, skipping entries without a name."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    entries = spec.get("containers") if isinstance(spec, dict) else None
    found = []
    for c in entries if isinstance(entries, list) else []:
        if isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"]:
            found.append((c["name"], c.get("image") if isinstance(c.get("image"), str) else ""))
    return found


def phase(pod) -> str:
    status = pod.get("status") if isinstance(pod, dict) else None
    value = status.get("phase") if isinstance(status, dict) else None
    return value if isinstance(value, str) and value else "without a phase"


def main_container(names) -> str:
    names = list(names)
    return MAIN_CONTAINER if MAIN_CONTAINER in names else (names[0] if names else "")


def restart_counts(pod) -> dict:
    """{container name: restartCount} from the pod's status (0 where it is not a number)."""
    status = pod.get("status") if isinstance(pod, dict) else None
    entries = status.get("containerStatuses") if isinstance(status, dict) else None
    counts = {}
    for s in entries if isinstance(entries, list) else []:
        if isinstance(s, dict) and isinstance(s.get("name"), str):
            count = s.get("restartCount")
            counts[s["name"]] = count if type(count) is int and count >= 0 else 0
    return counts


def terminated(code, now) -> dict:
    return {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
            "startedAt": now, "finishedAt": now}


def finish_patch(pod, code, now, message=None) -> dict:
    """The status of `pod` ended: Succeeded when `code` is 0, else Failed; the main container
    exits with `code`, the others with 0. `message`, when given, is the main container's
    termination message (what the kubelet copies from its terminationMessagePath file)."""
    named = containers(pod)
    main = main_container(name for name, _ in named)
    statuses = [{"name": name, "image": image, "ready": False, "started": False,
                 "restartCount": 0,
                 "state": {"terminated": terminated(code if name == main else 0, now)}}
                for name, image in named]
    for status in statuses:
        if status["name"] == main and message is not None:
            status["state"]["terminated"]["message"] = message
    not_ready = {"status": "False", "reason": "PodCompleted" if code == 0 else "PodFailed",
                 "lastTransitionTime": now}
    return {"status": {
        "phase": "Succeeded" if code == 0 else "Failed",
        "containerStatuses": statuses,
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "Ready", **not_ready}, {"type": "ContainersReady", **not_ready}]}}


def restart_patch(pod, code, now) -> dict:
    """The status of `pod` after its main container exited with `code` and was started again in
    place: its restartCount + 1 and lastState.terminated; the others keep their count."""
    named = containers(pod)
    main = main_container(name for name, _ in named)
    counts = restart_counts(pod)
    statuses = []
    for name, image in named:
        status = {"name": name, "image": image, "ready": True, "started": True,
                  "restartCount": counts.get(name, 0)}
        if name == main:
            status["restartCount"] += 1
            status["lastState"] = {"terminated": terminated(code, now)}
        status["state"] = {"running": {"startedAt": now}}
        statuses.append(status)
    return {"status": {"phase": "Running", "containerStatuses": statuses}}


def cri_line(text, now_ns) -> str:
    """`text` as one line of a CRI container log (what kwok serves as `kubectl logs`)."""
    seconds, nanos = divmod(now_ns, 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{nanos:09d}Z stdout F {text}\n"


def read_message(path) -> str:
    """The termination message in file `path` as the kubelet reads it: at most MAX_MESSAGE_BYTES
    of it, as text."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_MESSAGE_BYTES)
    except OSError as e:
        raise Failure(f"--message-file {path}: {e.strerror}") from None
    return data.decode("utf-8", errors="replace")


def check_object_name(kind, name):
    if not _OBJECT_NAME.fullmatch(name):
        raise Failure(f"bad {kind} name '{name}': use lower-case letters, digits, '-' and '.' "
                      "(a Kubernetes object name)")


# ----------------------------------------------------------------------------------------------
# commands

def finish(instance: Instance, namespace, pod, code, timeout_s, message=None):
    before = _wait_running(instance, namespace, pod, timeout_s)
    patch = finish_patch(before, code, _now(), message)
    _patch_status(instance, namespace, pod, patch)
    main = main_container(name for name, _ in containers(before))
    say(f"pod {namespace}/{pod} is {patch['status']['phase']} (container {main} exit code {code})")


def restart(instance: Instance, namespace, pod, code, timeout_s):
    before = _wait_running(instance, namespace, pod, timeout_s)
    patch = restart_patch(before, code, _now())
    _patch_status(instance, namespace, pod, patch)
    main = main_container(name for name, _ in containers(before))
    restarts = next((s["restartCount"] for s in patch["status"]["containerStatuses"]
                     if s["name"] == main), 0)
    say(f"pod {namespace}/{pod}: container {main} exited with code {code} and was restarted in "
        f"place (restartCount {restarts})")


def append_log(instance: Instance, namespace, pod, lines):
    """Appends `lines` (else standard input, line by line as it comes) to the pod's log."""
    instance.require()
    log = instance.layout.pod_log(namespace, pod)
    if not log.exists():
        log.write_text("")
        result = instance.kubectl.run("apply", "-f", "-", stdin=pod_logs(namespace, pod, log))
        if not result.ok:
            log.unlink()
            raise Failure(f"creating the kwok Logs object for {namespace}/{pod} failed: "
                          f"{result.reason()}")
    with open(log, "a") as f:
        for line in lines or sys.stdin:
            f.write(cri_line(line.removesuffix("\n"), time.time_ns()))
            f.flush()


def _wait_running(instance: Instance, namespace, pod, timeout_s):
    """The pod once kwok has made it Running (a pod just created is Pending for a moment)."""
    instance.require()
    deadline = time.monotonic() + timeout_s
    while True:
        result = instance.kubectl.run("-n", namespace, "get", "pod", pod, "-o", "json")
        if not result.ok:
            raise Failure(f"cannot read pod {namespace}/{pod}: {result.reason()}")
        try:
            read = json.loads(result.out)
        except ValueError:
            raise Failure(f"cannot read pod {namespace}/{pod}: kubectl printed no JSON") from None
        now = phase(read)
        if now == "Running":
            return read
        if now in ("Succeeded", "Failed"):
            raise Failure(f"pod {namespace}/{pod} has already finished (phase {now})")
        if time.monotonic() >= deadline:
            raise Failure(f"pod {namespace}/{pod} is {now}, not Running, after {timeout_s}s; "
                          "only a Running pod can do that")
        time.sleep(POLL_S)


def _patch_status(instance: Instance, namespace, pod, patch):
    result = instance.kubectl.run("-n", namespace, "patch", "pod", pod, "--subresource=status",
                                  "--type=merge", "-p", json.dumps(patch))
    if not result.ok:
        raise Failure(f"patching the status of pod {namespace}/{pod} failed: {result.reason()}")


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
