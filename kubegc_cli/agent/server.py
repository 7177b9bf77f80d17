"""The agent's HTTP endpoints, on `--listen host:port` (standard library `http.server`, one
thread per request, all daemon threads):

- `/metrics`: the last cycle's metrics and the process's own (`LoopState.metrics_text`),
  `text/plain; version=0.0.4` (Prometheus text format);
- `/healthz`: 200 `ok` while the loop is alive and its last cycle started within
  2 × interval + cycle timeout; else 503 with the reason (a liveness probe: a stuck agent
  is restarted);
- `/readyz`: 200 `ok` while the policy in force is the policy file's content (from the
  start: a rollout does not wait for the first cycle); else 503 with the reason (a readiness
  probe, and what `kubectl get pods` shows as not ready while a ConfigMap holds a policy the
  agent rejected).

Anything else is 404; a method other than GET and HEAD is 405. Requests only copy a few fields
of the `LoopState` under its lock: none can block or slow the loop.
"""

from __future__ import annotations

import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubegc_cli.agent.loop import LoopState
from kubegc_cli.core.errors import BadInput

METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
#: Seconds a connection may sit idle before its thread gives up on it.
REQUEST_TIMEOUT = 10.0
#: At most one line on stderr per this many seconds for requests that failed in the server.
ERROR_LINE_EVERY = 60.0

_LISTEN = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.%\w]+)\]|(?P<host>[^:\[\]]*)):(?P<port>[0-9]{1,5})")


def parse_listen(text: str) -> tuple[str, int]:
    """`host:port` → (host, port): `:9808` (every address), `127.0.0.1:9808`, `[::1]:9808`,
    `localhost:0` (any free port). Raises `BadInput` naming the value."""
    m = _LISTEN.fullmatch(text)
    port = int(m.group("port")) if m else -1
    if m is None or port > 65535:
        raise BadInput(
            f"invalid value for --listen: {text!r} (expected host:port, e.g. :9808, "
            "127.0.0.1:9808 or [::1]:9808)"
        )
    return (m.group("v6") if m.group("v6") is not None else m.group("host")), port


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    dual_stack = False
    _last_error_line = -ERROR_LINE_EVERY

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed: a client that went away early (a probe timing out, a
        scraper closing: broken pipe, reset) is not an error of the agent's and says nothing;
        anything else is one line on stderr, at most one per `ERROR_LINE_EVERY` seconds
        (never a traceback per connection)."""
        exc = sys.exc_info()[1]
        if exc is None or isinstance(exc, (ConnectionError, TimeoutError)):
            return
        now = time.monotonic()
        if now - self._last_error_line < ERROR_LINE_EVERY:
            return
        self._last_error_line = now
        first = (str(exc).splitlines() or [""])[0]
        sys.stderr.write(
            f"kubegc agent: HTTP request from {client_address[0] if client_address else '?'} "
            f"failed: {type(exc).__name__}{': ' + first if first else ''}\n"
        )

    def server_bind(self) -> None:
        if self.dual_stack:  # `:port`: IPv4 and IPv6 both (an IPv6-only cluster too)
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _Handler(BaseHTTPRequestHandler):
    state: LoopState
    timeout = REQUEST_TIMEOUT
    server_version = "kubegc-agent"

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _refuse(self) -> None:
        self._send(
            405, "method not allowed: GET or HEAD\n", TEXT_TYPE, True, {"Allow": "GET, HEAD"}
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _answer(self, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, self.state.metrics_text(), METRICS_TYPE, body)
        elif path in ("/healthz", "/readyz"):
            ok, reason = self.state.health() if path == "/healthz" else self.state.readiness()
            self._send(200 if ok else 503, reason + "\n", TEXT_TYPE, body)
        else:
            self._send(404, f"not found: {path} (try /metrics, /healthz, /readyz)\n",
                       TEXT_TYPE, body)  # fmt: skip

    def _send(
        self, code: int, text: str, kind: str, body: bool, extra: dict[str, str] | None = None
    ) -> None:
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged (a probe every few seconds would fill stderr)."""


class Endpoints:
    """The HTTP endpoints of one agent, serving `state` on `listen` from a daemon thread
    until `close()`. `address` is the (host, port) bound (the port chosen for `:0`).

    Raises `BadInput` for a `listen` that is not host:port, and for one that cannot be bound
    (taken, not an address of this host, a privileged port), naming it."""

    def __init__(self, listen: str, state: LoopState) -> None:
        host, port = parse_listen(listen)
        handler = type("Handler", (_Handler,), {"state": state})
        server_class: type[_Server] = _Server
        if host == "" and socket.has_dualstack_ipv6():
            server_class = type("DualStack", (_Server,), {"address_family": socket.AF_INET6,
                                                          "dual_stack": True})  # fmt: skip
            host = "::"
        elif ":" in host:
            server_class = type("V6", (_Server,), {"address_family": socket.AF_INET6})
        try:
            self.server = server_class((host, port), handler)
        except OSError as exc:
            raise BadInput(f"cannot listen on --listen {listen}: {exc.strerror or exc}") from None
        self.address: tuple[str, int] = self.server.server_address[:2]  # type: ignore[assignment]
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="kubegc-agent-http", daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        """Stop serving and close the socket (requests in flight finish on their own)."""
        self.server.shutdown()
        self.server.server_close()
