"""The address service over HTTP, as RocketMQ's clients and brokers fetch it.

``GET /rocketmq/<subgroup>`` answers the listed nodes as ``ip:port;ip:port`` (what
``TopAddressing.fetchNSAddr`` reads: the first line, trimmed), or 503 when no node
qualifies: a Java client keeps the list it has when the answer is not 200 or is blank.
``GET /rocketmq/<subgroup>-brokers`` answers every node of the cluster, for brokers.
``GET /status.json`` says why each node is listed or not. Anything else is 404.

The standard library's ThreadingHTTPServer, at most MAX_CONNECTIONS requests at once,
each answered from the last published lists (no request waits for a read).
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any

import orjson

from cluster.addr.service import Published
from cluster.core.http_server import BoundedHTTPServer

MAX_CONNECTIONS = 64
REQUEST_TIMEOUT_S = 10.0
BROKERS_SUFFIX = "-brokers"


class AddressServer(BoundedHTTPServer):
    def __init__(self, host: str, port: int, subgroup: str,
                 published: Callable[[], Published]) -> None:
        self.host = host
        self.subgroup = subgroup
        self.published = published
        super().__init__(host, port, _Handler, MAX_CONNECTIONS)

    @property
    def url(self) -> str:
        port = self.server_address[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port}/rocketmq/{self.subgroup}"


class _Handler(BaseHTTPRequestHandler):
    server: AddressServer
    timeout = REQUEST_TIMEOUT_S
    server_version = "pynamesrv-addr"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.split("?", 1)[0]
        pub = self.server.published()
        group = f"/rocketmq/{self.server.subgroup}"
        if path == group:
            if pub.clients:
                self._send(HTTPStatus.OK, ";".join(pub.clients).encode(), "text/plain")
            else:
                self._send(HTTPStatus.SERVICE_UNAVAILABLE, b"no NameServer agrees with the "
                           b"majority right now\n", "text/plain")
        elif path == group + BROKERS_SUFFIX:
            self._send(HTTPStatus.OK, ";".join(pub.brokers).encode(), "text/plain")
        elif path == "/status.json":
            self._send(HTTPStatus.OK, orjson.dumps(pub.as_json()), "application/json")
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

    def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # one line per client fetch would drown the log
