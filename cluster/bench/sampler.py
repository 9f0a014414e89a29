"""CPU time and peak memory of a whole process tree (a node and all its workers).

Memory is the sum of PSS (proportional set size): pages shared by the workers,
such as the LMDB map on /dev/shm, are counted once, not once per process.
"""

from __future__ import annotations

import threading
import time

import psutil


def _pss(p: psutil.Process) -> int:
    try:
        return int(p.memory_full_info().pss)
    except (psutil.AccessDenied, AttributeError):
        return int(p.memory_info().rss)


class TreeSampler:
    """Samples a process tree every ``period`` seconds on a background thread."""

    def __init__(self, pid: int, period: float = 0.2) -> None:
        self.root = psutil.Process(pid)
        self.period = period
        self.peak_pss = 0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.started = 0.0
        self.elapsed = 0.0

    def _procs(self) -> list[psutil.Process]:
        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def _sample(self) -> None:
        pss = 0
        for p in self._procs():
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    self._cpu[p.pid] = t.user + t.system
                    pss += _pss(p)
            except psutil.NoSuchProcess:
                continue
        self.peak_pss = max(self.peak_pss, pss)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self._sample()

    def __enter__(self) -> TreeSampler:
        self._sample()
        self._base = dict(self._cpu)
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.elapsed = time.monotonic() - self.started

    @property
    def cpu_s(self) -> float:
        return sum(v - self._base.get(pid, 0.0) for pid, v in self._cpu.items())

    @property
    def cpu_util(self) -> float:
        return self.cpu_s / self.elapsed if self.elapsed else 0.0
