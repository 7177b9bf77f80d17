"""A stand-in for the Kubernetes API, for the faults the real kube-apiserver (tests/api) will
not produce on demand: a 500 or a 410 on a chosen request, an API that stops answering, a
server that ignores a selector, a reply no API server sends. Everything else is tested against
the real API server. It answers the calls kubegc makes, as the API server would, and records
every request so a fault test can assert exactly what kubegc asked:

- `GET /api/v1/pods` and `GET /api/v1/namespaces/<ns>/pods`: serves `pages` in order (the
  continue token is the page index); with `honor_selectors` it applies the namespace and the
  `fieldSelector` (`a=b`, `a==b`, `a!=b`, comma-separated) as the API server does, without
  it every served pod is answered; `fail` makes a page answer an error instead. Each query
  is appended to `requests`, each path to `list_paths`.
- `DELETE /api/v1/namespaces/<ns>/pods/<name>`: checks the body's preconditions (uid,
  resourceVersion) against the served pod as the API server does — 404 when there is no such
  pod, 409 when a precondition does not match, else 200 (202 while finalizers hold it) and the
  pod is gone from later lists. `delete_answers["ns/name"] = (status, message)` forces an
  answer. Each request (with its decoded body) is appended to `deletes`.
- `POST /api/v1/namespaces/<ns>/events`: records the Event (its decoded body, with the
  namespace of the path) in `events` and answers 201 with it, or `event_answer` (status,
  message) when set — as the API server, an Event whose `metadata.namespace` differs from
  the path's is refused 400.
- `GET /api/v1/nodes/<name>`: the Node in `nodes[name]`, else 404.
- `raw[(method, path)] = (status, body bytes)` answers that request with exactly those bytes
  (a reply no API server would send: not JSON, nested thousands of levels deep).
- Anything else is answered 404/405 and appended to `unexpected`; with `down` every request
  is dropped unanswered and only counted in `dropped`. Every answered request's method and
  path (no query) is appended to `calls`, in order.

Use `serve_recorded_api(tmp_path)` in a fixture; it yields the `RecordedApi` and a kubeconfig
pointing at the server.

Run by hand, it plays a cluster for trying `kubegc evict prune` (and the API pod source)
without one, printing each request it answers:

    .venv/bin/python -m tests.unit.recorded_api --kubeconfig /tmp/kubegc-demo.kubeconfig

serves demo pods (`demo_pods`: Evicted pods on node-a and node-b, one running) or, with
`--pods FILE`, the pods of a PodList or List (`kubectl get pods -A -o json`), until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

LIST_PATH = re.compile(r"/api/v1(?:/namespaces/([^/]+))?/pods")
POD_PATH = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)")
EVENTS_PATH = re.compile(r"/api/v1/namespaces/([^/]+)/events")
NODE_PATH = re.compile(r"/api/v1/nodes/([^/]+)")


def api_pod(
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    resource_version: str = "100",
    node: str = "node-a",
    phase: str = "Failed",
    reason: str = "Evicted",
    message: str = "The node was low on resource: memory.",
    owner: tuple[str, str] | None = ("ReplicaSet", "web-7d4b9"),
    conditions: list[dict[str, Any]] | None = None,
    start_time: str | None = "2026-11-29T08:00:00Z",
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    """A Pod object as the API serves it (defaults: an Evicted pod of a ReplicaSet)."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"uid-{namespace}-{name}",
        "resourceVersion": resource_version,
    }
    if owner:
        kind, owner_name = owner
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": kind, "name": owner_name, "uid": "o-1",
             "controller": True, "blockOwnerDeletion": True}
        ]  # fmt: skip
    if finalizers:
        meta["finalizers"] = list(finalizers)
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
        status["message"] = message
    if conditions is not None:
        status["conditions"] = conditions
    if start_time:
        status["startTime"] = start_time
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        "status": status,
    }


def _field(pod: Any, path: str) -> str:
    value: Any = pod
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else str(value)


