#!/usr/bin/env python3
"""Hostile HTTP against the real taas-ui binary (over a tiny fake API server, fake_kube.py).

Every request is sent on a raw socket and its exact status asserted; no answer may carry a file
from outside the assets folder (the token file, /etc/hostname, /etc/passwd); an authorized
request keeps succeeding while the attack runs and after it.

usage: ui_hostile_http.py --ui PATH/TO/taas-ui
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_kube import FakeKube  # noqa: E402

TOKEN = "hostile-suite-token-0123456789abcdefghij"
INDEX = b"<!doctype html><title>taas hostile suite</title>"
SECRETS = [TOKEN.encode(), b"root:x:0:0"]
try:
    SECRETS.append(open("/etc/hostname", "rb").read().strip())
except OSError:
    pass

LIMITS = ["--max-connections", "16", "--idle-timeout", "2", "--header-timeout", "1",
          "--body-timeout", "1", "--max-body-bytes", "65536", "--max-header-bytes", "16384",
          "--max-follow", "3", "--max-log-bytes", "65536", "--write-timeout", "5"]
AUTH = "Authorization: Bearer %s\r\n" % TOKEN


def exchange(port, data, timeout=6.0, later=b"", pause=0.0, read=True):
    """Sends `data` (then `later` after `pause`) and reads until the server closes or `timeout`."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered before reading it all (a refused size); read the answer
        if later:
            time.sleep(pause)
            try:
                s.sendall(later)
            except OSError:
                pass
        answer = b""
        deadline = time.time() + timeout
        while read and time.time() < deadline:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            answer += chunk
        return answer


def status_of(answer):
    try:
        return int(answer.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def request(method, target, headers="", body=b"", auth=False, version="HTTP/1.1"):
    head = "%s %s %s\r\nHost: ui\r\nConnection: close\r\n%s%s" % (
        method, target, version, AUTH if auth else "", headers)
    if body:
        head += "Content-Length: %d\r\n" % len(body)
    return head.encode("latin-1") + b"\r\n" + body


class Suite:
    def __init__(self, port, fake):
        self.port = port
        self.fake = fake
        self.failures = []
        self.count = 0

    def check(self, name, data, expected, contains=None, **kwargs):
        answer = exchange(self.port, data, **kwargs)
        self.count += 1
        status = status_of(answer)
        problems = []
        if status != expected:
            problems.append("status %d, expected %d" % (status, expected))
        for secret in SECRETS:
            if secret and secret in answer:
                problems.append("the answer carries a file from outside the assets")
        if contains is not None and contains not in answer:
            problems.append("the answer lacks %r" % contains)
        if problems:
            self.failures.append("%s: %s (answer: %r)" % (name, "; ".join(problems), answer[:300]))
        return answer


def start_ui(ui, kube_port, workdir):
    assets = os.path.join(workdir, "assets")
    os.makedirs(os.path.join(assets, "assets"))
    with open(os.path.join(assets, "index.html"), "wb") as f:
        f.write(INDEX)
    with open(os.path.join(assets, "assets", "app.js"), "wb") as f:
        f.write(b"console.log(1)")
    os.symlink("/etc/hostname", os.path.join(assets, "hostname-link.txt"))
    token_file = os.path.join(workdir, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    kubeconfig = os.path.join(workdir, "kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write("""apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "http://127.0.0.1:%d"}}]
