"""worker.compiled: which build a checkout uses, and when a node loads it (the build itself and
a node running it: tests/integration/test_compiled_node.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from worker import compiled


def _checkout(root: Path) -> Path:
    for name in ("cluster/__init__.py", "cluster/core/a.py", "state/b.py", "worker/c.py",
                 "worker/io/d.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    return root


def _built(root: Path) -> Path:
    """A finished build of ``root`` as ``build`` leaves it (empty files for the modules)."""
    directory = compiled.build_dir(root)
    for name in compiled.MODULES:
        path = compiled.module_file(directory, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    (directory / f"abc__mypyc{compiled._SUFFIX}").write_bytes(b"")
    (directory / compiled.DONE).write_text("")
    return directory


@pytest.fixture
def meta_path(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """sys.meta_path as a copy: what install adds goes with the test."""
    finders = list(sys.meta_path)
    monkeypatch.setattr(sys, "meta_path", finders)
    monkeypatch.delenv(compiled.ENV, raising=False)
    for name in compiled.MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    return finders


def test_the_key_follows_every_source_the_modules_may_import(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    key = compiled.build_key(root)
    assert compiled.build_key(root) == key
    for name in ("state/b.py", "cluster/core/a.py", "worker/io/d.py", "cluster/__init__.py"):
        before = (root / name).read_text()
        (root / name).write_text(before + "x = 1\n")
        assert compiled.build_key(root) != key, name
        (root / name).write_text(before)
    assert compiled.build_key(root) == key
    (root / "worker/io/new.py").write_text("")
    assert compiled.build_key(root) != key
    (root / "worker/io/new.py").unlink()
    (root / "cluster/bench.py").write_text("")  # not importable by the compiled modules
    assert compiled.build_key(root) == key


def test_a_build_of_these_sources_is_loaded_in_front_of_them(tmp_path: Path,
                                                            meta_path: list[object]) -> None:
    root = _checkout(tmp_path)
    directory = _built(root)
    assert compiled.install(root) == "compiled" == compiled.status()
    finder = meta_path[0]
    assert isinstance(finder, compiled._Finder)
    spec = finder.find_spec("worker.io.hub")
    assert spec is not None and spec.origin == str(compiled.module_file(directory, "worker.io.hub"))
    assert finder.find_spec("abc__mypyc") is not None  # mypyc's library of the modules
    assert finder.find_spec("worker.io.connection") is None  # everything else: the sources
    assert compiled.install(root) == "compiled" and len(meta_path) == len(sys.meta_path)


def test_sources_changed_since_the_build_run_plain(tmp_path: Path,
                                                  meta_path: list[object]) -> None:
    root = _checkout(tmp_path)
    _built(root)
    (root / "worker/c.py").write_text("changed = True\n")
    assert compiled.install(root).startswith("plain: not built")
    assert not any(isinstance(f, compiled._Finder) for f in meta_path)


def test_no_build_an_unfinished_one_or_switched_off_run_plain(
        tmp_path: Path, meta_path: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    root = _checkout(tmp_path)
    assert compiled.install(root).startswith("plain: not built")
    directory = _built(root)
    compiled.module_file(directory, "worker.io.hub").unlink()
    assert compiled.install(root).startswith("plain:") and "incomplete" in compiled.status()
    compiled.module_file(directory, "worker.io.hub").write_bytes(b"")
    monkeypatch.setenv(compiled.ENV, "0")
    assert compiled.install(root).startswith("off")
    assert not any(isinstance(f, compiled._Finder) for f in meta_path)


def test_nothing_is_loaded_once_a_module_is_imported_plain(
        tmp_path: Path, meta_path: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled module calls the others' functions and classes directly: all or none."""
    root = _checkout(tmp_path)
    _built(root)
    monkeypatch.setitem(sys.modules, "worker.generation_cache", sys)
    assert compiled.install(root) == "plain: worker.generation_cache imported already"
    assert not any(isinstance(f, compiled._Finder) for f in meta_path)


def test_the_command_line_builds_or_says_why_not(capsys: pytest.CaptureFixture[str]) -> None:
    assert compiled.main(["nonsense"]) == 2
    assert "usage" in capsys.readouterr().err
