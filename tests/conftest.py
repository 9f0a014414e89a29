"""Shared test fixtures: free ports, polling with a deadline, and a process reaper."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.nodeproc import NodeProcess, free_port, poll_until

__all__ = ["Reaper", "free_port", "poll_until"]

SHORT_SOAK_S = 20.0
# Seconds a module of the full run's parallel part takes (about; the longest only). Under
# pytest-xdist (scripts/test.sh: --dist loadfile --no-loadscope-reorder) the modules are
# handed out longest first, so the processes finish together instead of one starting a
# long module when the other has nothing left.
LONG_MODULES = {
    "tests/spark/test_audit_job.py": 125, "tests/integration/test_audit_e2e.py": 80,
    "tests/java_diff/test_corpus.py": 80, "tests/java_diff/test_random.py": 80,
    "tests/spark/test_standalone_cluster.py": 65, "tests/java_diff/test_namesrv_config.py": 65,
    "tests/integration/test_admin_verbs.py": 55, "tests/java_diff/test_five.py": 35,
    "tests/integration/test_standalone.py": 35,
    "tests/integration/test_node.py": 35, "tests/integration/test_supervisor.py": 30,
    "tests/integration/test_addr_service.py": 25, "tests/unit/test_register_incremental.py": 20,
    "tests/integration/test_acl_node.py": 20, "tests/integration/test_supervised_attacks.py": 15,
    "tests/integration/test_fanout.py": 15, "tests/integration/test_supervisor_metrics.py": 15,
    "tests/integration/test_cli_entry.py": 15, "tests/integration/test_limits.py": 15,
    "tests/integration/test_tls.py": 15, "tests/fuzz/test_harness_smoke.py": 15,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--soak-seconds", type=float, default=SHORT_SOAK_S,
                     help=f"how long each soak test runs (default {SHORT_SOAK_S:.0f} s, the "
                          "short form of every full run; e.g. 600 for the long form)")


@pytest.hookimpl(trylast=True)  # after pytest's own fixture-scope ordering, which it keeps
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker: the longest modules first (each module's order kept)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: -LONG_MODULES.get(item.nodeid.split("::", 1)[0], 0))


@pytest.fixture
def soak_seconds(request: pytest.FixtureRequest) -> float:
    return float(request.config.getoption("--soak-seconds"))


def group_members(pgid: int) -> list[psutil.Process]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    found = []
    for p in psutil.process_iter(["status"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


class Reaper:
    """Remembers every process a test starts and kills them all (whole groups) at teardown.

    ``marker`` strings catch processes that escaped their parent: any process whose
    command line contains one (e.g. the test's tmp dir) is killed with its group.
    """

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[Any]] = []
        self.pgids: set[int] = set()
        self.markers: list[str] = []

    def spawn(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        kwargs.setdefault("start_new_session", True)
        proc = subprocess.Popen(list(argv), **kwargs)
        self.procs.append(proc)
        return proc

    def track_pgid(self, pgid: int) -> None:
        self.pgids.add(pgid)

    def track_marker(self, marker: str) -> None:
        self.markers.append(marker)

    def _victims(self) -> set[int]:
        pgids = set(self.pgids)
        for proc in self.procs:
            try:
                root = psutil.Process(proc.pid)
                pgids.update(os.getpgid(c.pid) for c in [root, *root.children(recursive=True)])
            except (psutil.Error, ProcessLookupError):
                continue
        for p in psutil.process_iter(["cmdline"]):
            line = " ".join(p.info["cmdline"] or [])
            if any(m in line for m in self.markers):
                try:
                    pgids.add(os.getpgid(p.pid))
                except ProcessLookupError:
                    continue
        pgids.discard(os.getpgid(0))
        return pgids

    def reap(self) -> None:
        for pgid in self._victims():
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            for f in (proc.stdout, proc.stderr, proc.stdin):
                if f is not None:
                    f.close()


@pytest.fixture
def node_props() -> dict[str, str]:
    """Settings of the ``node`` fixture's node: none; a module overrides this fixture to
    give its nodes others."""
    return {}


@pytest.fixture
def node(tmp_path: Path, node_props: dict[str, str]) -> Iterator[NodeProcess]:
    """A fresh node (``python -m worker.controller``) started with ``node_props``, stopped after
    the test."""
    n = NodeProcess(tmp_path / "node", props=node_props).start()
    yield n
    n.stop()


@pytest.fixture
def reaper() -> Iterator[Reaper]:
    r = Reaper()
    yield r
    r.reap()


@pytest.fixture
def port_factory() -> Iterator[Any]:
    """Call it to get a free loopback port not handed out before in this test."""
    given: set[int] = set()

    def take() -> int:
        port = poll_until(lambda: (p := free_port()) not in given and p, what="a new port")
        given.add(port)
        return port

    yield take
