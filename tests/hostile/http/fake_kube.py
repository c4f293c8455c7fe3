"""A tiny Kubernetes API server for the UI's hostile-HTTP suite: one TFJob `default/mnist`, its
pod, one node, a FailedScheduling event, pod logs (followed ones trickle until the client goes),
and LIST + WATCH for the UI's informers. It records every path asked for."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

JOB = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
       "metadata": {"name": "mnist", "namespace": "default", "uid": "u1",
                    "creationTimestamp": "2026-11-22T00:00:00Z", "resourceVersion": "1"},
       "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
           "containers": [{"name": "tensorflow", "image": "taas/trainer:1"}]}}}}},
       "status": {"conditions": [{"type": "Running", "status": "True"}]}}
POD = {"metadata": {"name": "mnist-worker-0", "namespace": "default", "resourceVersion": "1",
                    "labels": {"training.kubeflow.org/job-name": "mnist"}},
       "spec": {"nodeName": "node-0", "containers": [{"name": "tensorflow"}]},
       "status": {"phase": "Running"}}
NODE = {"metadata": {"name": "node-0", "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi"},
                   "capacity": {"cpu": "8", "memory": "32Gi"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}
EVENT = {"metadata": {"name": "e1", "namespace": "default", "resourceVersion": "1"},
         "involvedObject": {"kind": "Pod", "name": "mnist-worker-0", "namespace": "default"},
         "reason": "FailedScheduling", "message": "0/1 nodes", "type": "Warning"}


class FakeKube:
    def __init__(self):
        self.paths = []
        self.follows_ended = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def send_json(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urlsplit(self.path)
                query = parse_qs(url.query)
                with fake.lock:
                    fake.paths.append(self.path)
                if "watch" in query:
                    return self.hold_watch()
                path = url.path
                if path.endswith("/log"):
                    return self.logs("follow" in query)
                lists = {"/apis/kubeflow.org/v1/namespaces/default/tfjobs": [JOB],
                         "/api/v1/namespaces/default/pods": [POD], "/api/v1/pods": [POD],
                         "/api/v1/nodes": [NODE], "/api/v1/namespaces/default/events": [EVENT]}
                if path in lists:
                    return self.send_json(200, {"kind": "List", "items": lists[path],
                                                "metadata": {"resourceVersion": "1"}})
                if path == "/apis/kubeflow.org/v1/namespaces/default/tfjobs/mnist":
                    return self.send_json(200, JOB)
                if path == "/api/v1/namespaces/default/pods/mnist-worker-0":
                    return self.send_json(200, POD)
                self.send_json(404, {"kind": "Status", "code": 404, "message": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake.lock:
                    fake.paths.append(self.path)
                self.send_json(201, body)

            def hold_watch(self):
                # A watch that stays quiet, as a watch on an idle cluster does.
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    time.sleep(30)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass
                self.close_connection = True

            def logs(self, follow):
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    line = b"step=1 loss=2.3\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                    deadline = time.time() + (120 if follow else 0)
                    while time.time() < deadline:
                        time.sleep(0.2)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass
                if follow:
                    with fake.lock:
                        fake.follows_ended += 1
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, predicate):
        with self.lock:
            return sum(1 for p in self.paths if predicate(p))