def _matches(pod: Any, selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            key, want = term.split("!=", 1)
            if _field(pod, key) == want:
                return False
        else:
            key, want = re.split("==?", term, maxsplit=1)
            if _field(pod, key) != want:
                return False
    return True


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


@dataclass
class DeleteRequest:
    """One DELETE as the server got it, and the status it answered."""

    namespace: str
    name: str
    body: Any
    query: dict[str, list[str]]
    status: int


@dataclass
class RecordedApi:
    """Serves `pages` of a PodList in order (by continue token); records each request."""

    pages: list[list[Any]] = field(default_factory=list)
    fail: dict[int, tuple[int, str]] = field(default_factory=dict)  # page index → (status, msg)
    delay: float = 0.0
    honor_selectors: bool = False  # True: filter by namespace and fieldSelector as the API does
    delete_answers: dict[str, tuple[int, str]] = field(default_factory=dict)  # "ns/name" → ...
    requests: list[dict[str, list[str]]] = field(default_factory=list)  # list queries
    list_paths: list[str] = field(default_factory=list)
    deletes: list[DeleteRequest] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    down: bool = False  # True: every request is dropped unanswered (an API that went away)
    dropped: int = 0
    events: list[Any] = field(default_factory=list)  # posted Event bodies
    event_answer: tuple[int, str] | None = None  # forced answer to every Event POST
    nodes: dict[str, Any] = field(default_factory=dict)  # name → Node served by GET
    calls: list[tuple[str, str]] = field(default_factory=list)  # (method, path) answered
    raw: dict[tuple[str, str], tuple[int, bytes]] = field(default_factory=dict)  # forced bytes
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def answer(self, query: dict[str, list[str]], namespace: str | None = None) -> tuple[int, Any]:
        """A list request: one page of pods (namespace and field selector applied)."""
        with self.lock:
            self.requests.append(query)
            index = int(query.get("continue", ["0"])[0])
            if index in self.fail:
                code, msg = self.fail[index]
                return code, _status(code, "InternalError", msg)
            items = self.pages[index] if index < len(self.pages) else []
            if self.honor_selectors:
                selector = query.get("fieldSelector", [""])[0]
                items = [
                    p for p in items
                    if (namespace is None or _field(p, "metadata.namespace") == namespace)
                    and _matches(p, selector)
                ]  # fmt: skip
            more = index + 1 < len(self.pages)
            return 200, {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"continue": str(index + 1) if more else "", "resourceVersion": "9"},
                "items": items,
            }

    def find(self, namespace: str, name: str) -> Any:
        """The served pod `namespace/name` (the object itself, so a test may change it)."""
        for page in self.pages:
            for p in page:
                key = (_field(p, "metadata.namespace"), _field(p, "metadata.name"))
                if key == (namespace, name):
                    return p
        return None

    def remove(self, namespace: str, name: str) -> None:
        """Delete the pod behind kubegc's back (someone else did)."""
        target = self.find(namespace, name)
        for page in self.pages:
            if target in page:
                page.remove(target)

    def delete(
        self, namespace: str, name: str, body: Any, query: dict[str, list[str]]
    ) -> tuple[int, Any]:
        """A DELETE of one pod, checked as the API server checks preconditions."""
        with self.lock:
            code, doc = self._delete(namespace, name, body)
            self.deletes.append(DeleteRequest(namespace, name, body, query, code))
            return code, doc

    def _delete(self, namespace: str, name: str, body: Any) -> tuple[int, Any]:
        forced = self.delete_answers.get(f"{namespace}/{name}")
        if forced:
            code, msg = forced
            return code, _status(code, "Forced", msg)
        pod = self.find(namespace, name)
        if pod is None:
            return 404, _status(404, "NotFound", f'pods "{name}" not found')
        pre = (body or {}).get("preconditions") or {}
        meta = pod["metadata"]
        # the API server's own wording (checked against kube-apiserver in tests/api)
        for key, label, why in (("uid", "UID", "deleted and then recreated"),
                                ("resourceVersion", "ResourceVersion", "modified")):  # fmt: skip
            if key in pre and pre[key] != meta.get(key):
                return 409, _status(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on Pod "{name}": the {label} in the '
                    f"precondition ({pre[key]}) does not match the {label} in record "
                    f"({meta.get(key)}). The object might have been {why}",
                )
        if meta.get("finalizers"):
            meta["deletionTimestamp"] = "2026-11-29T12:00:00Z"
            return 202, pod
        self.remove(namespace, name)
        return 200, pod

    def post_event(self, namespace: str, body: Any) -> tuple[int, Any]:
        """A POST of one core/v1 Event: recorded (with `namespace` from the path) unless
        `event_answer` forces a refusal; the namespace check is the API server's."""
        with self.lock:
            if self.event_answer is not None:
                code, msg = self.event_answer
                return code, _status(code, "Forced", msg)
            meta_ns = ((body or {}).get("metadata") or {}).get("namespace")
            if meta_ns not in (None, namespace):
                msg = "the namespace of the provided object does not match the namespace sent"
                return 400, _status(400, "BadRequest", msg)
            self.events.append({**body, "_namespace": namespace})
            return 201, body


