"""The 48 Java 4.9.7 golden captures replayed through handle() (no network)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.core.protocol.command import RemotingCommand
from state.store import Store
from tests.golden_replay import BRIDGES, KNOWN_DIFFERENCES, entries, needs_golden, replay_all
from tests.unit.test_processors import make_ctx
from worker.business.context import NodeContext
from worker.business.processors import handle

pytestmark = needs_golden


@pytest.fixture()
def ctx(tmp_path: Path) -> Iterator[NodeContext]:
    store = Store.create(str(tmp_path / "lmdb"), 32 << 20)
    now = [1795281840000]

    def clock() -> int:
        now[0] += 1000
        return now[0]

    yield make_ctx(store, clock, str(tmp_path / "kv.json"), str(tmp_path / "ns.properties"))
    store.destroy()


def test_golden_replay_in_order(ctx: NodeContext) -> None:
    def send(cmd: RemotingCommand, channel: str) -> RemotingCommand | None:
        return handle(ctx, cmd, channel, "127.0.0.1:40000")

    failures = replay_all(send)
    assert not failures, "\n".join(failures)


def test_known_differences_name_real_captures() -> None:
    prefixes = {e["file_prefix"] for e in entries()}
    assert set(KNOWN_DIFFERENCES) <= prefixes and set(BRIDGES) <= prefixes
    assert all(d["reason"] and d["java"] for d in KNOWN_DIFFERENCES.values())
