"""End-to-end test of the web UI a local run serves: `taas run` on a tiny linear-regression job
(1 PS, 1 worker that is the chief) prints one `UI: http://127.0.0.1:PORT/#token=...` line; its
API is checked over HTTP (401 without or with a wrong token, the TFJob and its pods, the devices
each replica reported (cpu), a log tail, a followed log, a killed chief's exit and restart as pod
state and events, the local node, a clear error on create/delete, the loss scraped from the
chief), the UI stays up after the job with --keep-ui, and Ctrl-C then exits with the job's own
code.
Also: the default port falls back to a free one when 8080 is taken, and --no-ui serves nothing.

usage: local_ui_test.py BUILD_DIR     (python3 standard library only)
"""
import json
import os
import signal
import socket
import tempfile
import time
import urllib.error
import urllib.request

from multiprocess_test import Launch  # `taas run` in the background, with its output lines

TYPES = [("PS", 1), ("Worker", 1)]


def call(base, method, path, token=None, body=None, timeout=10):
    """(status, body text) of one API request."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + "/api/v1/" + path, data=data, method=method)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def poll(what, fn, timeout=60):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = fn()
            if value:
                return value
        except (AssertionError, OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {last}")


def main_run(tmp):
    job = "local-ui"
    run = Launch(tmp, job, TYPES, {"TF_MAX_STEPS": "250", "TAAS_SAVE_CHECKPOINTS_STEPS": "25"},
                 args=["--step_ms=40"], flags=["--ui-port", "0", "--keep-ui"])
    m = run.wait_for(r"^\[taas\] UI: (http://127\.0\.0\.1:(\d+))/#token=([A-Za-z0-9]{20,})$")
    base, token = m.group(1), m.group(3)
    assert sum(1 for l in run.snapshot() if " UI: " in l) == 1, "one UI line"

    # The token guards every API path.
    assert call(base, "GET", "tfjobs")[0] == 401
    assert call(base, "GET", "tfjobs", token="wrong")[0] == 401
    assert call(base, "GET", f"namespaces/default/tfjobs/{job}/pods/{job}-worker-0/logs")[0] == 401

    # The job and its replicas, as the UI sees them.
    status, body = call(base, "GET", "tfjobs", token)
    assert status == 200, (status, body)
    rows = json.loads(body)["items"]
    assert [r["name"] for r in rows] == [job], rows
    assert rows[0]["namespace"] == "default"
    detail = poll("both replicas running", lambda: (lambda d: d if all(
        p["phase"] == "Running" for p in d["job"]["pods"]) else None)(
        json.loads(call(base, "GET", f"namespaces/default/tfjobs/{job}", token)[1])))
    pods = detail["job"]["pods"]
    assert [p["name"] for p in pods] == [f"{job}-ps-0", f"{job}-worker-0"], pods
    assert all(p["node"] == "localhost" and p["startTime"] for p in pods), pods
    assert detail["job"]["replicasText"] == "PS 1/1 \u00b7 Worker 1/1", detail["job"]
    assert any(e["reason"] == "Started" and e["object"] == f"Pod/{job}-worker-0"
               for e in detail["events"]), detail["events"]

    # The devices each running replica reported (its device info metric), read once the job
    # page shows it running: `cpu` for both here.
    def devices():
        d = json.loads(call(base, "GET", f"namespaces/default/tfjobs/{job}", token)[1])
        got = {p["name"]: p.get("devices") for p in d["job"]["pods"]}
        return got if all(v is not None for v in got.values()) else None
    got = poll("both replicas' devices", devices, timeout=30)
    assert got == {f"{job}-ps-0": ["cpu"], f"{job}-worker-0": ["cpu"]}, got

    # A log tail of the chief: its own lines only, at most tailLines of them.
    def tail():
        status, text = call(base, "GET",
                            f"namespaces/default/tfjobs/{job}/pods/{job}-worker-0/logs?tailLines=3",
                            token)
        assert status == 200, (status, text)
        lines = text.splitlines()
        return lines if len(lines) == 3 and any("step=" in l for l in lines) else None
    lines = poll("a log tail with training steps", tail)
    assert not any(l.startswith("[") and "] " in l[:40] for l in lines), lines  # no prefixes

    # A followed log streams while the replica runs.
    req = urllib.request.Request(
        base + f"/api/v1/namespaces/default/tfjobs/{job}/pods/{job}-worker-0/logs"
        "?tailLines=1&follow=true", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=30) as r:
        got = b""
        while got.count(b"\n") < 3:
            chunk = r.read1(4096)
            if not chunk:
                break
            got += chunk
    assert got.count(b"\n") >= 3, got

    # The chief is killed (exit 137, transient under ExitCode): the launcher starts it again, and
    # the UI shows the exit, the restart and the marker in its log.
    run.wait_for(rf"^\[{job}-worker-0\] .*saved checkpoint")
    pid = int(run.wait_for(rf"^\[taas\] started {job}-worker-0 pid=(\d+)").group(1))
    os.kill(pid, signal.SIGKILL)
    run.wait_for(rf"^\[taas\] started {job}-worker-0 pid=\d+ .*\(restart 1\)")

    def restarted():
        d = json.loads(call(base, "GET", f"namespaces/default/tfjobs/{job}", token)[1])
        w = [p for p in d["job"]["pods"] if p["name"] == f"{job}-worker-0"][0]
        return d if w["restarts"] == 1 and w["phase"] == "Running" and w["exitCode"] == 137 else None
    detail = poll("worker-0 restarted once", restarted)
    assert detail["job"]["restarts"] >= 1, detail["job"]
    events = [(e["type"], e["reason"], e["object"]) for e in detail["events"]]
    assert ("Warning", "Exited", f"Pod/{job}-worker-0") in events, events
    assert ("Normal", "Restarted", f"Pod/{job}-worker-0") in events, events
    status, text = call(base, "GET", f"namespaces/default/tfjobs/{job}/pods/{job}-worker-0/logs",
                        token)
    assert status == 200 and "[taas] restart 1: pid=" in text, text[-2000:]

    # Writes answer a clear error; the job is untouched.
    status, body = call(base, "POST", "namespaces/default/tfjobs", token,
                        {"name": "another", "image": "taas/trainer:1"})
    assert status == 405 and "not supported in a local run" in json.loads(body)["error"], body
    status, body = call(base, "DELETE", f"namespaces/default/tfjobs/{job}", token)
    assert status == 405 and "not supported in a local run" in json.loads(body)["error"], body

    # The cluster page: this machine as one node without GPUs.
    cluster = json.loads(call(base, "GET", "cluster", token)[1])
    assert [n["name"] for n in cluster["nodes"]] == ["localhost"], cluster
    assert cluster["nodes"][0]["capacity"]["cpu"] >= 1, cluster
    assert cluster["totals"]["allocatable"]["gpu"] == 0, cluster

    # The loss charts' points, scraped from the chief's metrics port.
    metrics = poll("two scraped points with a loss", lambda: (lambda m: m if len(
        [p for p in m["points"] if p["loss"] is not None]) >= 2 else None)(
        json.loads(call(base, "GET", f"namespaces/default/tfjobs/{job}/metrics", token)[1])),
        timeout=90)
    assert metrics["latest"]["step"] > 0, metrics["latest"]

    # The job ends; --keep-ui keeps serving its final state.
    run.wait_for(rf"^\[taas\] job {job} succeeded", timeout=120)
    run.wait_for(r"^\[taas\] the UI keeps serving http://127\.0\.0\.1:\d+/#token=")
    detail = poll("the final state", lambda: (lambda d: d if d["job"]["state"] == "Succeeded"
                                              else None)(json.loads(call(
                                                  base, "GET", f"namespaces/default/tfjobs/{job}",
                                                  token)[1])))
    worker = [p for p in detail["job"]["pods"] if p["name"] == f"{job}-worker-0"][0]
    assert worker["phase"] == "Succeeded" and worker["exitCode"] == 0, worker
    assert any(e["reason"] == "TFJobSucceeded" for e in detail["events"]), detail["events"]
    status, text = call(base, "GET", f"namespaces/default/tfjobs/{job}/pods/{job}-worker-0/logs",
                        token)
    assert status == 200 and "step=250" in text, text[-2000:]
    assert run.proc.poll() is None, "the launcher left while --keep-ui"

    # Ctrl-C ends it with the job's exit code.
    run.proc.send_signal(signal.SIGINT)
    code = run.finish()
    assert code == 0, code
    try:
        call(base, "GET", "tfjobs", token, timeout=2)
        raise AssertionError("the UI still answers after the launcher left")
    except OSError:
        pass


def default_port_and_no_ui(tmp):
    # The default port 8080 falls back to a free port when it is taken.
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8080))
        holder.listen(1)
    except OSError:
        pass  # taken by someone else: the fallback is exercised all the same
    run = Launch(tmp, "port", TYPES, {"TF_MAX_STEPS": "20"})
    m = run.wait_for(r"^\[taas\] UI: http://127\.0\.0\.1:(\d+)/#token=")
    assert int(m.group(1)) != 8080, m.group(0)
    assert run.finish() == 0
    holder.close()

    run = Launch(tmp, "quiet", TYPES, {"TF_MAX_STEPS": "20"}, flags=["--no-ui"])
    assert run.finish() == 0
    assert not any(" UI: " in l for l in run.snapshot()), "--no-ui printed a UI line"


def main():
    with tempfile.TemporaryDirectory(prefix="taas-local-ui-") as tmp:
        main_run(tmp)
        default_port_and_no_ui(tmp)
    print("ok")


if __name__ == "__main__":
    main()
