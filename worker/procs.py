"""Process plumbing shared by the node's processes: parent-death signal, run paths."""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq

from cluster.core.procs import alive, exit_with_parent, set_process_name
from worker.wire import ready_message


def run_dir(name: str, pid: int) -> Path:
    """Short per-node directory for ZeroMQ ipc endpoints (paths must stay < 107 bytes)."""
    return Path("/tmp") / f"pynamesrv-{os.getuid()}" / f"{name[:32]}-{pid}"


def store_base() -> Path:
    """Where nodes keep their stores: shared memory when the machine has /dev/shm."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
    return base / f"pynamesrv-{os.getuid()}" / "stores"


def store_dir(data_dir: Path) -> Path:
    """The LMDB directory of the node whose data dir is ``data_dir``: one per data dir (a
    hash of its resolved path), so a node restarted on its data dir finds its store."""
    key = hashlib.sha256(os.fsencode(data_dir.resolve())).hexdigest()[:20]
    return store_base() / key


def sweep_stale(base: Path) -> int:
    """Remove per-node directories (``...-<pid>``) left behind by nodes that were killed."""
    removed = 0
    for entry in base.glob("*-*") if base.is_dir() else []:
        pid = entry.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def io_endpoint(run: Path, index: int) -> str:
    return f"ipc://{run}/io-{index}.ipc"


def control_endpoint(run: Path) -> str:
    return f"ipc://{run}/ctl.ipc"


def start_worker_process(parent: int, proc_name: str) -> None:
    """Common start of a worker process: die with the controller, name, logging, no SIGINT.

    Ctrl-C reaches the whole foreground process group; the controller decides
    the shutdown order, so workers ignore SIGINT.
    """
    exit_with_parent(parent=parent)
    set_process_name(proc_name)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=os.environ.get("PYNAMESRV_LOG", "WARNING"),
                        format=f"%(asctime)s level=%(levelname)s proc={proc_name} %(message)s")


def announce_ready(zctx: Any, run: Path, kind: str, index: int) -> None:
    """Tell the controller (ZeroMQ PUSH to its ipc endpoint) that this worker serves."""
    push = zctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 1000)
    push.connect(control_endpoint(run))
    push.send(ready_message(kind, index, os.getpid()))
    push.close()


_LIBC = ctypes.CDLL(None)  # the C library is loaded already (find_library runs ldconfig)
_TRIM = getattr(_LIBC, "malloc_trim", None)  # glibc only


def give_back_memory() -> None:
    """Return the C heap's free pages to the system (glibc ``malloc_trim``; nothing
    elsewhere). After decoding a table of tens of thousands of topics, most of what was
    allocated is free again but stays mapped: about 30 MB per 16 MiB registration."""
    if _TRIM is not None:
        _TRIM(0)


TRIM_EVERY_S = 1.0  # an I/O worker gives free heap pages back this often
TRIM_AFTER_BYTES = 32 << 10  # work moving this many bytes leaves heap pages worth giving back
TRIM_AFTER_WORK_S = 0.1  # a business worker, after such work, at most this often


class Trim:
    """Gives free heap pages back (`give_back_memory`) after work that moved at least
    TRIM_AFTER_BYTES (a registration decoded, a topic list built), at most once every
    TRIM_AFTER_WORK_S of ``clock``. A trim costs 0.1–1.4 ms; without them a worker kept the
    pages its large bodies had used, 6–10 MB each at 100,000 topics. Once a second, the
    write worker still held 8–10 MB more at 1,000 brokers' heartbeats (each a 70 KB table)."""

    __slots__ = ("_clock", "_give_back", "_next")

    def __init__(self, clock: Callable[[], float],
                 give_back: Callable[[], None] = give_back_memory) -> None:
        self._clock = clock
        self._give_back = give_back
        self._next = float("-inf")

    def after(self, moved_bytes: int) -> None:
        if moved_bytes < TRIM_AFTER_BYTES:
            return
        now = self._clock()
        if now >= self._next:
            self._give_back()
            self._next = now + TRIM_AFTER_WORK_S
