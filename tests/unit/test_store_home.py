"""A node's store between runs: one controller claims it; leftovers are swept only when
nobody holds them and they can no longer serve a restart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cluster.core.errors import UserError
from worker.controller import store_home
from worker.procs import store_dir


def _store(base: Path, name: str, data_dir: Path, expiry_ms: int, mtime: float) -> Path:
    path = base / name
    fd = store_home.claim(path, wait_s=0)
    store_home.write_owner(path, data_dir, name, 9876, expiry_ms)
    os.close(fd)
    lmdb = store_home.lmdb_dir(path)
    lmdb.mkdir()
    (lmdb / store_home.DATA_NAME).write_bytes(b"x")
    os.utime(lmdb / store_home.DATA_NAME, (mtime, mtime))
    return path


def test_one_controller_per_store(tmp_path: Path) -> None:
    fd = store_home.claim(tmp_path / "s", wait_s=0)
    store_home.write_owner(tmp_path / "s", tmp_path, "n1", 9876, 120_000)
    with pytest.raises(UserError, match=rf"held by another running node \(pid {os.getpid()}\)"):
        store_home.claim(tmp_path / "s", wait_s=0.1)
    os.close(fd)  # the holder exits: the lock goes with it
    os.close(store_home.claim(tmp_path / "s", wait_s=0))


def test_sweep_keeps_what_a_restart_can_use(tmp_path: Path) -> None:
    base, data = tmp_path / "stores", tmp_path / "data"
    data.mkdir()
    now = 1_000_000.0
    fresh = _store(base, "fresh", data, 120_000, now - 60)
    expired = _store(base, "expired", data, 120_000, now - 121)
    orphan = _store(base, "orphan", tmp_path / "removed", 120_000, now)
    held = _store(base, "held", tmp_path / "removed-too", 120_000, now - 1000)
    keep = _store(base, "mine", tmp_path / "removed", 1, 0)
    fd = store_home.claim(held, wait_s=0)
    try:
        assert store_home.sweep(base, keep=keep, now=lambda: now) == 2
    finally:
        os.close(fd)
    assert sorted(p.name for p in base.iterdir()) == ["fresh", "held", "mine"]
    assert fresh.is_dir() and not expired.exists() and not orphan.exists()


def test_one_store_per_data_dir(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert store_dir(tmp_path / "a") == store_dir(tmp_path / "x" / ".." / "a")
    assert store_dir(tmp_path / "a") != store_dir(tmp_path / "b")


def test_a_claim_survives_another_nodes_sweep_of_the_directory_it_just_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s"
    real_open = os.open
    swept: list[str] = []

    def open_after_a_sweep(file: str | os.PathLike[str], flags: int, mode: int = 0o777) -> int:
        if str(file).endswith(store_home.LOCK_NAME) and not swept:  # a sweep between mkdir
            swept.append(str(file))                                # and open
            os.rmdir(path)
        return real_open(file, flags, mode)

    monkeypatch.setattr(os, "open", open_after_a_sweep)
    fd = store_home.claim(path, wait_s=0)
    monkeypatch.undo()
    assert swept and (path / store_home.LOCK_NAME).exists()
    with pytest.raises(UserError):
        store_home.claim(path, wait_s=0)  # it is held
    os.close(fd)
