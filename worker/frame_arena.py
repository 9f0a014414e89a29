"""Large request frames in shared memory: read once by the I/O worker, read in place by
the business worker, so a registration's megabytes do not also go through ZeroMQ.

One file per I/O worker process in the node's store directory (shared memory where the
machine has /dev/shm), ``frames-<io index>-<io pid>``, mapped by that worker read-write
and by every business worker read-only. The I/O worker reads a frame of ``LARGE_FRAME``
bytes or more straight into an extent of it and sends the business worker a reference
(``wire.shared``). An extent is released only when the business worker it was sent to
has answered it or has exited (``worker.io.dispatch``), so no extent is written while a
reader may still read it. When no extent is free (or the file cannot grow: shared memory
full) the frame goes through ZeroMQ as before.
"""

from __future__ import annotations

import bisect
import ctypes
import logging
import mmap
import os
from pathlib import Path

log = logging.getLogger("pynamesrv.io")
PAGE = mmap.PAGESIZE
# Bytes of the file kept backed once written; freed extents above it give their memory back
# as soon as nothing above it is in use. Enough for the registrations of 32 brokers of
# 10,000 topics (2 MB each) in flight at once: memory given back and taken again is faulted
# in page by page by the I/O worker and by the business worker (storm route reads measured
# 18,000-31,000/s with 16 MiB kept, 49,000-54,000/s with more).
KEEP_BYTES = 64 << 20
PREFIX = "frames-"


def arena_path(store: Path, index: int, pid: int) -> Path:
    return store / f"{PREFIX}{index}-{pid}"


def arena_size(frame_max: int) -> int:
    """Room for several frames of the largest size: the file is sparse, only what is
    written takes memory."""
    return max(256 << 20, 4 * _round_up(frame_max))


def open_arena(store: Path, index: int, frame_max: int) -> FrameArena | None:
    """The frame file of I/O worker ``index``; None (large frames then go through ZeroMQ)
    when it cannot be made."""
    try:
        return FrameArena(store, index, arena_size(frame_max))
    except OSError as exc:
        log.warning("event=frame_arena_unavailable error=%r", str(exc))
        return None


def _round_up(n: int) -> int:
    return (n + PAGE - 1) // PAGE * PAGE


class FrameArena:
    """The I/O worker's side: extents of a shared file, first fit, page aligned."""

    def __init__(self, store: Path, index: int, size: int, keep: int = KEEP_BYTES) -> None:
        for old in store.glob(f"{PREFIX}{index}-*"):  # a killed predecessor's
            old.unlink(missing_ok=True)
        self.path = arena_path(store, index, os.getpid())
        self.size, self.keep = size, keep
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.ftruncate(self.fd, size)
        self.mm = mmap.mmap(self.fd, size)
        self.view = memoryview(self.mm)
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(self.mm))
        self.free_list: list[tuple[int, int]] = [(0, size)]  # (offset, length), by offset
        self.used: dict[int, int] = {}  # offset -> length of the extents handed out
        self.backed = 0  # [0, backed) of the file is allocated memory

    def alloc(self, n: int) -> memoryview | None:
        """An extent of ``n`` bytes, or None when there is no room."""
        need = _round_up(n)
        i = next((i for i, (_, length) in enumerate(self.free_list) if length >= need), -1)
        if i < 0:
            return None
        off, length = self.free_list[i]
        end = off + need
        if end > self.backed and not self._back(end):
            return None
        if length == need:
            del self.free_list[i]
        else:
            self.free_list[i] = (end, length - need)
        self.used[off] = need
        return self.view[off : off + n]

    def _back(self, end: int) -> bool:
        """Allocate the file's memory up to ``end``: a write into a hole of a full shared
        memory would kill the process (SIGBUS); this fails instead."""
        try:
            os.posix_fallocate(self.fd, self.backed, end - self.backed)
        except OSError as exc:
            log.warning("event=frame_arena_full bytes=%d error=%r", end, str(exc))
            return False
        self.backed = end
        return True

    def owns(self, frame: object) -> bool:
        return type(frame) is memoryview and frame.obj is self.mm

    def offset(self, frame: memoryview) -> int:
        return ctypes.addressof(ctypes.c_char.from_buffer(frame)) - self._base

    def release(self, frame: memoryview) -> None:
        """Give an extent back (``frame`` is the extent or a view starting where it does)."""
        off = self.offset(frame)
        length = self.used.pop(off, None)
        if length is None:
            log.error("event=frame_arena_double_release offset=%d", off)
            return
        frees = self.free_list
        i = bisect.bisect(frees, (off, 0))
        if i < len(frees) and frees[i][0] == off + length:  # joins the next free extent
            length += frees.pop(i)[1]
        if i and frees[i - 1][0] + frees[i - 1][1] == off:  # and the one before
            off, length = frees[i - 1][0], frees[i - 1][1] + length
            frees[i - 1] = (off, length)
        else:
            frees.insert(i, (off, length))
        self._shrink()

    def _shrink(self) -> None:
        """Nothing in use beyond ``keep``: return the memory of the file above it."""
        if self.backed <= self.keep or any(o + n > self.keep for o, n in self.used.items()):
            return
        try:
            self.mm.madvise(mmap.MADV_REMOVE, self.keep, self.backed - self.keep)
        except OSError as exc:  # a file system without holes: the memory stays in use
            log.warning("event=frame_arena_keeps_memory bytes=%d error=%r", self.backed,
                        str(exc))
            self.keep = self.size
            return
        self.backed = self.keep

    def close(self) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self.fd)  # the map stays valid while views of it are alive


class ArenaReader:
    """A business worker's side: the files of the I/O workers, mapped read-only by index;
    a restarted I/O worker (another pid) replaces its predecessor's map."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.maps: dict[int, tuple[int, mmap.mmap, memoryview]] = {}

    def frame(self, index: int, pid: int, offset: int, length: int) -> memoryview:
        """The frame at ``offset``; OSError when the I/O worker's file is gone."""
        known = self.maps.get(index)
        if known is None or known[0] != pid:
            with open(arena_path(self.store, index, pid), "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            self.maps[index] = known = (pid, mm, memoryview(mm))
        if offset + length > len(known[2]):
            raise OSError(f"frame at {offset}+{length} beyond the I/O worker's file")
        return known[2][offset : offset + length]
