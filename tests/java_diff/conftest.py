"""Fixtures: a real Java NameServer and a pynamesrv node, started side by side.

Every fixture runs once per Java release (`JAVA_RELEASE`, module-scoped parameter):
4.9 and the newest 5.x. A node is compared with the release whose semantics it is set
to (`NODE_SETTINGS`); against a release listed in `RECORDED` the differences are
recorded in a table of the test report (`tests.java_diff.record`) instead of failing.

`shared_pair` is shared by the tests of one module and release: scenarios that only add
state under names of their own run on it in lockstep (whatever one side received, so did
the other, so their states stay equal); a test that finds it older than `RENEW_AFTER_S`
gets a new one. `fresh_pair()` starts a new pair for a scenario that needs empty tables or
leaves the sides deliberately different. A pair is used only while younger than the
brokers' expiry (`Pair.check`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.java_diff.pair import Pair
from tests.java_diff.sides import Side
from tests.javaproc import RELEASE_4, RELEASE_5, RELEASES, JavaNamesrv, java_missing
from tests.nodeproc import NodeProcess

# Node settings that make a node follow the release it is compared with (the 4.9 line's
# oracle is 4.9.7, the node follows 4.9.8: README's compatibility table says where they
# differ).
NODE_SETTINGS: dict[str, dict[str, str]] = {RELEASE_4: {"rocketmqVersion": "4.9.8"},
                                             RELEASE_5: {"rocketmqVersion": "5.5.0"}}
# Releases the node does not follow yet: differences are recorded, not failed (none now;
# a newer release is added here until the node follows it).
RECORDED: frozenset[str] = frozenset()
# A shared pair older than this is replaced before the next test uses it: no scenario
# runs longer than MAX_AGE_S - RENEW_AFTER_S on it.
RENEW_AFTER_S = 50.0


@pytest.fixture(scope="module", params=RELEASES, ids=lambda r: f"java{r}")
def java_release(request: pytest.FixtureRequest) -> str:
    release: str = request.param
    if why := java_missing(release):
        pytest.skip(why)
    return release


def start_pair(stack: ExitStack, workdir: Path, release: str,
               settings: dict[str, str] | None = None) -> Pair:
    """A Java NameServer and a node, both with the NameServer `settings` given."""
    java = JavaNamesrv(workdir / "java", release=release, props=settings)
    stack.callback(java.stop)
    node = NodeProcess(workdir / "node", name="diff",
                       props={**NODE_SETTINGS[release], **(settings or {})})
    stack.callback(node.stop)
    java.launch()  # the node boots while the JVM does
    node.start()
    java.booted()
    pair = Pair(Side("java", java.addr), Side("pynamesrv", node.addr),
                record=release if release in RECORDED else None)
    stack.callback(pair.close)
    return pair


class SharedPair:
    """The module's pair for one release, replaced when it grows too old."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory, release: str) -> None:
        self.factory = tmp_path_factory
        self.release = release
        self.stack: ExitStack | None = None
        self.pair: Pair | None = None

    def get(self) -> Pair:
        if self.pair is None or self.pair.age > RENEW_AFTER_S:
            self.close()
            self.stack = ExitStack()
            self.pair = start_pair(self.stack, self.factory.mktemp(f"pair-{self.release}"),
                                   self.release)
        return self.pair

    def close(self) -> None:
        if self.stack is not None:
            self.stack.close()
        self.stack = self.pair = None


@pytest.fixture(scope="module")
def shared_pairs(tmp_path_factory: pytest.TempPathFactory,
                 java_release: str) -> Iterator[SharedPair]:
    shared = SharedPair(tmp_path_factory, java_release)
    try:
        yield shared
    finally:
        shared.close()


@pytest.fixture
def shared_pair(shared_pairs: SharedPair) -> Pair:
    return shared_pairs.get()


@pytest.fixture
def fresh_pair(tmp_path: Path, java_release: str
               ) -> Iterator[Callable[..., Pair]]:
    """Starts a new pair, with the NameServer settings passed (`fresh_pair(settings)`)."""
    with ExitStack() as stack:
        count = iter(range(1_000))
        yield lambda settings=None: start_pair(stack, tmp_path / f"pair-{next(count)}",
                                               java_release, settings)


WRITTEN: list[tuple[str, int, Path]] = []  # (release, differences, table) of this process


def pytest_sessionfinish() -> None:
    """Tables written in every process (an xdist worker has no terminal summary)."""
    from tests.java_diff import record

    WRITTEN.extend(record.write_tables())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for release, count, path in WRITTEN:
        terminalreporter.write_line(
            f"java diff {release}: {count} differences recorded (not failed): {path}")
