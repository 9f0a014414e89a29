"""Health probe: one real RocketMQ request over a fresh TCP connection, non-blocking.

A SIGSTOPped node still completes TCP handshakes (the kernel does that), so
only an answered request proves the node is alive. Any reply with the
request's opaque counts; the probe is driven by the supervisor's poll loop.

The request is GET_KV_CONFIG without namespace and key (only pynamesrv's origin field,
for the metrics): a RocketMQ request every node answers through its business pool,
with a reply of fixed size whatever clients stored (pynamesrv: QUERY_NOT_FOUND naming
the null keys; Java: the missing header field; with ``aclReadsToo``: NO_PERMISSION).
GET_NAMESRV_CONFIG, the probe before, answers what clients wrote with
UPDATE_NAMESRV_CONFIG, so one oversized value made every probe fail and the node
restart for good.
"""

from __future__ import annotations

import errno
import itertools
import socket

import zmq

from cluster.core.protocol.codes import ORIGIN_FIELD, RequestCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameError, FrameReader, decode_command, encode_command

_opaques = itertools.count(1)
MAX_REPLY = 1 << 20  # the reply is about 150 bytes; anything this large is not an answer


class Probe:
    def __init__(self, host: str, port: int, deadline: float) -> None:
        self.deadline = deadline
        self.ok: bool | None = None
        self.error = ""
        self._opaque = next(_opaques) & 0x7FFFFFFF
        self._reader = FrameReader(MAX_REPLY)
        self._sent = False
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                                  socket.SOCK_STREAM)
        self.sock.setblocking(False)
        rc = self.sock.connect_ex((host, port))
        if rc not in (0, errno.EINPROGRESS):
            self._finish(False, f"connect: {errno.errorcode.get(rc, rc)}")

    @property
    def done(self) -> bool:
        return self.ok is not None

    def fileno(self) -> int:
        return self.sock.fileno()

    def events(self) -> int:
        return zmq.POLLIN if self._sent else zmq.POLLOUT

    def on_event(self) -> None:
        if self.done:
            return
        try:
            self._recv() if self._sent else self._send()
        except OSError as exc:
            self._finish(False, exc.strerror or str(exc))

    def check(self, now: float) -> None:
        if not self.done and now >= self.deadline:
            self._finish(False, "no answer" if self._sent else "connect timed out")

    def close(self) -> None:
        self.sock.close()

    def _send(self) -> None:
        err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self._finish(False, f"connect: {errno.errorcode.get(err, err)}")
            return
        frame = encode_command(RemotingCommand(
            code=RequestCode.GET_KV_CONFIG, opaque=self._opaque, language="PYTHON",
            ext_fields={ORIGIN_FIELD: "probe"}))
        if self.sock.send(frame) != len(frame):
            self._finish(False, "short send")
            return
        self._sent = True

    def _recv(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            self._finish(False, "connection closed")
            return
        try:
            opaques = [decode_command(f).opaque for f in self._reader.feed(data)]
        except FrameError as exc:
            self._finish(False, f"bad reply: {exc}")
            return
        if self._opaque in opaques:
            self._finish(True, "")

    def _finish(self, ok: bool, error: str) -> None:
        self.ok = ok
        self.error = error
