"""Client for the supervisor control endpoint (ZeroMQ REQ/REP, JSON).

``ControlClient(addr, timeout)`` sends one request at a time and never blocks
longer than ``timeout``; after a timeout the REQ socket is closed (LINGER 0)
and recreated, so the next request starts clean. Used by the CLI and chaos.
"""

from __future__ import annotations

from typing import Any

import orjson
import zmq

from cluster.core.closing import Closing
from cluster.core.errors import UserError


class ControlError(UserError):
    """The supervisor answered ``{"ok": false}``; ``str()`` is its error."""


class ControlUnavailable(UserError):
    """No answer from the control endpoint within the timeout."""


class ControlClient(Closing):
    def __init__(self, addr: str, timeout: float = 5.0,
                 context: zmq.Context[zmq.Socket[bytes]] | None = None) -> None:
        self.addr = addr
        self.timeout = timeout
        self._ctx = context or zmq.Context.instance()
        self._sock: zmq.Socket[bytes] | None = None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def set_timeout(self, timeout: float) -> None:
        """Wait at most ``timeout`` from the next request on (the socket is made anew: its
        send and receive timeouts are fixed when it is made)."""
        if timeout != self.timeout:
            self.timeout = timeout
            self.close()

    def _socket(self) -> zmq.Socket[bytes]:
        if self._sock is None:
            ms = max(1, int(self.timeout * 1000))
            s = self._ctx.socket(zmq.REQ)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.SNDTIMEO, ms)
            s.setsockopt(zmq.RCVTIMEO, ms)
            s.setsockopt(zmq.IMMEDIATE, 1)
            s.connect(self.addr)
            self._sock = s
        return self._sock

    def request(self, cmd: str, node: str | None = None, **extra: Any) -> dict[str, Any]:
        """Send one request and return the reply object as sent (``ok`` may be false)."""
        msg: dict[str, Any] = {"cmd": cmd, **extra}
        if node is not None:
            msg["node"] = node
        sock = self._socket()
        try:
            sock.send(orjson.dumps(msg))
            raw = sock.recv()
        except zmq.Again as exc:
            self.close()
            raise ControlUnavailable(
                f"no supervisor answered at {self.addr} within {self.timeout:g}s"
                " (is `pynamesrv up` running?)") from exc
        except zmq.ZMQError as exc:
            self.close()
            raise ControlError(f"{self.addr}: {exc}") from exc
        except BaseException:
            self.close()  # e.g. Ctrl-C between send and recv: a REQ socket cannot be reused
            raise
        try:
            reply = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ControlError(f"{self.addr}: reply is not JSON") from exc
        if not isinstance(reply, dict) or "ok" not in reply:
            raise ControlError(f"{self.addr}: reply has no status")
        return reply

    def call(self, cmd: str, node: str | None = None, **extra: Any) -> dict[str, Any]:
        """Like ``request`` but raise ControlError when the reply is not ok."""
        reply = self.request(cmd, node, **extra)
        if not reply.get("ok"):
            raise ControlError(str(reply.get("error", "request failed")))
        return reply

    def status(self) -> list[dict[str, Any]]:
        return list(self.call("status")["nodes"])

    def node_status(self, name: str) -> dict[str, Any]:
        for n in self.status():
            if n["name"] == name:
                return n
        raise ControlError(f"no node named {name!r}")

    def stop(self, node: str) -> dict[str, Any]:
        return self.call("stop", node)

    def start(self, node: str) -> dict[str, Any]:
        return self.call("start", node)

    def restart(self, node: str) -> dict[str, Any]:
        return self.call("restart", node)

    def kill(self, node: str, signal: str = "KILL") -> dict[str, Any]:
        return self.call("kill", node, signal=signal)

    def pause(self, node: str) -> dict[str, Any]:
        return self.call("pause", node)

    def resume(self, node: str) -> dict[str, Any]:
        return self.call("resume", node)

    def shutdown(self) -> dict[str, Any]:
        return self.call("shutdown")
