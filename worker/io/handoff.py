"""Connections handed from one I/O worker to another: the large-frame worker.

A plain connection whose next frame is large (a broker's registration of megabytes) is
passed, at a frame boundary with nothing in flight, to the node's large-frame I/O worker:
its socket and the bytes already read of that frame travel as descriptors (``SCM_RIGHTS``:
the socket, and a memfd holding the bytes) in one datagram on a Unix socket in the run
directory. The peer sees nothing: the same TCP connection goes on, served by the other
process, and every later frame of it lands there too.

A hand-off that cannot be made because no large worker is bound (it is restarting) is
not made: the connection stays where it is and is served as before. One that finds the
large worker's queue full (a datagram socket holds one more than ``net.unix.max_dgram_qlen``,
11 by default: a fleet of brokers starting at once) is tried again shortly by the connection,
which reads nothing meanwhile, for up to ``BUSY_WAIT_S`` (``worker.io.connection``); then
it is served where it is, and no connection is offered for ``RETRY_S``.
"""

from __future__ import annotations

import array
import contextlib
import enum
import logging
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

log = logging.getLogger("pynamesrv.io")

_TAG = b"H"  # one datagram = one connection: its socket and a memfd of its first bytes
_FDS = 2
# After a hand-off the large worker could not take, connections stay where they are this long.
RETRY_S = 1.0
# A connection that found the large worker's queue full tries again after BUSY_RETRY_S, and
# is served where it is once it has waited BUSY_WAIT_S.
BUSY_RETRY_S = 0.01
BUSY_WAIT_S = 1.0


class Outcome(enum.Enum):
    HANDED = "handed"  # the large worker has the connection
    BUSY = "busy"  # its queue is full: it is there, and behind
    REFUSED = "refused"  # none is bound, or the hand-off failed: keep the connection


def handoff_path(run: Path) -> Path:
    """Where the large-frame worker takes connections."""
    return run / "io-large.sock"


class HandoffSender:
    """Hands connections to the large-frame worker bound at ``path``."""

    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self.path = str(path)
        self.clock = clock
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self._retry_at = 0.0

    def send(self, conn_fd: int, raw: bytes) -> Outcome:
        """Pass the socket ``conn_fd`` with the bytes already read of it. ``REFUSED`` when
        the large worker cannot take it (the caller keeps the connection), and for
        ``RETRY_S`` after that; ``BUSY`` when its queue is full."""
        if self.clock() < self._retry_at:
            return Outcome.REFUSED
        memfd = os.memfd_create("pns-handoff", os.MFD_CLOEXEC)
        try:
            _write_all(memfd, raw)
            # (socket.send_fds drops its address argument before Python 3.12)
            self.sock.sendmsg([_TAG], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                        array.array("i", [conn_fd, memfd]))], 0, self.path)
        except BlockingIOError:  # its queue is full
            return Outcome.BUSY
        except OSError as exc:  # no large worker bound (restarting)
            log.warning("event=handoff_refused error=%r", str(exc))
            self._retry_at = self.clock() + RETRY_S
            return Outcome.REFUSED
        finally:
            os.close(memfd)
        return Outcome.HANDED

    def hold_off(self) -> None:
        """Offer nothing for ``RETRY_S``: a connection waited ``BUSY_WAIT_S`` for room."""
        log.warning("event=handoff_refused error='the large worker stayed busy'")
        self._retry_at = self.clock() + RETRY_S

    def close(self) -> None:
        self.sock.close()


def bind_receiver(path: Path) -> socket.socket:
    """The large-frame worker's end (non-blocking); a stale path is replaced."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    return sock


def receive(sock: socket.socket) -> Iterator[tuple[socket.socket, bytes]]:
    """The connections waiting on ``sock``, each with the bytes already read of it."""
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 16, _FDS)
        except (BlockingIOError, InterruptedError):
            return
        if data != _TAG or len(fds) != _FDS:
            log.error("event=bad_handoff bytes=%d fds=%d", len(data), len(fds))
            for fd in fds:
                os.close(fd)
            continue
        conn_fd, memfd = fds
        try:
            raw = _read_all(memfd)
        except OSError as exc:
            log.error("event=bad_handoff error=%r", str(exc))
            os.close(conn_fd)
            continue
        finally:
            os.close(memfd)
        conn = socket.socket(fileno=conn_fd)
        conn.setblocking(False)
        yield conn, raw


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)