def _kubeconfig(path: Path, port: int) -> Path:
    path.write_text(
        f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{token: test-token}}}}]
contexts: [{{name: ctx, context: {{cluster: c, user: u}}}}]
current-context: ctx
"""
    )
    return path


@contextlib.contextmanager
def serve_recorded_api(tmp_path: Path) -> Iterator[tuple[RecordedApi, Path]]:
    """Run a `RecordedApi` on a free local port; yields it and a kubeconfig for it."""
    recorded = RecordedApi()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, doc: Any) -> None:
            body = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)  # the client may have given up (timeout test)

        def _unexpected(self, code: int) -> None:
            with recorded.lock:
                recorded.unexpected.append(f"{self.command} {self.path}")
            self._send(code, _status(code, "NotFound", f"not served here: {self.path}"))

        def _drop(self) -> bool:
            with recorded.lock:
                if recorded.down:
                    recorded.dropped += 1
                    self.close_connection = True
                return recorded.down

        def _call(self) -> bool:
            """Record the call; True when a `raw` answer was sent for it."""
            path = urlparse(self.path).path
            with recorded.lock:
                recorded.calls.append((self.command, path))
                forced = recorded.raw.get((self.command, path))
            if forced is None:
                return False
            self.send_response(forced[0])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(forced[1])))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(forced[1])
            return True

        def do_GET(self) -> None:
            if self._drop() or self._call():
                return
            url = urlparse(self.path)
            node = NODE_PATH.fullmatch(url.path)
            if node:
                found = recorded.nodes.get(node.group(1))
                if found is None:
                    msg = f'nodes "{node.group(1)}" not found'
                    return self._send(404, _status(404, "NotFound", msg))
                return self._send(200, found)
            m = LIST_PATH.fullmatch(url.path)
            if not m:
                return self._unexpected(404)
            with recorded.lock:
                recorded.list_paths.append(url.path)
            time.sleep(recorded.delay)
            self._send(*recorded.answer(parse_qs(url.query), m.group(1)))

        def do_DELETE(self) -> None:
            url = urlparse(self.path)
            m = POD_PATH.fullmatch(url.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self._drop() or self._call():
                return
            if not m:
                return self._unexpected(404)
            body = json.loads(raw) if raw else None
            self._send(*recorded.delete(m.group(1), m.group(2), body, parse_qs(url.query)))

        def do_POST(self) -> None:
            url = urlparse(self.path)
            m = EVENTS_PATH.fullmatch(url.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self._drop() or self._call():
                return
            if not m:
                return self._unexpected(405)
            body = json.loads(raw) if raw else {}
            self._send(*recorded.post_event(m.group(1), body))

        def do_PUT(self) -> None:
            if not self._call():
                self._unexpected(405)

        do_PATCH = do_PUT

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorded, _kubeconfig(tmp_path / "kubeconfig", server.server_port)
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Socks5Proxy:
    """A SOCKS5 proxy (no authentication, CONNECT only) on `port`; `names` maps the host names
    it resolves itself; each CONNECT's (host as the client sent it, port) is in `connects`."""

    port: int = 0
    names: dict[str, str] = field(default_factory=dict)
    connects: list[tuple[str, int]] = field(default_factory=list)


