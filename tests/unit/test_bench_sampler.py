"""TreeSampler on this process: peak memory (PSS or RSS) and CPU time of the tree."""

from __future__ import annotations

import os

import psutil
import pytest

from cluster.bench.sampler import TreeSampler


@pytest.mark.parametrize("memory", ["pss", "rss"])
def test_samples_peak_memory_and_cpu_of_this_process(memory: str) -> None:
    with TreeSampler(os.getpid(), period=0.01, memory=memory) as sampler:  # type: ignore[arg-type]
        sum(range(200_000))
        sampler.sample()
    assert sampler.peak_bytes > 0
    assert sampler.cpu_s >= 0.0 and sampler.elapsed > 0.0
    if memory == "rss":
        assert sampler.peak_bytes >= psutil.Process().memory_info().rss // 2
