"""Poll every node for a snapshot (request code 60001) at a fixed rate, write rows.

Each round asks all nodes in parallel, one short-lived TCP connection per
request, so a paused node costs one timeout and never blocks the others. A
node that does not answer is recorded as unavailable for that round, and so is
one that restarted since the previous round (``restarts``).
"""

from __future__ import annotations

import itertools
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from cluster.audit.restarts import RestartWatch, is_restart
from cluster.audit.rows import (
    MANIFEST_NAME,
    BoundInputs,
    Manifest,
    NodeRef,
    observed_rows,
    rows_file_name,
)
from cluster.core.clock import wall_ms
from cluster.core.errors import UserError
from cluster.core.protocol.codes import (
    DEFAULT_MAX_FRAME,
    ORIGIN_FIELD,
    RequestCode,
    ResponseCode,
)
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameError, check_total, decode_command, encode_command

_I32 = struct.Struct(">i")
_opaques = itertools.count(1)


class SnapshotUnavailable(Exception):
    """The node did not deliver a usable snapshot this round (reason in str())."""


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise SnapshotUnavailable("connection closed before the reply")
        buf += chunk
    return bytes(buf)


def _exchange(target: Target, request: bytes, timeout: float) -> RemotingCommand:
    with socket.create_connection((target.host, target.port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(request)
        (total,) = _I32.unpack(_recv_exact(sock, 4))
        check_total(total, DEFAULT_MAX_FRAME)
        return decode_command(_recv_exact(sock, total))


def fetch_snapshot(target: Target, timeout: float) -> dict[str, Any]:
    """One snapshot reply body as a dict; raises SnapshotUnavailable with a reason."""
    opaque = next(_opaques)
    request = encode_command(RemotingCommand(code=RequestCode.GET_NODE_SNAPSHOT, opaque=opaque,
                                             ext_fields={ORIGIN_FIELD: "audit"}))
    try:
        reply = _exchange(target, request, timeout)
    except TimeoutError as exc:
        raise SnapshotUnavailable(f"timeout after {timeout:g}s") from exc
    except (OSError, FrameError) as exc:
        raise SnapshotUnavailable(f"{type(exc).__name__}: {exc}") from exc
    if reply.opaque != opaque or not reply.is_response:
        raise SnapshotUnavailable("reply does not match the request")
    if reply.code != ResponseCode.SUCCESS:
        raise SnapshotUnavailable(f"response code {reply.code} {reply.remark or ''}".strip())
    try:
        body = orjson.loads(reply.body or b"")
    except orjson.JSONDecodeError as exc:
        raise SnapshotUnavailable(f"snapshot body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise SnapshotUnavailable("snapshot body is not a JSON object")
    return body


def poll_node(target: Target, round_no: int, timeout: float,
              restarts: RestartWatch | None = None) -> list[dict[str, Any]]:
    """Rows of one node for one round: its snapshot, or a single unavailable row (also
    when ``restarts`` sees that the node restarted since the previous round)."""
    asked_at = wall_ms()
    snapshot: Mapping[str, Any] | None
    try:
        snapshot, error = fetch_snapshot(target, timeout), None
    except SnapshotUnavailable as exc:
        snapshot, error = None, str(exc)
    if restarts is not None:
        snapshot, error = restarts.check(target.name, snapshot, error)
    return observed_rows(target.name, round_no, asked_at, snapshot, error)


@dataclass(slots=True)
class RoundResult:
    round_no: int
    rows_by_node: dict[str, list[dict[str, Any]]]

    def status_line(self) -> str:
        parts = []
        for node, rows in self.rows_by_node.items():
            state = "RESTARTED" if is_restart(rows[0].get("error")) else "DOWN"
            parts.append(f"{node}:{len(rows) - 1}" if rows[0]["available"] else f"{node}:{state}")
        return " ".join(parts)


class RowWriter:
    """Appends each node's rows to its own JSON-lines file, flushed per round."""

    def __init__(self, out_dir: Path, nodes: Sequence[str]) -> None:
        self._files: dict[str, IO[bytes]] = {
            n: (out_dir / rows_file_name(n)).open("ab") for n in nodes}

    def write(self, result: RoundResult) -> None:
        for node, rows in result.rows_by_node.items():
            f = self._files[node]
            f.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
            f.flush()

    def close(self) -> None:
        for f in self._files.values():
            f.close()


@dataclass(slots=True)
class CollectPlan:
    targets: list[Target]
    out_dir: Path
    interval_s: float
    duration_s: float
    timeout_s: float
    bound_inputs: BoundInputs

    def manifest(self, started_at: int) -> Manifest:
        return Manifest(nodes=[NodeRef(t.name, t.address) for t in self.targets],
                        interval_ms=round(self.interval_s * 1000),
                        bound_inputs=self.bound_inputs, started_at=started_at)


def prepare_out_dir(out_dir: Path) -> None:
    if (out_dir / MANIFEST_NAME).exists():
        raise UserError(f"{out_dir} already holds a collection; choose a new --out")
    out_dir.mkdir(parents=True, exist_ok=True)


def write_manifest(out_dir: Path, manifest: Manifest) -> None:
    tmp = out_dir / (MANIFEST_NAME + ".tmp")
    tmp.write_bytes(manifest.to_json())
    tmp.replace(out_dir / MANIFEST_NAME)


class CollectionWriter:
    """A new collection directory: the manifest first, then each round's rows, then
    the final manifest (rounds, end time, ``fault_end``) on ``close``.

    Thread-safe, so a round may be written while another thread closes.
    """

    def __init__(self, out_dir: Path, manifest: Manifest) -> None:
        prepare_out_dir(out_dir)
        self.out_dir = out_dir
        self.manifest = manifest
        write_manifest(out_dir, manifest)
        self._rows: RowWriter | None = RowWriter(out_dir, manifest.node_names)
        self._lock = threading.Lock()

    def write(self, result: RoundResult) -> bool:
        """Append one complete round; False once closed."""
        with self._lock:
            if self._rows is None:
                return False
            self._rows.write(result)
            self.manifest.rounds = max(self.manifest.rounds, result.round_no + 1)
            return True

    def close(self, fault_end: int | None = None) -> Manifest:
        with self._lock:
            if self._rows is not None:
                self._rows.close()
                self._rows = None
                self.manifest.ended_at = wall_ms()
                if fault_end is not None:
                    self.manifest.fault_end = fault_end
                write_manifest(self.out_dir, self.manifest)
            return self.manifest


Progress = Callable[[RoundResult, int], None]


def run_round(pool: ThreadPoolExecutor, plan: CollectPlan, round_no: int,
              restarts: RestartWatch | None = None) -> RoundResult:
    futures = {t.name: pool.submit(poll_node, t, round_no, plan.timeout_s, restarts)
               for t in plan.targets}
    return RoundResult(round_no, {name: f.result() for name, f in futures.items()})


def collect(plan: CollectPlan, progress: Progress | None = None,
            stop: threading.Event | None = None) -> Manifest:
    """Run rounds every ``interval_s`` for ``duration_s``; returns the final manifest."""
    stop = stop or threading.Event()
    writer = CollectionWriter(plan.out_dir, plan.manifest(wall_ms()))
    total = max(1, int(plan.duration_s / plan.interval_s) + 1)
    start = time.monotonic()
    restarts = RestartWatch()
    try:
        with ThreadPoolExecutor(max_workers=len(plan.targets)) as pool:
            for round_no in range(total):
                slot = start + round_no * plan.interval_s
                if stop.wait(max(0.0, slot - time.monotonic())):
                    break
                result = run_round(pool, plan, round_no, restarts)
                writer.write(result)
                if progress:
                    progress(result, total)
    finally:
        manifest = writer.close()
    return manifest


# A non-terminal stream gets a line for the first and last round, every round in
# which a node went down or came back, and every EVERY_ROUNDS-th round.
EVERY_ROUNDS = 10


class TerminalProgress:
    """Rounds and rows so far on ``stream``: one line rewritten in place on a terminal
    (``close`` ends it), else one line per event (see ``EVERY_ROUNDS``)."""

    def __init__(self, stream: IO[str] = sys.stderr) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.rows = 0
        self._last_up: dict[str, bool] = {}
        self._open = False

    def __call__(self, result: RoundResult, total: int) -> None:
        self.rows += sum(len(r) for r in result.rows_by_node.values())
        up = {n: bool(r[0]["available"]) for n, r in result.rows_by_node.items()}
        done = result.round_no + 1
        line = f"round {done}/{total} rows {self.rows}  {result.status_line()}"
        if self.tty:
            self.stream.write(f"\r\x1b[K{line}")
            self._open = True
        elif done in (1, total) or up != self._last_up or done % EVERY_ROUNDS == 0:
            self.stream.write(line + "\n")
        self._last_up = up
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False
