"""The controller's view of its worker processes: spawn, watch by pidfd, restart with back-off."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import multiprocess as mp

from cluster.core.backoff import Backoff

log = logging.getLogger("pynamesrv.node")

_SPAWN = mp.get_context("spawn")
MIN_BACKOFF_S = 0.1
MAX_BACKOFF_S = 5.0
STABLE_S = 10.0  # a child that lived this long restarts without back-off


def child_backoff() -> Backoff:
    return Backoff(MIN_BACKOFF_S, MAX_BACKOFF_S, STABLE_S, immediate_after_stable=True)


@dataclass
class Child:
    kind: str
    index: int
    target: Callable[[Any], None]
    config: Any
    proc: Any = None
    pidfd: int = -1
    started_at: float = 0.0
    backoff_s: float = 0.0
    restart_at: float | None = None
    ready: bool = False
    restarts: int = 0
    history: list[int] = field(default_factory=list)
    backoff: Backoff = field(default_factory=child_backoff)

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else -1

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.index}"

    def start(self, now: float) -> None:
        self.proc = _SPAWN.Process(target=self.target, args=(self.config,),
                                   name=f"pynamesrv-{self.name}", daemon=False)
        self.proc.start()
        self.pidfd = os.pidfd_open(self.proc.pid)
        self.started_at = now
        self.ready = False
        self.restart_at = None

    def reap(self, now: float) -> int:
        """Collect the exit status after the pidfd became readable; schedule a restart."""
        self.proc.join(timeout=1.0)
        code = self.proc.exitcode if self.proc.exitcode is not None else -1
        os.close(self.pidfd)
        self.pidfd = -1
        self.backoff_s = self.backoff.on_exit(now - self.started_at)
        self.restart_at = now + self.backoff_s
        self.restarts += 1
        return code

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.pidfd >= 0:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, sig)

    @property
    def alive(self) -> bool:
        return self.pidfd >= 0
