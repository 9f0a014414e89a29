"""What 5.x brokers and clients send (`scenarios5`), against both releases: the node
following 5.x against Java 5.5.0, and following 4.9.8 against the 4.9 line, which ignores
what 5.x adds. A group runs on a pair of its own, with its NameServer settings on both
sides."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cluster.core.protocol.codes import SerializeType
from tests.java_diff import scenarios5
from tests.java_diff.marks import JAVA
from tests.java_diff.pair import Pair
from tests.javaproc import RELEASE_5

pytestmark = JAVA
ENCODINGS = (SerializeType.JSON, SerializeType.ROCKETMQ)


@pytest.mark.parametrize("group", sorted(scenarios5.GROUPS))
def test_five_scenarios(fresh_pair: Callable[..., Pair], java_release: str, group: str) -> None:
    settings, scenarios, five_only = scenarios5.GROUPS[group]
    if five_only and java_release != RELEASE_5:
        pytest.skip("5.x requests that 4.9 answers differently on purpose (README)")
    pair = fresh_pair(settings)
    for scenario in scenarios:
        for encoding in ENCODINGS:
            name = scenario.__name__
            pair.run(scenario(f"{name}-{encoding.name[0]}-", encoding), f"{name}/{encoding.name}")
