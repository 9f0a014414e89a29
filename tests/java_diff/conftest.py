"""Fixtures: the real Java NameServer 4.9.8 and a pynamesrv node, started side by side.

`shared_pair` lives for one test module: scenarios that only add state under
names of their own run on it in lockstep (whatever one side received, so did
the other, so their states stay equal). `fresh_pair()` starts a new pair for a
scenario that needs empty tables or leaves the sides deliberately different.
A pair is used only while younger than the brokers' expiry (`Pair.check`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.java_diff.pair import Pair
from tests.java_diff.sides import Side
from tests.javaproc import JavaNamesrv
from tests.nodeproc import NodeProcess


def start_pair(stack: ExitStack, workdir: Path) -> Pair:
    java = JavaNamesrv(workdir / "java")
    stack.callback(java.stop)
    node = NodeProcess(workdir / "node", name="diff")
    stack.callback(node.stop)
    java.start()
    node.start()
    pair = Pair(Side("java", java.addr), Side("pynamesrv", node.addr))
    stack.callback(pair.close)
    return pair


@pytest.fixture(scope="module")
def shared_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    with ExitStack() as stack:
        yield start_pair(stack, tmp_path_factory.mktemp("shared-pair"))


@pytest.fixture
def fresh_pair(tmp_path: Path) -> Iterator[Callable[[], Pair]]:
    with ExitStack() as stack:
        count = iter(range(1_000))
        yield lambda: start_pair(stack, tmp_path / f"pair-{next(count)}")
