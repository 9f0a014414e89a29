"""The controller's view of its worker processes: start (forked by the zygote), watch by
pidfd, restart with back-off."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from dataclasses import dataclass, field
from typing import Any

from cluster.core.backoff import Backoff
from worker.controller.zygote import Zygote

log = logging.getLogger("pynamesrv.node")

MIN_BACKOFF_S = 0.1
MAX_BACKOFF_S = 5.0
STABLE_S = 10.0  # a child that lived this long restarts without back-off


def child_backoff() -> Backoff:
    return Backoff(MIN_BACKOFF_S, MAX_BACKOFF_S, STABLE_S, immediate_after_stable=True)


@dataclass
class Child:
    kind: str  # the zygote's target: "business" or "io"
    index: int
    config: Any
    zygote: Zygote
    pid: int = -1
    pidfd: int = -1
    started_at: float = 0.0
    backoff_s: float = 0.0
    restart_at: float | None = None
    ready: bool = False
    restarts: int = 0
    history: list[int] = field(default_factory=list)
    backoff: Backoff = field(default_factory=child_backoff)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.index}"

    def start(self, now: float) -> None:
        self.pid = self.zygote.spawn(self.kind, self.config)
        try:
            self.pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:  # it ended and the zygote reaped it already
            self.pidfd = _readable_fd()  # the loop sees it end at once; reap asks the zygote
        self.started_at = now
        self.ready = False
        self.restart_at = None

    def reap(self, now: float) -> int:
        """Collect the exit status after the pidfd became readable; schedule a restart."""
        code = self.zygote.exit_code(self.pid)
        os.close(self.pidfd)
        self.pidfd = -1
        self.backoff_s = self.backoff.on_exit(now - self.started_at)
        self.restart_at = now + self.backoff_s
        self.restarts += 1
        return code

    def signal(self, sig: int) -> None:
        if self.pidfd >= 0:
            with contextlib.suppress(OSError):  # gone, or ended before its pidfd was opened
                signal.pidfd_send_signal(self.pidfd, sig)

    @property
    def alive(self) -> bool:
        return self.pidfd >= 0


def _readable_fd() -> int:
    """A descriptor that polls readable at once (the read end of a closed pipe): stands in
    for the pidfd of a worker that ended before it could be opened."""
    r, w = os.pipe()
    os.close(w)
    return r
