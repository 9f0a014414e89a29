"""A node run's snapshots: ``seq`` counts within the run, ``run`` names it."""

from __future__ import annotations

from pathlib import Path

from state.snapshot import take_snapshot
from state.store import Store


def test_seq_counts_up_within_a_run_and_a_new_run_has_a_new_id(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "lmdb", 16 << 20)
    first, second = take_snapshot(store, "n1", 1000), take_snapshot(store, "n1", 3000)
    store.close()
    assert (first["run"], first["seq"]) == (1000, 1)
    assert (second["run"], second["seq"], second["takenAt"]) == (1000, 2, 3000)
    again = Store.create(tmp_path / "lmdb", 16 << 20)  # what the node does when it starts
    try:
        after = take_snapshot(again, "n1", 9000)
    finally:
        again.destroy()
    assert (after["run"], after["seq"]) == (9000, 1)
