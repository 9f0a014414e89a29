"""The node's hottest modules compiled to C by mypyc, and loading them in a node.

Every route lookup an I/O worker answers from its templates runs ``Hub.on_frames``,
``header_key`` and ``FrameReader.feed``: with one I/O worker on its core, the Python they run
is what bounds the node's reads. ``scripts/setup.sh`` compiles ``MODULES`` with mypyc
(``python -m worker.compiled build``; mypyc comes with mypy, a C compiler and Python's
headers are needed) into ``.cache/compiled/KEY`` of the checkout, KEY a digest of every
source those modules can import (``SOURCES``) and of the interpreter: a build is used only
for the very sources it was made from, so an edited checkout runs as plain Python until
set up again.

``install`` (called by the node's entry points, ``python -m worker.controller`` and the
supervisor's node launcher, before they import the node) puts the build in front of the
sources when there is one for this checkout; the test process never calls it, so unit
tests run the plain modules. ``PYNAMESRV_COMPILED=0`` keeps a node plain.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

# Compiled together: a compiled module calls another's functions and classes directly.
MODULES = (
    "cluster.core.javaorder",
    "cluster.core.protocol.frame",
    "worker.generation_cache",
    "worker.io.route_replies",
    "worker.io.hub",
)
# What the compiled modules may import (docs/architecture.md): their build depends on it.
SOURCES = ("cluster/__init__.py", "cluster/core", "state", "worker")
ENV = "PYNAMESRV_COMPILED"
DONE = "done"  # written last into a finished build
ROOT = Path(__file__).resolve().parent.parent
_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
_status = "plain: not installed"


def source_files(root: Path) -> list[Path]:
    """The sources a build depends on, in a fixed order."""
    files: list[Path] = []
    for name in SOURCES:
        path = root / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def build_key(root: Path) -> str:
    """The build of these sources for this interpreter."""
    digest = hashlib.sha256(f"{sys.implementation.cache_tag} {_SUFFIX}\n".encode())
    for path in source_files(root):
        data = path.read_bytes()
        digest.update(b"%s %d\n" % (path.relative_to(root).as_posix().encode(), len(data)))
        digest.update(data)
    return digest.hexdigest()[:24]


def build_dir(root: Path = ROOT) -> Path:
    return root / ".cache" / "compiled" / build_key(root)


def module_file(directory: Path, name: str) -> Path:
    return directory.joinpath(*name.split(".")).with_name(name.rsplit(".", 1)[-1] + _SUFFIX)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds exactly the modules of one build: ``MODULES`` and mypyc's library of theirs."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def status() -> str:
    """What the last ``install`` did, in words (``compiled`` when it loaded the build)."""
    return _status


def install(root: Path = ROOT) -> str:
    """Load ``MODULES`` from this checkout's build from now on; ``status``."""
    global _status
    _status = _install(root)
    return _status


def _install(root: Path) -> str:
    if os.environ.get(ENV, "1") == "0":
        return f"off ({ENV}=0)"
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return "compiled"
    loaded = [name for name in MODULES if name in sys.modules]
    if loaded:
        return f"plain: {', '.join(loaded)} imported already"
    directory = build_dir(root)
    if not (directory / DONE).is_file():
        return "plain: not built for these sources (scripts/setup.sh builds it)"
    files = {name: module_file(directory, name) for name in MODULES}
    files.update((path.name.split(".")[0], path) for path in directory.glob(f"*__mypyc{_SUFFIX}"))
    if not all(path.is_file() for path in files.values()):
        return f"plain: {directory} is incomplete"
    sys.meta_path.insert(0, _Finder(files))
    return "compiled"


def build(root: Path = ROOT) -> Path:
    """Compile ``MODULES`` of the checkout at ``root`` unless built already; the build's
    directory. Raises RuntimeError with mypyc's output when it cannot."""
    target = build_dir(root)
    if (target / DONE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix="tmp-") as tmp:
        work = Path(tmp) / "src"
        for path in [*source_files(root), root / "pyproject.toml"]:
            copy = work / path.relative_to(root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
        paths = [name.replace(".", "/") + ".py" for name in MODULES]
        done = subprocess.run([sys.executable, "-m", "mypyc", *paths], cwd=work,
                              capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"mypyc failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        staged = Path(tmp) / "out"
        built = [module_file(Path(), name) for name in MODULES]
        built += [path.relative_to(work) for path in work.glob(f"*__mypyc{_SUFFIX}")]
        for path in built:
            (staged / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(work / path, staged / path)
        (staged / DONE).write_text("\n".join(MODULES) + "\n")
        for old in target.parent.iterdir():  # one build per checkout: the older ones go
            if old.is_dir() and not old.name.startswith("tmp-") and old != target:
                shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(staged, target)
        except OSError:
            if not (target / DONE).is_file():  # else another build of the same got there first
                raise
    return target


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["build"]:
        print("usage: python -m worker.compiled build", file=sys.stderr)
        return 2
    try:
        print(build())
    except (RuntimeError, OSError) as exc:
        print(f"compiling {', '.join(MODULES)} failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
