"""TreeSampler on this process: peak memory (PSS or RSS) and CPU time of the tree; memory
read only every ``memory_period``."""

from __future__ import annotations

import contextlib
import os
from types import SimpleNamespace

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


class FakeProcess:
    """What the sampler asks of a process: its pid, CPU times, a oneshot() context."""

    pid = 7

    def __init__(self) -> None:
        self.cpu_reads = 0

    def oneshot(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()

    def cpu_times(self) -> SimpleNamespace:
        self.cpu_reads += 1
        return SimpleNamespace(user=float(self.cpu_reads), system=0.0)


def test_memory_is_read_once_per_memory_period_and_cpu_on_every_tick() -> None:
    now = [100.0]
    sampler = TreeSampler(os.getpid(), memory="rss", memory_period=1.0, clock=lambda: now[0])
    proc = FakeProcess()
    reads: list[int] = []

    def memory(p: object) -> int:
        reads.append(1)
        return 1000 * len(reads)

    sampler._procs = lambda: [proc]  # type: ignore[method-assign, list-item]
    sampler._memory = memory  # type: ignore[assignment]
    sampler.sample()  # as on entering: memory now, the next reading due a period later
    assert (len(reads), proc.cpu_reads, sampler.peak_bytes) == (1, 1, 1000)
    for step in (0.2, 0.4, 0.6, 0.8):
        now[0] = 100.0 + step
        sampler.tick()
    assert (len(reads), proc.cpu_reads) == (1, 5)
    assert sampler._cpu == {7: 5.0}
    now[0] = 101.0
    sampler.tick()
    assert (len(reads), proc.cpu_reads, sampler.peak_bytes) == (2, 6, 2000)
    now[0] = 101.2
    sampler.tick()
    assert len(reads) == 2
    sampler.sample()  # an explicit sample (on leaving) always reads memory
    assert (len(reads), sampler.peak_bytes) == (3, 3000)
