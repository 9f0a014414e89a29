"""The scenario corpus against the real Java NameServer 4.9.8 and a pynamesrv node."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cluster.core.protocol.codes import SerializeType
from tests.java_diff import malformed, scenarios
from tests.java_diff.marks import JAVA
from tests.java_diff.pair import Pair

pytestmark = JAVA
ENCODINGS = (SerializeType.JSON, SerializeType.ROCKETMQ)


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.name)
@pytest.mark.parametrize("name", sorted(scenarios.SHARED))
def test_shared_scenario(shared_pair: Pair, name: str, encoding: SerializeType) -> None:
    prefix = f"{name}-{encoding.name[0]}-"
    shared_pair.run(scenarios.SHARED[name](prefix, encoding), f"{name}/{encoding.name}")


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.name)
@pytest.mark.parametrize("name", sorted(scenarios.FRESH))
def test_fresh_scenario(fresh_pair: Callable[[], Pair], name: str,
                        encoding: SerializeType) -> None:
    prefix = f"{name}-{encoding.name[0]}-"
    fresh_pair().run(scenarios.FRESH[name](prefix, encoding), f"{name}/{encoding.name}")


def test_malformed_frames_and_headers(shared_pair: Pair) -> None:
    shared_pair.run(malformed.steps(), "malformed")
