"""Where the address service learns the cluster's nodes, and whether each one runs.

``SupervisorNodes`` asks ``pynamesrv up``'s control endpoint (every node of the running
cluster with its state, so nodes added or removed by ``pynamesrv reload`` are followed);
when the supervisor does not answer it falls back to the cluster file, re-read when it
changes. ``FixedNodes`` is a ``-n`` list: a cluster nobody supervises here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cluster.core.config import load_cluster
from cluster.core.errors import ConfigError
from supervisor.control_client import ControlClient, ControlError, ControlUnavailable

RUNNING = "running"


@dataclass(frozen=True)
class Candidate:
    name: str
    addr: str
    state: str | None  # the supervisor's state of the node; None when nobody supervises it

    @property
    def runs(self) -> bool:
        return self.state in (None, RUNNING)


class NodeSource(Protocol):
    def candidates(self) -> list[Candidate]: ...
    def close(self) -> None: ...


class FixedNodes:
    def __init__(self, addrs: list[str]) -> None:
        self._nodes = [Candidate(a, a, None) for a in addrs]

    def candidates(self) -> list[Candidate]:
        return list(self._nodes)

    def close(self) -> None:
        pass


class SupervisorNodes:
    """The nodes of ``cluster.yaml``'s supervisor, else of the file itself."""

    def __init__(self, path: Path, timeout: float = 1.0) -> None:
        self.path = path
        cfg = load_cluster(path)
        self._client = ControlClient(cfg.control, timeout)
        self._file: tuple[float, list[Candidate]] = (-1.0, [])

    def candidates(self) -> list[Candidate]:
        try:
            nodes = self._client.status()
        except (ControlUnavailable, ControlError):
            return self._from_file()
        return [Candidate(n["name"], f"{n['host']}:{n['port']}", str(n["state"])) for n in nodes]

    def _from_file(self) -> list[Candidate]:
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            return self._file[1]
        if mtime != self._file[0]:
            try:
                cfg = load_cluster(self.path)
            except ConfigError:
                return self._file[1]  # keep the last good list while the file is being edited
            self._file = (mtime, [Candidate(n.name, n.addr, None) for n in cfg.nodes])
        return self._file[1]

    def close(self) -> None:
        self._client.close()
