"""A node started by hand runs its hottest modules compiled (``worker.compiled``, built by
scripts/setup.sh) and answers as the plain modules do; ``PYNAMESRV_COMPILED=0`` keeps it
plain. The rest of the integration suite runs compiled nodes (the unit tests run the plain
modules)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.command import RemotingCommand
from tests.integration.test_route_freshness import lookup, register
from tests.nodeproc import Conn, ShellStartedNode
from worker import compiled

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def build() -> Path:
    """This checkout's build: what scripts/setup.sh made (compiled here when it is missing)."""
    return compiled.build()


def _mapped(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps") as maps:
        return {line.split(maxsplit=5)[-1].strip() for line in maps if "/" in line}


def _answers(node: ShellStartedNode) -> list[tuple[object, ...]]:
    """A broker's registration, then route lookups (each twice: asked of the business pool,
    then answered from the I/O worker's template) in JSON and binary, of a topic it carries
    and of one nobody does."""
    out: list[tuple[object, ...]] = []
    conn = Conn(node.addr)
    try:
        requests = [register(4, ("FreshTopic", "OtherTopic"))]
        for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
            for topic in ("FreshTopic", "NoSuchTopic"):
                requests += [lookup(stype, topic), lookup(stype, topic)]
        for request in requests:
            reply: RemotingCommand = conn.call(request)
            out.append((reply.code, reply.remark, reply.ext_fields, reply.body, reply.flag,
                        reply.serialize_type))
    finally:
        conn.close()
    return out


def test_a_node_runs_compiled_and_answers_as_a_plain_one(
        tmp_path: Path, build: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # mypyc's library of the modules, and the I/O worker's own (the library sets up the
    # modules the I/O worker's imports of reach; tests/compiled_diff.py checks each is)
    library = {str(path) for path in build.glob("*__mypyc*")}
    expected = library | {str(compiled.module_file(build, "worker.io.hub"))}
    assert len(library) == 1
    monkeypatch.setenv("PYNAMESRV_LOG", "INFO")
    answers = {}
    for setting in ("1", "0"):
        monkeypatch.setenv(compiled.ENV, setting)
        node = ShellStartedNode(tmp_path / f"node-{setting}").start()
        try:
            workers = psutil.Process(node.pid).children(recursive=True)
            io = [w for w in workers if w.name().startswith("pns-io-")]
            assert io, [w.name() for w in workers]
            for process in io:
                assert expected <= _mapped(process.pid) if setting == "1" else \
                    not any(path.startswith(str(build)) for path in _mapped(process.pid))
            state = "'compiled'" if setting == "1" else f"'off ({compiled.ENV}=0)'"
            assert f"event=modules state={state}" in node.output()
            answers[setting] = _answers(node)
        finally:
            node.stop()
    assert answers["1"] == answers["0"]
    assert [a[0] for a in answers["1"]] == [0] + [0, 0, 17, 17] * 2


def test_hostile_bytes_come_out_of_the_compiled_modules_as_out_of_the_plain_ones(
        tmp_path: Path, build: Path) -> None:
    """The fuzz harness's frames and 20,000 mutations of them, through the frame reader and
    the frame, header and route-request decoders (tests/compiled_diff.py): mypyc compiles
    some Python differently (a slice kept in a constant indexed bytes as an integer until
    the offsets were made plain), and the bytes a client sends must not find where."""
    script = Path(__file__).resolve().parents[1] / "compiled_diff.py"
    outs = {}
    for mode in ("plain", "compiled"):
        outs[mode] = tmp_path / f"{mode}.txt"
        done = subprocess.run([sys.executable, "-P", str(script), mode, "46", "20000",
                               str(outs[mode])], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
    plain, built = (outs[m].read_text().splitlines() for m in ("plain", "compiled"))
    assert len(plain) == len(built) == 20000
    differ = [i for i, (a, b) in enumerate(zip(plain, built, strict=True)) if a != b]
    assert not differ, f"{len(differ)} inputs differ, the first {differ[:10]} (seed 46)"
