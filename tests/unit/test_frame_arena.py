"""Large frames in shared memory: extents handed out and given back, the file's memory
bounded, and the business worker's read-only view of the same bytes."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from worker.frame_arena import PAGE, ArenaReader, FrameArena, arena_path, arena_size

MB = 1 << 20


@pytest.fixture
def arena(tmp_path: Path):  # type: ignore[no-untyped-def]
    a = FrameArena(tmp_path, 0, 8 * MB, keep=2 * MB)
    yield a
    a.close()


def test_extents_are_page_aligned_and_do_not_overlap(arena: FrameArena) -> None:
    a, b = arena.alloc(PAGE + 1), arena.alloc(10)
    assert a is not None and b is not None and (len(a), len(b)) == (PAGE + 1, 10)
    assert (arena.offset(a), arena.offset(b)) == (0, 2 * PAGE)
    a[:] = b"x" * len(a)
    b[:] = b"y" * len(b)
    assert bytes(arena.view[: PAGE + 1]) == b"x" * (PAGE + 1)


def test_released_extents_join_up_and_are_used_again(arena: FrameArena) -> None:
    views = [arena.alloc(MB) for _ in range(8)]
    assert all(v is not None for v in views) and arena.alloc(1) is None  # full
    for v in views[1:4]:
        arena.release(v)  # type: ignore[arg-type]
    again = arena.alloc(3 * MB)  # only the three joined extents hold it
    assert again is not None and arena.offset(again) == MB
    for v in (views[0], again, *views[4:]):
        arena.release(v)  # type: ignore[arg-type]
    assert arena.free_list == [(0, 8 * MB)] and arena.used == {}


def test_a_view_from_the_start_of_an_extent_releases_it(arena: FrameArena) -> None:
    v = arena.alloc(100)
    assert v is not None and arena.owns(memoryview(v)[0:]) and not arena.owns(memoryview(b"x"))
    arena.release(memoryview(v)[0:])
    assert arena.used == {}


def test_a_second_release_is_logged_and_changes_nothing(arena: FrameArena,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    v = arena.alloc(100)
    assert v is not None
    arena.release(v)
    with caplog.at_level(logging.ERROR):
        arena.release(v)
    assert "frame_arena_double_release" in caplog.text
    assert arena.free_list == [(0, 8 * MB)]


def resident(path: Path) -> int:
    return os.stat(path).st_blocks * 512


def test_memory_above_keep_is_given_back_once_nothing_there_is_in_use(arena: FrameArena
                                                                      ) -> None:
    low, high = arena.alloc(2 * MB), arena.alloc(3 * MB)
    assert low is not None and high is not None
    high[:] = b"z" * len(high)
    assert arena.backed == 5 * MB and resident(arena.path) >= 5 * MB
    arena.release(high)
    assert arena.backed == 2 * MB and resident(arena.path) <= 2 * MB  # the hole is punched
    again = arena.alloc(3 * MB)  # backed afresh, reads as zeros
    assert again is not None and bytes(again[:4]) == b"\0\0\0\0"


def test_a_file_that_cannot_grow_refuses_the_extent(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    arena = FrameArena(tmp_path, 0, 8 * MB)

    def full(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    try:
        assert arena.alloc(MB) is None and arena.used == {}
    finally:
        arena.close()


def test_a_killed_predecessors_file_is_removed_and_close_removes_its_own(tmp_path: Path
                                                                          ) -> None:
    stale = arena_path(tmp_path, 0, 999_999_999)
    stale.write_bytes(b"old")
    other = arena_path(tmp_path, 1, 999_999_999)  # another I/O worker's
    other.write_bytes(b"old")
    arena = FrameArena(tmp_path, 0, MB)
    assert not stale.exists() and other.exists() and arena.path.exists()
    arena.close()
    assert not arena.path.exists()


def test_the_reader_sees_what_the_writer_wrote(arena: FrameArena, tmp_path: Path) -> None:
    v = arena.alloc(5000)
    assert v is not None
    v[:] = os.urandom(5000)
    reader = ArenaReader(tmp_path)
    got = reader.frame(0, os.getpid(), arena.offset(v), 5000)
    assert bytes(got) == bytes(v)
    with pytest.raises(OSError):
        reader.frame(0, os.getpid(), arena.size - 10, 5000)  # beyond the file
    with pytest.raises(OSError):
        reader.frame(0, os.getpid() + 1, 0, 10)  # a pid with no file: its worker is gone


def test_the_reader_follows_a_restarted_writer(arena: FrameArena, tmp_path: Path) -> None:
    arena_path(tmp_path, 1, 4242).write_bytes(b"old worker")  # index 1's earlier process
    reader = ArenaReader(tmp_path)
    assert bytes(reader.frame(1, 4242, 0, 3)) == b"old"
    v = arena.alloc(3)  # index 0's
    assert v is not None
    v[:] = b"new"
    assert bytes(reader.frame(0, os.getpid(), 0, 3)) == b"new"
    arena_path(tmp_path, 1, 4343).write_bytes(b"its successor")
    assert bytes(reader.frame(1, 4343, 0, 3)) == b"its"  # another pid: mapped afresh
    assert reader.maps[1][0] == 4343


def test_the_file_is_sized_for_several_of_the_largest_frames() -> None:
    assert arena_size(16 * MB) == 256 * MB
    assert arena_size(1 << 30) == 4 << 30
