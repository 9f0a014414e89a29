"""``pynamesrv audit watch`` through the installed command, against three real nodes.

A broker registered to two of them is a divergence that names the third as odd;
once it registers there too, the nodes agree. With ``--metrics`` the watch serves
the same divergence gauges as the supervisor.
"""

from __future__ import annotations

import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cluster.core.protocol.codes import ResponseCode
from tests.conftest import Reaper
from tests.integration.test_node import register
from tests.nodeproc import Conn, NodeProcess, free_port, poll_until, start_all, stop_all

pytestmark = pytest.mark.integration


def _exe() -> str:
    here = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "pynamesrv"
    return str(here) if here.exists() else "pynamesrv"


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NodeProcess]]:
    root = tmp_path_factory.mktemp("watch")
    started = start_all(NodeProcess(root / name, name=name) for name in ("n1", "n2", "n3"))
    try:
        yield started
    finally:
        stop_all(started)


def _interruptible() -> None:
    """In the child before exec: Ctrl-C as at a terminal. A test run started in the
    background of a script ignores SIGINT, and so would the watch (a program keeps an
    inherited SIG_IGN)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _watch(nodes: list[NodeProcess], *extra: str) -> subprocess.CompletedProcess[str]:
    addrs = ";".join(n.addr for n in nodes)
    return subprocess.run([_exe(), "audit", "watch", "-n", addrs, "--interval", "500ms",
                           "--timeout", "500ms", *extra], capture_output=True, text=True,
                          timeout=60)


def test_watch_names_the_odd_node_then_sees_agreement(nodes: list[NodeProcess]) -> None:
    conns = [Conn(n.addr) for n in nodes]
    try:
        for c in conns[:2]:
            assert c.call(register("WatchTopic")).code == ResponseCode.SUCCESS
        out = _watch(nodes, "--rounds", "1")
        assert out.returncode == 1, out.stdout + out.stderr
        n3 = nodes[2].addr
        first = out.stdout.splitlines()[0]
        assert "DIVERGE" in first and f"(odd: {n3} on " in first, out.stdout
        assert f"topic   WatchTopic/broker-a  odd: {n3}  missing on {n3}" in out.stdout
        assert conns[2].call(register("WatchTopic")).code == ResponseCode.SUCCESS
        out = _watch(nodes, "--rounds", "2")
        assert out.returncode == 0, out.stdout + out.stderr
        assert all(" agree | " in line for line in out.stdout.splitlines()[:2]), out.stdout
    finally:
        for c in conns:
            c.close()


def test_watch_serves_the_divergence_gauges(nodes: list[NodeProcess], reaper: Reaper,
                                            tmp_path: Path) -> None:
    port = free_port()
    addrs = ";".join(n.addr for n in nodes)
    with open(tmp_path / "watch.log", "w") as log:
        proc = reaper.spawn([_exe(), "audit", "watch", "-n", addrs, "--interval", "500ms",
                             "--metrics", f"127.0.0.1:{port}"], stdout=log,
                            stderr=subprocess.STDOUT, preexec_fn=_interruptible)

        def gauges() -> dict[str, float] | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                return None
            got = {s.name + str(sorted(s.labels.items())): s.value
                   for f in text_string_to_metric_families(text) for s in f.samples}
            return got if "pynamesrv_divergence_compared_nodes[]" in got else None

        got = poll_until(gauges, 30, 0.2, "divergence gauges on the watch's /metrics")
        assert got["pynamesrv_divergence_compared_nodes[]"] == 3
        assert got[f"pynamesrv_divergence_node_answering[('node', '{nodes[0].addr}')]"] == 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 130


def test_bad_options_get_one_line(nodes: list[NodeProcess]) -> None:
    out = _watch(nodes[:1], "--rounds", "1")
    assert out.returncode == 2 and out.stderr.strip().endswith(
        "audit watch compares nodes: give at least two"), out.stderr
    out = _watch(nodes, "--metrics", "nowhere")
    assert out.returncode == 2 and "expected HOST:PORT" in out.stderr
