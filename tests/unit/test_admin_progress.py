"""Node addresses for every tool (-n, -c, $NAMESRV_ADDR) and the audit's progress output."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cluster.audit.collector import EVERY_ROUNDS, RoundResult, TerminalProgress
from cluster.cli.main import main
from cluster.client.targets import NAMESRV_ENV, parse_namesrv, resolve
from cluster.core.errors import UserError
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from tests.unit.client_fakes import FakeNameServer, reply


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def round_result(n: int, up: dict[str, bool]) -> RoundResult:
    rows = {node: [{"available": ok}] + ([{"table": "kv"}] * 2 if ok else [])
            for node, ok in up.items()}
    return RoundResult(n, rows)


def test_progress_is_one_rewritten_line_on_a_terminal() -> None:
    tty = Tty()
    show = TerminalProgress(tty)
    show(round_result(0, {"n1": True, "n2": True}), 3)
    show(round_result(1, {"n1": True, "n2": False}), 3)
    show.close()
    out = tty.getvalue()
    assert out.count("\n") == 1 and out.endswith("\n")
    assert out.split("\r\x1b[K")[-1] == "round 2/3 rows 10 requests 0 0 KiB  n1:2 n2:DOWN\n"


def test_progress_off_a_terminal_is_one_line_per_event() -> None:
    pipe = io.StringIO()
    show = TerminalProgress(pipe)
    total = 2 * EVERY_ROUNDS + 5
    for r in range(total):
        show(round_result(r, {"n1": True, "n2": r not in (3, 4)}), total)
    show.close()
    rounds = [int(line.split()[1].split("/")[0]) for line in pipe.getvalue().splitlines()]
    # first, n2 down, n2 back, every EVERY_ROUNDS-th, last
    assert rounds == [1, 4, 6, EVERY_ROUNDS, 2 * EVERY_ROUNDS, total]
    assert "\r" not in pipe.getvalue()


def test_namesrv_list_is_parsed_once_for_all_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [n.addr for n in parse_namesrv("h1:9876; h2:9876,h3:1")] == ["h1:9876", "h2:9876",
                                                                       "h3:1"]
    with pytest.raises(UserError, match="expected host:port"):
        parse_namesrv("h1")
    with pytest.raises(UserError, match="no address"):
        parse_namesrv(" ; ")
    monkeypatch.setenv(NAMESRV_ENV, "e:1;e:2")
    assert resolve(None, None).addrs == ["e:1", "e:2"]
    assert resolve("x:1", None).addrs == ["x:1"]


@pytest.fixture
def snapshot_nodes() -> Iterator[list[FakeNameServer]]:
    def handler(c: RemotingCommand) -> RemotingCommand:
        assert c.code == RequestCode.GET_NODE_SNAPSHOT
        return reply(body=orjson.dumps({"node": "x", "seq": 1, "takenAt": 1, "tables": {
            "kv": {"ns": {"k": "v"}}}}))

    nodes = [FakeNameServer(handler).start() for _ in range(2)]
    yield nodes
    for n in nodes:
        n.stop()


def test_audit_collect_takes_remote_addresses(snapshot_nodes: list[FakeNameServer],
                                              tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    ns = ";".join(n.addr for n in snapshot_nodes)
    out = tmp_path / "c"
    assert main(["audit", "collect", "-n", ns, "--interval", "0.2s", "--duration", "0.2s",
                 "--out", str(out)]) == 0
    assert "collected 2 rounds from 2 nodes" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert [n["address"] for n in manifest["nodes"]] == [n.addr for n in snapshot_nodes]
    assert len(list(out.glob("*.jsonl"))) == 2
    assert main(["audit", "collect", "-n", ns, "--node", f"a={snapshot_nodes[0].addr}",
                 "--out", str(tmp_path / "d")]) == 2
    assert "--node replaces -n" in capsys.readouterr().err
