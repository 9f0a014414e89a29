"""The supervisor's status page: an HTTP server on its own threads, fed through a StatusBoard.

``StatusPage.open(cfg)`` binds ``supervisor.status_http`` (None when the key is
not set); ``start`` starts the server and the gatherer threads; the supervisor
loop calls ``publish`` each step, which only copies the children's status
into the board (at most every PUBLISH_EVERY_S). Routes: ``/`` the page,
``/fragment`` its live part, ``/status.json`` the same as data, ``/keys`` the
disagreeing entries with a filter (``supervisor.status.keys``), ``/reports/audit``
and ``/reports/chaos`` the latest report files, ``/metrics`` the cluster's
Prometheus metrics (``supervisor.metrics``).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import asdict
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Protocol

import orjson

from cluster.core.config import ClusterConfig
from cluster.core.errors import ConfigError
from cluster.core.http_server import BoundedHTTPServer
from supervisor.child import Child
from supervisor.metrics import CONTENT_TYPE, SupervisorMetrics
from supervisor.status.board import StatusBoard
from supervisor.status.gather import GATHER_EVERY_S, Gatherer
from supervisor.status.keys import keys_context, parse_filter
from supervisor.status.templates import environment
from supervisor.status.view import Header, context

PUBLISH_EVERY_S = 0.2
MAX_CONNECTIONS = 32
REQUEST_TIMEOUT_S = 10.0
SHUTDOWN_POLL_S = 0.2
log = logging.getLogger("pynamesrv.supervisor")


class Host(Protocol):
    def now(self) -> float: ...
    def children(self) -> list[Child]: ...
    @property
    def shutting_down(self) -> bool: ...


class _Server(BoundedHTTPServer):
    def __init__(self, host: str, port: int, app: StatusPage) -> None:
        self.app = app
        super().__init__(host, port, _Handler, MAX_CONNECTIONS)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_TIMEOUT_S
    server_version = "pynamesrv-status"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        app = self.server.app
        path = self.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", app.render("page"))
        elif path == "/fragment":
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", app.render("live"))
        elif path == "/keys":
            query = self.path.split("?", 1)[1] if "?" in self.path else ""
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", app.render_keys(query))
        elif path == "/status.json":
            self._send(HTTPStatus.OK, "application/json", app.as_json())
        elif path == "/metrics":
            self._send(HTTPStatus.OK, CONTENT_TYPE, app.metrics.render())
        elif path.startswith("/reports/") and (report := app.report(path[9:])) is not None:
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", report)
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n")

    def _send(self, status: HTTPStatus, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        log.debug("event=status_http_request %s", format % args)


class StatusPage:
    def __init__(self, cfg: ClusterConfig, host: str, port: int) -> None:
        self.board = StatusBoard()
        self.header = Header(str(cfg.path), cfg.namesrv_addr(), cfg.control)
        self.env = environment()
        roots = list(dict.fromkeys([cfg.path.parent, Path(os.getcwd()).resolve()]))
        self.gatherer = Gatherer(self.board, roots)
        self.metrics = SupervisorMetrics(self.board)
        self._next_publish = 0.0
        try:
            self.server = _Server(host, port, self)
        except OSError as exc:
            raise ConfigError(f"{cfg.path}: supervisor.status_http: cannot bind "
                              f"{host}:{port}: {exc.strerror or exc}") from exc
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        kwargs={"poll_interval": SHUTDOWN_POLL_S},
                                        name="status-http", daemon=True)

    @classmethod
    def open(cls, cfg: ClusterConfig) -> StatusPage | None:
        where = cfg.supervisor.status_host_port
        return None if where is None else cls(cfg, *where)

    @property
    def url(self) -> str:
        host, port = str(self.server.server_address[0]), int(self.server.server_address[1])
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/"

    def start(self, gather: bool = True) -> None:
        """Serve; ``gather=False`` serves whatever is published on the board by hand."""
        self._thread.start()
        if gather:
            self.gatherer.start()

    def close(self) -> None:
        self.gatherer.close()
        if self._thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------- supervisor side

    def publish(self, host: Host) -> None:
        """Copy the children's status into the board; cheap, never blocks on the page."""
        now = host.now()
        if now < self._next_publish:
            return
        self._next_publish = now + PUBLISH_EVERY_S
        children = host.children()
        self.board.publish_supervisor(
            self.gatherer.clock(), host.shutting_down,
            [c.status(now) for c in children if c.spec.kind == "node"],
            [c.status(now) for c in children if c.spec.kind != "node"])

    # ------------------------------------------------------- HTTP side

    def render(self, template: str) -> bytes:
        ctx = context(self.board.read(), self.header, int(GATHER_EVERY_S * 1000))
        return self.env.get_template(template).render(ctx).encode()

    def render_keys(self, query: str) -> bytes:
        ctx = keys_context(self.board.read(), parse_filter(query))
        return self.env.get_template("keys").render(ctx).encode()

    def as_json(self) -> bytes:
        state = self.board.read()
        ctx = context(state, self.header, int(GATHER_EVERY_S * 1000))
        doc = {**{k: v for k, v in ctx.items() if k != "h"}, "header": asdict(self.header)}
        return orjson.dumps(doc, default=str, option=orjson.OPT_NON_STR_KEYS)

    def report(self, kind: str) -> bytes | None:
        for r in self.board.read().reports:
            if r.kind == kind:
                try:
                    return r.path.read_bytes()
                except OSError:
                    return None
        return None
