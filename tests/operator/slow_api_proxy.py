#!/usr/bin/env python3
"""A TCP proxy that makes an API server slow, for leader-election tests.

It forwards byte streams between clients and one upstream (the real API server) without looking
at them: TLS passes through untouched, so a kubeconfig pointing at the proxy only changes the port
(the control plane's certificate is valid for 127.0.0.1). Two controls, switchable while it runs:

  set_delay(seconds)  every chunk read, in either direction, is forwarded `seconds` after it was
                      read (0: pass-through). A chunk already held is released by the new value.
  set_stall(bool)     while true, no byte is forwarded in either direction.

Every socket operation has a timeout, every thread is a daemon, and close() tears everything down
(listener and connections) within about a second.

Manual use: slow_api_proxy.py --upstream 127.0.0.1:6443 --delay 3
"""

import argparse
import os
import re
import select
import socket
import threading
import time

POLL_SECONDS = 0.1  # how often a blocked thread looks at the controls and at close()
CHUNK_BYTES = 64 * 1024


class SlowApiProxy:
    def __init__(self, upstream_host, upstream_port, listen_host="127.0.0.1",
                 connect_timeout=5.0, send_timeout=10.0):
        self._upstream = (upstream_host, upstream_port)
        self._connect_timeout = connect_timeout
        self._send_timeout = send_timeout
        self._cond = threading.Condition()
        self._delay = 0.0  # guarded by _cond
        self._stall = False  # guarded by _cond
        self._closed = False  # guarded by _cond
        self._connections = set()  # guarded by _cond
        self.accepted = 0  # guarded by _cond; for the test's log
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((listen_host, 0))
        self._listener.listen(64)
        self._listener.settimeout(POLL_SECONDS)
        self.port = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, name="proxy-accept",
                                          daemon=True)
        self._acceptor.start()

    # ---- controls ----
    def set_delay(self, seconds):
        if not seconds >= 0:
            raise ValueError(f"delay must be >= 0 seconds, got {seconds!r}")
        with self._cond:
            self._delay = float(seconds)
            self._cond.notify_all()

    def set_stall(self, stall):
        with self._cond:
            self._stall = bool(stall)
            self._cond.notify_all()

    def close(self):
        with self._cond:
            self._closed = True
            connections = list(self._connections)
            self._cond.notify_all()
        for conn in connections:
            conn.abort()
        self._acceptor.join(timeout=5)
        self._listener.close()
        for conn in connections:
            conn.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- internals ----
    def _is_closed(self):
        with self._cond:
            return self._closed

    def _hold(self, read_at):
        """Waits until a chunk read at `read_at` may go out; False once the proxy is closed."""
        with self._cond:
            while not self._closed:
                if not self._stall:
                    remaining = read_at + self._delay - time.monotonic()
                    if remaining <= 0:
                        return True
                    self._cond.wait(min(remaining, POLL_SECONDS))
                else:
                    self._cond.wait(POLL_SECONDS)
            return False

    def _accept_loop(self):
        while not self._is_closed():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return  # the listener was closed
            try:
                upstream = socket.create_connection(self._upstream, timeout=self._connect_timeout)
            except OSError:
                client.close()  # the client sees a reset, as with an unreachable server
                continue
            conn = _Connection(self, client, upstream)
            with self._cond:
                if self._closed:
                    conn.abort()
                    conn.close_sockets()
                    return
                self._connections.add(conn)
                self.accepted += 1
            conn.start()

    def _forget(self, conn):
        with self._cond:
            self._connections.discard(conn)


class _Connection:
    """One client connection and its upstream: a pump thread per direction."""

    def __init__(self, proxy, client, upstream):
        self._proxy = proxy
        self._sockets = (client, upstream)
        for s in self._sockets:
            s.settimeout(proxy._send_timeout)  # bounds sendall; reads wait in select first
        self._lock = threading.Lock()
        self._running = 2  # guarded by _lock: pumps still running
        self._aborted = threading.Event()
        self._threads = [
            threading.Thread(target=self._pump, args=(client, upstream), name="proxy-up",
                             daemon=True),
            threading.Thread(target=self._pump, args=(upstream, client), name="proxy-down",
                             daemon=True),
        ]

    def start(self):
        for t in self._threads:
            t.start()

    def join(self, timeout):
        for t in self._threads:
            if t.ident is not None:
                t.join(timeout)

    def abort(self):
        # shutdown (not close) wakes the other pump's select/recv without freeing its descriptor,
        # which a new socket could otherwise reuse under it.
        self._aborted.set()
        for s in self._sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close_sockets(self):
        for s in self._sockets:
            s.close()

    def _pump(self, src, dst):
        try:
            while not self._aborted.is_set():
                try:
                    readable, _, _ = select.select([src], [], [], POLL_SECONDS)
                except (OSError, ValueError):
                    break
                if not readable:
                    continue
                try:
                    data = src.recv(CHUNK_BYTES)
                except OSError:
                    break
                if not data:
                    # End of stream: pass the half-close on once every held byte has gone out.
                    try:
                        dst.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    with self._lock:
                        if self._running > 1:
                            return  # the other direction may still carry a response
                    break
                if not self._proxy._hold(time.monotonic()):
                    break
                try:
                    dst.sendall(data)
                except OSError:  # includes socket.timeout: the peer stopped reading
                    break
            self.abort()
        finally:
            with self._lock:
                self._running -= 1
                last = self._running == 0
            if last:
                self.close_sockets()
                self._proxy._forget(self)


def kubeconfig_server(path):
    """The (host, port) of the only `server:` URL in a kubeconfig written by taas-cluster."""
    with open(path) as f:
        text = f.read()
    servers = re.findall(r"^\s*server:\s*(\S+)\s*$", text, flags=re.M)
    if len(servers) != 1:
        raise ValueError(f"{path}: expected exactly one server URL, found {len(servers)}")
    m = re.fullmatch(r"https://(127\.0\.0\.1|localhost):(\d{1,5})/?", servers[0])
    if not m or not 0 < int(m.group(2)) < 65536:
        raise ValueError(f"{path}: server {servers[0]!r} is not https://127.0.0.1:PORT")
    return m.group(1), int(m.group(2))


def write_proxied_kubeconfig(src, dst, proxy_port):
    """Copies kubeconfig `src` to `dst` with the server's port replaced by `proxy_port`."""
    host, _ = kubeconfig_server(src)
    with open(src) as f:
        text = f.read()
    text, n = re.subn(r"^(\s*server:\s*)\S+\s*$", rf"\g<1>https://{host}:{proxy_port}", text,
                      flags=re.M)
    if n != 1:
        raise ValueError(f"{src}: replaced {n} server URLs, expected 1")
    # 0600 like the original: it holds the client's private key.
    with os.fdopen(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT")
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(":")
    proxy = SlowApiProxy(host, int(port))
    proxy.set_delay(args.delay)
    print(f"listening on 127.0.0.1:{proxy.port}, delay {args.delay}s; Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        proxy.close()


if __name__ == "__main__":
    main()
