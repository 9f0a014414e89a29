"""Control endpoint: a ZeroMQ REP socket answering each JSON request with a JSON reply."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
import zmq

from cluster.core.errors import ConfigError

MAX_REQUEST = 65536
MAX_PER_WAKE = 64
log = logging.getLogger("pynamesrv.supervisor")


class ControlServer:
    def __init__(self, addr: str, answer: Callable[[Any], dict[str, Any]],
                 context: zmq.Context[zmq.Socket[bytes]] | None = None) -> None:
        self.addr = addr
        self.answer = answer
        self.sock = (context or zmq.Context.instance()).socket(zmq.REP)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.MAXMSGSIZE, MAX_REQUEST)
        try:
            self.sock.bind(addr)
        except zmq.ZMQError as exc:
            self.sock.close(linger=0)
            raise ConfigError(f"control: cannot bind {addr}: {exc.strerror}"
                              " (is another supervisor running?)") from exc

    def serve_ready(self) -> None:
        """Answer every request waiting now (bounded per wake-up)."""
        for _ in range(MAX_PER_WAKE):
            try:
                raw = self.sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            self.sock.send(orjson.dumps(self._reply(raw)))

    def _reply(self, raw: bytes) -> dict[str, Any]:
        try:
            req = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"ok": False, "error": "request is not JSON"}
        try:
            return self.answer(req)
        except Exception as exc:  # a bug must not leave the client hanging
            log.exception("event=control_error")
            return {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}

    def close(self) -> None:
        self.sock.close(linger=0)
