"""Where a node's store lives between runs: claimed by one controller, kept when it exits.

A node's LMDB store is in shared memory, one directory per data dir
(``worker.procs.store_dir``). The controller holds an exclusive ``flock`` on its
``owner.lock`` for its whole life, so two nodes never share one data dir's store, and
the kernel drops the lock however the controller dies. ``owner.json`` says whose it
is. The store is never removed when the node exits (a restart reopens it,
``state.restore``); a store nobody holds is swept at any node's start once it can no
longer serve a restart: its data dir is gone, or every broker in it has expired
(no write for longer than the expiry its node ran with).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from cluster.core.errors import UserError

log = logging.getLogger("pynamesrv.node")
LOCK_NAME = "owner.lock"
OWNER_NAME = "owner.json"
DATA_NAME = "data.mdb"
CLAIM_WAIT_S = 5.0  # a SIGKILLed predecessor's lock goes with its last process
CLAIM_POLL_S = 0.05


def lmdb_dir(path: Path) -> Path:
    """The LMDB environment inside a store directory (the lock and owner files sit beside)."""
    return path / "lmdb"


def claim(path: Path, wait_s: float = CLAIM_WAIT_S) -> int:
    """Lock ``path`` (created if missing) for this process: the lock's fd, to keep open.

    UserError when another live node holds it after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:  # another node's start swept the directory just made
            continue
        if _try_lock(fd):
            if _still_linked(fd, path / LOCK_NAME):
                return fd
        elif time.monotonic() >= deadline:
            os.close(fd)
            owner = read_owner(path).get("pid", "?")
            raise UserError(f"the store of this data dir ({path}) is held by another "
                            f"running node (pid {owner})")
        os.close(fd)  # not ours yet, or swept while we waited: try again
        time.sleep(CLAIM_POLL_S)


def _still_linked(fd: int, lock: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == lock.stat().st_ino
    except FileNotFoundError:
        return False


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False
        raise
    return True


def write_owner(path: Path, data_dir: Path, name: str, port: int, expiry_ms: int) -> None:
    doc = {"dataDir": str(data_dir.resolve()), "node": name, "port": port,
           "pid": os.getpid(), "expiryMs": expiry_ms}
    tmp = path / (OWNER_NAME + ".tmp")
    tmp.write_bytes(orjson.dumps(doc))
    tmp.replace(path / OWNER_NAME)


def read_owner(path: Path) -> dict[str, object]:
    try:
        doc = orjson.loads((path / OWNER_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def useless(path: Path, now_s: float) -> bool:
    """True when the store at ``path`` cannot serve a restart any more."""
    owner = read_owner(path)
    data_dir, expiry = owner.get("dataDir"), owner.get("expiryMs")
    if not isinstance(data_dir, str) or not Path(data_dir).is_dir():
        return True
    try:
        last_write = (lmdb_dir(path) / DATA_NAME).stat().st_mtime
    except OSError:
        return True
    return not isinstance(expiry, int) or last_write + expiry / 1000 < now_s


def sweep(base: Path, keep: Path, now: Callable[[], float] = time.time) -> int:
    """Remove the stores under ``base`` that nobody holds and that are ``useless``."""
    removed = 0
    for entry in base.iterdir() if base.is_dir() else []:
        if entry == keep or not entry.is_dir() or not useless(entry, now()):
            continue
        with contextlib.suppress(OSError):
            fd = os.open(entry / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                if _try_lock(fd):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed += 1
            finally:
                os.close(fd)
    if removed:
        log.info("event=stores_swept count=%d", removed)
    return removed
