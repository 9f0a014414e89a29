"""Seeded random request sequences, every reply diffed (property-based differential test).

`PYNAMESRV_DIFF_SEQUENCES` and `PYNAMESRV_DIFF_SEED` change how many sequences
run and from which seed; a failure names its seed, which replays it alone. The
sequences run in chunks, each chunk on a fresh pair, so no pair lives long
enough for brokers to expire.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from tests.java_diff import randomseq
from tests.java_diff.conftest import RENEW_AFTER_S
from tests.java_diff.marks import JAVA
from tests.java_diff.pair import Pair

pytestmark = JAVA
SEQUENCES = int(os.environ.get("PYNAMESRV_DIFF_SEQUENCES", "40"))
FIRST_SEED = int(os.environ.get("PYNAMESRV_DIFF_SEED", "1"))
CHUNK = 10
SEEDS = range(FIRST_SEED, FIRST_SEED + SEQUENCES)
CHUNKS = [SEEDS[i:i + CHUNK] for i in range(0, len(SEEDS), CHUNK)]


@pytest.mark.parametrize("seeds", CHUNKS, ids=lambda r: f"seeds{r.start}-{r.stop - 1}")
def test_random_sequences(fresh_pair: Callable[[], Pair], seeds: range) -> None:
    pair = fresh_pair()
    for seed in seeds:
        if pair.age > RENEW_AFTER_S:  # sequences that wait out timeouts age a pair faster
            pair = fresh_pair()
        pair.run(randomseq.sequence(seed, prefix=f"r{seed}-"), f"random sequence seed={seed}")
