"""Fixtures shared by the unit tests of the request processors and the state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from state.store import Store
from tests.unit.test_processors import make_ctx
from worker.business.context import NodeContext


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh LMDB store of 32 MiB, removed afterwards."""
    s = Store.create(str(tmp_path / "lmdb"), 32 << 20)
    yield s
    s.destroy()


@pytest.fixture()
def ctx(store: Store, tmp_path: Path) -> NodeContext:
    """A processor context over ``store`` with its KV and config files in ``tmp_path``."""
    return make_ctx(store, kv_path=str(tmp_path / "kv.json"),
                    config_path=str(tmp_path / "namesrv.properties"))