@contextlib.contextmanager
def serve_socks5(names: dict[str, str] | None = None) -> Iterator[Socks5Proxy]:
    """Run a `Socks5Proxy` (RFC 1928) on a free local port while the context lasts."""
    import socket
    import socketserver
    import struct

    proxy = Socks5Proxy(names=dict(names or {}))

    def exactly(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            conn: socket.socket = self.request
            with contextlib.suppress(OSError):
                _, n = exactly(conn, 2)
                exactly(conn, n)  # the methods offered: "no authentication" is taken
                conn.sendall(b"\x05\x00")
                *_, atyp = exactly(conn, 4)  # (CONNECT assumed)
                if atyp == 1:
                    host = socket.inet_ntoa(exactly(conn, 4))
                elif atyp == 3:
                    host = exactly(conn, exactly(conn, 1)[0]).decode()
                else:
                    host = socket.inet_ntop(socket.AF_INET6, exactly(conn, 16))
                (port,) = struct.unpack("!H", exactly(conn, 2))
                proxy.connects.append((host, port))
                try:
                    upstream = socket.create_connection((proxy.names.get(host, host), port), 5)
                except OSError:
                    conn.sendall(b"\x05\x05\x00\x01" + bytes(6))  # connection refused
                    return
                conn.sendall(b"\x05\x00\x00\x01" + bytes(6))
                with upstream:
                    back = threading.Thread(target=pipe, args=(upstream, conn), daemon=True)
                    back.start()
                    pipe(conn, upstream)
                    back.join(10)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    proxy.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()


def demo_pods(now: float) -> list[Any]:
    """Pods for trying `evict prune` by hand, times relative to `now` (seconds since the
    epoch): on node-a, shop/web-1 evicted 3 hours ago and shop/web-2 20 minutes ago, and
    shop/db-0 running; on node-b, batch/report-1 evicted 2 hours ago."""

    def at(seconds_ago: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - seconds_ago))

    def evicted_at(seconds_ago: int) -> list[dict[str, Any]]:
        return [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                 "lastTransitionTime": at(seconds_ago)}]  # fmt: skip

    return [
        api_pod("web-1", namespace="shop", uid="uid-web-1", conditions=evicted_at(3 * 3600),
                start_time=at(5 * 3600)),
        api_pod("web-2", namespace="shop", uid="uid-web-2", conditions=evicted_at(20 * 60),
                start_time=at(3600)),
        api_pod("db-0", namespace="shop", uid="uid-db-0", phase="Running", reason="",
                owner=("StatefulSet", "db"), start_time=at(5 * 3600)),
        api_pod("report-1", namespace="batch", uid="uid-report-1", node="node-b",
                conditions=evicted_at(2 * 3600), owner=("Job", "report"),
                start_time=at(4 * 3600)),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Serve pods on a free local port until Ctrl-C (or SIGTERM); write a kubeconfig for
    the server to `--kubeconfig`; print each request answered (method, path, status of a
    DELETE) on stderr. Field selectors and namespaces are applied as the API server does."""
    import signal
    import tempfile

    parser = argparse.ArgumentParser(
        prog="python -m tests.unit.recorded_api",
        description="A local stand-in for the Kubernetes API serving recorded pods.",
    )
    parser.add_argument("--kubeconfig", type=Path, required=True,
                        help="where to write a kubeconfig for the server")  # fmt: skip
    parser.add_argument("--pods", type=Path,
                        help="a PodList or List JSON to serve [default: demo pods]")  # fmt: skip
    args = parser.parse_args(argv)
    if args.pods is not None:
        doc = json.loads(args.pods.read_text())
        pods = [p for p in doc.get("items", []) if p.get("kind", "Pod") == "Pod"]
    else:
        pods = demo_pods(time.time())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with tempfile.TemporaryDirectory() as tmp, serve_recorded_api(Path(tmp)) as (api, config):
        api.pages = [pods]
        api.honor_selectors = True
        args.kubeconfig.write_text(config.read_text())
        print(f"serving {len(pods)} pods; kubeconfig: {args.kubeconfig}", file=sys.stderr)
        seen = 0
        try:
            while True:
                time.sleep(0.1)
                with api.lock:
                    calls = api.calls[seen:]
                    deletes = {(d.namespace, d.name): d.status for d in api.deletes}
                for method, path in calls:
                    m = POD_PATH.fullmatch(path)
                    status = deletes.get((m.group(1), m.group(2))) if m else None
                    after = f" -> {status}" if method == "DELETE" and status else ""
                    print(f"{method} {path}{after}", file=sys.stderr, flush=True)
                seen += len(calls)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
