"""The standard library's threaded HTTP server with a bound on the requests served at once."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per request, at most ``max_connections`` at once (more are closed unanswered);
    IPv6 when ``host`` holds a colon. Its threads never hold up the process's exit."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler],
                 max_connections: int) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.slots = threading.BoundedSemaphore(max_connections)
        super().__init__((host, port), handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()