users: [{name: fake, user: {token: fake}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
current-context: fake
""" % kube_port)
    proc = subprocess.Popen(
        [ui, "--kubeconfig", kubeconfig, "--namespaces", "default", "--token-file", token_file,
         "--listen", "127.0.0.1:0", "--assets", assets,
         "--metrics-target", "default/mnist-worker-0=127.0.0.1:1"] + LIMITS,
        stdout=subprocess.PIPE, stderr=open(os.path.join(workdir, "ui.log"), "wb"))
    line = proc.stdout.readline().decode()
    if "serving http://" not in line:
        proc.kill()
        sys.exit("taas-ui did not start: %r; log:\n%s" % (
            line, open(os.path.join(workdir, "ui.log")).read()))
    port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
    return proc, port


def path_cases(t):
    for target in ["//etc/hostname", "//etc/passwd", "/../etc/hostname", "/../../../../etc/passwd",
                   "/%2e%2e/%2e%2e/etc/passwd", "/%2E%2E%2Fetc%2Fpasswd",
                   "/assets/..%2f..%2fetc/hostname", "/..%5c..%5cetc%5chostname", "/%00",
                   "/index.html%00.js", "/%c0%ae%c0%ae/etc/passwd", "/%u002e%u002e/etc/passwd",
                   "/%2f%2fetc%2fhostname", "//api/v1/config", "/assets/missing.js",
                   "/hostname-link.txt", "/%", "/assets//app.js"]:
        t.check("GET " + target, request("GET", target), 404)
    t.check("backslashes", request("GET", "/..\\..\\etc\\hostname"), 404)
    t.check("a built file", request("GET", "/assets/app.js"), 200, b"console.log(1)")
    t.check("an app route", request("GET", "/jobs/default/mnist"), 200, INDEX)
    t.check("a route named like a file elsewhere", request("GET", "/proc/self/environ"), 200, INDEX)
    t.check("a long route", request("GET", "/" + "a" * 8000), 200, INDEX)
    t.check("a path over the header limit", request("GET", "/" + "a" * 20000), 431)
    t.check("API climbing out", request("GET", "/api/v1/../../etc/passwd", auth=True), 404)
    t.check("encoded namespace climbing out",
            request("GET", "/api/v1/namespaces/..%2f..%2fkube-system/tfjobs", auth=True), 400)
    t.check("another namespace", request("GET", "/api/v1/namespaces/kube-system/tfjobs", auth=True),
            403)


def method_cases(t):
    t.check("PUT config", request("PUT", "/api/v1/config", auth=True), 405)
    t.check("TRACE", request("TRACE", "/"), 405)
    t.check("an unknown method", request("FOO", "/"), 405)
    t.check("DELETE a file", request("DELETE", "/index.html"), 405)
    t.check("CONNECT", request("CONNECT", "127.0.0.1:22"), 405)
    t.check("NUL in the method", b"G\x00T / HTTP/1.1\r\nHost: ui\r\n\r\n", 400)
    t.check("HTTP/2.0", request("GET", "/", version="HTTP/2.0"), 400)
    t.check("HTTP/0.9", b"GET /\r\n\r\n", 400)


def header_cases(t):
    t.check("two Authorization headers", request("GET", "/api/v1/config", AUTH, auth=True), 400)
    t.check("two Host headers", request("GET", "/", "Host: other\r\n"), 400)
    t.check("two Content-Lengths", request("POST", "/api/v1/namespaces/default/tfjobs",
                                           "Content-Length: 5\r\nContent-Length: 6\r\n",
                                           auth=True), 400)
    t.check("a header without a colon", request("GET", "/", "NoColonHere\r\n"), 400)
    t.check("a 20 KB header", request("GET", "/", "X-Big: %s\r\n" % ("a" * 20000)), 431)
    t.check("2000 headers", request("GET", "/", "".join("X-%d: v\r\n" % i for i in range(2000))),
            431)
    t.check("NUL in a header", request("GET", "/", "X-Nul: a\x00b\r\n"), 400)
    t.check("a negative Content-Length", request("POST", "/api/v1/namespaces/default/tfjobs",
                                                 "Content-Length: -1\r\n", auth=True), 400)
    t.check("a 23-digit Content-Length",
            request("POST", "/api/v1/namespaces/default/tfjobs",
                    "Content-Length: 99999999999999999999999\r\n", auth=True), 400)


def token_cases(t):
    t.check("no token", request("GET", "/api/v1/tfjobs"), 401)
    t.check("a wrong token", request("GET", "/api/v1/tfjobs", "Authorization: Bearer nope\r\n"), 401)
    t.check("a longer token", request("GET", "/api/v1/tfjobs",
                                       "Authorization: Bearer %sx\r\n" % TOKEN), 401)
    t.check("a Basic scheme", request("GET", "/api/v1/tfjobs", "Authorization: Basic %s\r\n" % TOKEN),
            401)
    t.check("a 1 MB token", request("GET", "/api/v1/tfjobs",
                                    "Authorization: Bearer %s\r\n" % ("t" * 1000000)), 431)
    t.check("the token in the query", request("GET", "/api/v1/tfjobs?token=" + TOKEN), 401)
    t.check("the scheme in lower case",
            request("GET", "/api/v1/tfjobs", "Authorization: bearer %s\r\n" % TOKEN), 200)


def body_cases(t):
    create = "/api/v1/namespaces/default/tfjobs"
    t.check("a 10 MB body announced", request("POST", create, "Content-Length: 10485760\r\n",
                                              auth=True), 413)
    t.check("a 100 KB body sent", request("POST", create, body=b"{" + b" " * 100000 + b"}",
                                          auth=True), 413)
    t.check("malformed JSON", request("POST", create, body=b'{"name": ', auth=True), 400)
    t.check("a JSON array", request("POST", create, body=b"[1,2,3]", auth=True), 422)
    t.check("deep nesting", request("POST", create, body=b"[" * 30000 + b"]" * 30000, auth=True),
            422)
    t.check("wrong types", request("POST", create, auth=True,
                                   body=b'{"name":1,"image":[],"workerReplicas":"x","chief":"y"}'),
            422)
    t.check("huge numbers", request("POST", create, auth=True,
                                    body=b'{"name":"a","image":"i","workerReplicas":1e308,'
                                         b'"psReplicas":-9223372036854775809}'), 422)
    t.check("a clone named with a number",
            request("POST", create + "/mnist/clone", body=b'{"name":5}', auth=True), 422)
    t.check("a body shorter than announced",
            request("POST", create, "Content-Length: 100\r\n", auth=True) + b"{", 408)
    chunked = request("POST", create, "Transfer-Encoding: chunked\r\n", auth=True)
    t.check("a bad chunk size", chunked + b"zz\r\n{}\r\n0\r\n\r\n", 400)
    t.check("a 2^64 chunk size", chunked + b"ffffffffffffffffff\r\n{}\r\n0\r\n\r\n", 400)
    t.check("chunks over the body limit",
            chunked + b"".join(b"4000\r\n" + b" " * 0x4000 + b"\r\n" for _ in range(5)) +
            b"0\r\n\r\n", 413)
    t.check("Content-Length and chunked",
            request("POST", create, "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                    auth=True) + b"0\r\n\r\n", 400)


def log_cases(t):
    logs = "/api/v1/namespaces/default/tfjobs/mnist/pods/mnist-worker-0/logs"
    t.check("tailLines too big", request("GET", logs + "?tailLines=1000000", auth=True), 400)
    t.check("tailLines negative", request("GET", logs + "?tailLines=-1", auth=True), 400)
    t.check("limitBytes too big", request("GET", logs + "?limitBytes=99999999999", auth=True), 400)
    answer = t.check("limitBytes", request("GET", logs + "?limitBytes=100", auth=True), 200,
                     b"loss=2.3")
    # The UI server keeps the log's end within limitBytes itself (ui_server::LogWindow): the API
    # server's limitBytes would keep the first bytes, so it is asked once, without one.
    if (t.fake.count(lambda p: "/log?" in p) != 1 or
            t.fake.count(lambda p: "/log?" in p and "limitBytes" in p) != 0):
        t.failures.append("the log was not read once from the API server without limitBytes")
    body = answer.split(b"\r\n\r\n", 1)[-1]
    if len(body) > 100 + 64:  # the window, and a chunked answer's framing
        t.failures.append("the answer to limitBytes=100 holds %d bytes" % len(body))
    started = time.time()
    t.check("a followed stream ends", request("GET", logs + "?follow=true", auth=True), 200,
            b"longest follow", timeout=10)
    if time.time() - started > 6:
        t.failures.append("the followed stream outlived --max-follow 3 s")
    ended = t.fake.follows_ended
    exchange(t.port, request("GET", logs + "?follow=true", auth=True), timeout=0.5)
    for _ in range(40):
        if t.fake.follows_ended > ended:
            break
        time.sleep(0.05)
    else:
        t.failures.append("a followed stream went on upstream after its client left")
    t.count += 1


def slow_cases(t):
    t.check("slow-loris headers", b"GET / HTTP/1.1\r\n", 408, later=b"X-A: 1\r\n", pause=0.5)
    started = time.time()
    idle = exchange(t.port, b"", timeout=6)
    if idle or time.time() - started > 4:
        t.failures.append("an idle connection was not closed after --idle-timeout 2 s")
    t.count += 1


def exhaustion_cases(t):
    idle = [socket.create_connection(("127.0.0.1", t.port)) for _ in range(16)]
    time.sleep(0.3)
    t.check("past the connection limit", request("GET", "/api/v1/config", auth=True), 503,
            b"limit of 16 connections")
    for s in idle:
        s.close()
    time.sleep(0.5)
    t.check("after the idle ones left", request("GET", "/api/v1/config", auth=True), 200)


def cluster_cases(t):
    for _ in range(5):
        t.check("the cluster page", request("GET", "/api/v1/cluster", auth=True), 200, b"node-0")
    # One probe of the permission (limit=1), then the informer's one list.
    lists = t.fake.count(lambda p: p.startswith("/api/v1/pods?") and "watch" not in p and
                         p != "/api/v1/pods?limit=1")
    if lists != 1:
        t.failures.append("the cluster page listed all pods %d times, not once (informer)" % lists)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ui", required=True)
    args = parser.parse_args()
    fake = FakeKube()
    with tempfile.TemporaryDirectory(prefix="taas-ui-hostile-") as workdir:
        proc, port = start_ui(args.ui, fake.port, workdir)
        suite = Suite(port, fake)
        authorized = {"ok": 0, "failed": []}
        stop = threading.Event()
        paused = threading.Event()

        def keep_asking():
            # An authorized user, all along (except while every connection is taken on purpose).
            while not stop.is_set():
                if not paused.is_set():
                    status = status_of(exchange(port, request("GET", "/api/v1/tfjobs", auth=True)))
                    if status == 200:
                        authorized["ok"] += 1
                    elif not paused.is_set():
                        authorized["failed"].append(status)
                time.sleep(0.2)

        user = threading.Thread(target=keep_asking)
        user.start()
        try:
            for cases in (path_cases, method_cases, header_cases, token_cases, body_cases,
                          log_cases, slow_cases, cluster_cases):
                cases(suite)
            paused.set()
            time.sleep(0.5)
            exhaustion_cases(suite)
            paused.clear()
            time.sleep(0.5)
        finally:
            stop.set()
            user.join()
        suite.check("after the attack", request("GET", "/api/v1/tfjobs", auth=True), 200, b"mnist")
        if proc.poll() is not None:
            suite.failures.append("taas-ui exited with %d" % proc.returncode)
        proc.terminate()
        proc.wait(timeout=10)
        if authorized["failed"] or authorized["ok"] == 0:
            suite.failures.append("the authorized user got %s (%d answered 200)" % (
                authorized["failed"], authorized["ok"]))
        print("%d hostile requests; the authorized user got %d answers 200 during the attack" % (
            suite.count, authorized["ok"]))
        if suite.count < 50:
            suite.failures.append("only %d hostile requests" % suite.count)
        for failure in suite.failures:
            print("FAIL " + failure)
        if suite.failures:
            print(open(os.path.join(workdir, "ui.log")).read()[-4000:])
        return 1 if suite.failures else 0


if __name__ == "__main__":
    sys.exit(main())
