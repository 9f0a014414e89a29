"""One server under test ("side") and the lockstep pair of Java and pynamesrv sides.

A side keeps named connections (one per simulated broker, one for admin
requests), so connection-scoped behaviour (a broker's channel closing) is the
same on both sides. `Side.run` sends one step and observes its outcome: a
reply, no reply, or the connection closed by the server.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameError, FrameReader, decode_command, encode_command

REPLY_TIMEOUT_S = 20.0  # generous: two cores shared with other test runs
STRAGGLER_S = 0.15  # after a probe's reply, how long a late reply to the step may take
SETTLE_TIMEOUT_S = 20.0
PROBE_OPAQUE_BASE = 1 << 30
# a request polled after a step, and the condition its reply must meet
Poll = tuple[RemotingCommand, Callable[[RemotingCommand], bool]]


@dataclass(frozen=True)
class Outcome:
    """What a server did with one step: "reply" (with the command), "none" or "closed"."""

    kind: str
    reply: RemotingCommand | None = None


@dataclass
class Step:
    """One action of a scenario, applied identically to both sides.

    `cmd` is sent as a command, `raw` as bytes (malformed frames); `close` closes
    the connection. A step whose request may legitimately get no reply (oneway,
    codes a server may not handle) is followed by a probe on the same connection,
    so "no reply" is observed without waiting for a timeout. `settle` holds
    requests each polled in turn after the step, on each side, until its condition
    holds for the reply (for effects that complete asynchronously: oneway writes,
    closed connections, 5.x's queued unregistrations).
    """

    label: str
    cmd: RemotingCommand | None = None
    conn: str = "admin"
    raw: bytes | None = None
    raw_opaque: int | None = None  # the opaque inside `raw`, when it has one
    close: bool = False
    may_not_reply: bool = False
    settle: tuple[Poll, ...] = ()
    compare: str = "full"  # "full", "code" (reply code only) or "none" (setup step)
    deliberate: str | None = None  # README row of a documented difference this step shows
    # None: each condition must hold within SETTLE_TIMEOUT_S; else it may not hold at all: polled
    # this long, then the step goes on (what each side holds then is compared later)
    settle_at_most_s: float | None = None
    # sent on each side before the step; the step settles on that side only when
    # `settles_if(reply)` (a release whose rules make the step change nothing there waits
    # for nothing)
    precheck: RemotingCommand | None = None
    settles_if: Callable[[RemotingCommand], bool] | None = None

    @property
    def expects_probe(self) -> bool:
        oneway = self.cmd is not None and bool(self.cmd.flag & FLAG_ONEWAY)
        return self.may_not_reply or oneway


def probe_command(opaque: int) -> RemotingCommand:
    """A cheap request with a fixed reply, used to detect that an earlier one got none."""
    return RemotingCommand(code=RequestCode.GET_KV_CONFIG, opaque=opaque, version=409,
                           ext_fields={"namespace": "__probe__", "key": "__probe__"})


class ConnectionClosed(Exception):
    pass


@dataclass
class Channel:
    sock: socket.socket
    reader: FrameReader = field(default_factory=FrameReader)
    frames: list[bytes] = field(default_factory=list)

    def recv(self, deadline: float) -> RemotingCommand | None:
        """The next frame as a command; None at the deadline; ConnectionClosed at EOF."""
        while not self.frames:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                return None
            except ConnectionResetError:
                raise ConnectionClosed from None
            if not data:
                raise ConnectionClosed
            self.frames.extend(self.reader.feed(data))
        return decode_command(self.frames.pop(0))


class Side:
    """One server: named connections, steps sent in order, outcomes observed."""

    def __init__(self, name: str, addr: str) -> None:
        self.name = name
        self.addr = addr
        self.channels: dict[str, Channel] = {}
        self._probe = PROBE_OPAQUE_BASE
        self._settles = True  # the last step's precheck asked for its settle

    def channel(self, conn: str) -> Channel:
        if conn not in self.channels:
            host, port = self.addr.rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), timeout=REPLY_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.channels[conn] = Channel(sock)
        return self.channels[conn]

    def close(self, conn: str) -> None:
        ch = self.channels.pop(conn, None)
        if ch is not None:
            ch.sock.close()

    def close_all(self) -> None:
        for conn in list(self.channels):
            self.close(conn)

    def run(self, step: Step) -> Outcome:
        self._settles = True
        if step.precheck is not None and step.settles_if is not None:
            pre = self.run(Step("precheck", cmd=replace(step.precheck), conn="__settle__"))
            self._settles = pre.reply is not None and step.settles_if(pre.reply)
        if step.close:
            self.close(step.conn)
            return Outcome("none")
        ch = self.channel(step.conn)
        opaque = step.cmd.opaque if step.cmd is not None else step.raw_opaque
        try:
            if step.raw is not None:
                ch.sock.sendall(step.raw)
            else:
                assert step.cmd is not None
                ch.sock.sendall(encode_command(step.cmd))
            if step.expects_probe:
                return self._await_with_probe(ch, opaque)
            return self._await(ch, opaque, time.monotonic() + REPLY_TIMEOUT_S)
        except (ConnectionClosed, BrokenPipeError, ConnectionResetError, FrameError):
            self.close(step.conn)
            return Outcome("closed")

    def _await(self, ch: Channel, opaque: int | None, deadline: float) -> Outcome:
        while True:
            reply = ch.recv(deadline)
            if reply is None:
                return Outcome("none")
            if opaque is None or reply.opaque == opaque:
                return Outcome("reply", reply)

    def _await_with_probe(self, ch: Channel, opaque: int | None) -> Outcome:
        self._probe += 1
        probe = self._probe
        ch.sock.sendall(encode_command(probe_command(probe)))
        found: RemotingCommand | None = None
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while True:
            reply = ch.recv(deadline)
            if reply is None:
                raise AssertionError(f"{self.name}: probe {probe} got no reply")
            if reply.opaque == probe:
                break
            if found is None and (opaque is None or reply.opaque == opaque):
                found = reply  # without an opaque: the first reply that is not the probe's
        if found is None:
            late = ch.recv(time.monotonic() + STRAGGLER_S)
            found = late if late is not None and opaque in (None, late.opaque) else None
        return Outcome("reply", found) if found is not None else Outcome("none")

    def settle(self, step: Step) -> None:
        """Poll each request of `step.settle` on a connection of its own until its
        condition holds."""
        if not self._settles:
            return
        for cmd, until in step.settle:
            self._poll(step, cmd, until)

    def _poll(self, step: Step, cmd: RemotingCommand,
              until: Callable[[RemotingCommand], bool]) -> None:
        bound = step.settle_at_most_s
        deadline = time.monotonic() + (SETTLE_TIMEOUT_S if bound is None else bound)
        while True:
            out = self.run(Step("settle", cmd=replace(cmd), conn="__settle__"))
            if out.reply is not None and until(out.reply):
                return
            if time.monotonic() > deadline:
                if bound is not None:
                    return
                raise AssertionError(f"{self.name}: {step.label} did not settle")
            time.sleep(0.02)
