"""The import rules of docs/architecture.md, checked on the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("cluster", "worker", "state", "supervisor")

# folder -> the project modules its files may import (prefixes); one row per layer
ALLOWED: dict[str, set[str]] = {
    "cluster/core": {"cluster.core"},
    "state": {"cluster.core", "state"},
    "worker": {"cluster.core", "state", "worker"},
    "supervisor": {"cluster.core", "supervisor"},
    "cluster/client": {"cluster.core", "cluster.client"},
    "cluster/audit": {"cluster.core", "cluster.client", "cluster.audit"},
    "cluster/peers": {"cluster.core", "cluster.peers"},
    "cluster/bench": {"cluster.core", "cluster.client", "cluster.audit", "cluster.peers",
                      "cluster.bench"},
    "cluster/chaos": {"cluster.core", "cluster.client", "cluster.audit", "cluster.chaos",
                      "supervisor.control_client"},
    "cluster/addr": {"cluster.core", "cluster.client", "cluster.audit", "cluster.addr",
                     "supervisor.control_client"},
    "cluster/cli": {"cluster", "supervisor.cli"},
}

# folder -> libraries its files must never import
FORBIDDEN_LIBS: dict[str, set[str]] = {
    "cluster/core": {"zmq", "lmdb", "pyspark", "asyncio", "uvloop", "psutil", "multiprocess"},
    "cluster/core/protocol": {"socket"},
    "state": {"zmq", "socket", "asyncio", "uvloop", "cluster.core.protocol.codes"},
    "worker/io": {"worker.business", "worker.controller"},
    "worker/business": {"worker.io", "worker.controller"},
}
WORKER_SIDES = ("worker.controller", "worker.io", "worker.business")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a.b import c`: c may be a module (a.b.c) or a name in a.b; either way
            # the import reaches a.b.c's prefix a.b.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _under(name: str, prefixes: set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _project_violations(folder: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for name in _imports(path):
            if name.split(".")[0] in PROJECT and not _under(name, ALLOWED[folder]):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


def _library_violations(folder: str) -> list[str]:
    return [f"{path.relative_to(ROOT)} imports {name}"
            for path in sorted((ROOT / folder).rglob("*.py"))
            for name in _imports(path) if _under(name, FORBIDDEN_LIBS[folder])]


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_folder_imports_only_layers_below(folder: str) -> None:
    assert _project_violations(folder) == []


@pytest.mark.parametrize("folder", sorted(FORBIDDEN_LIBS))
def test_folder_keeps_out_of_libraries(folder: str) -> None:
    assert _library_violations(folder) == []


def test_every_module_has_a_layer() -> None:
    """A new folder (or a module loose in ``cluster/``) needs a row in ALLOWED and the doc."""
    homeless = []
    for top in PROJECT:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "cluster/__init__.py":
                continue
            if not any(rel.startswith(folder + "/") for folder in ALLOWED):
                homeless.append(rel)
    assert homeless == []


def test_architecture_doc_names_every_layer() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [f for f in ALLOWED if f"`{f.replace('/', '.')}`" not in doc]
    assert missing == []


def test_rule_detects_a_violation(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import worker.controller\nfrom state.store import Store\n"
                                   "def f():\n    from supervisor import cli\n")
    assert _imports(tmp_path / "m.py") == {"worker.controller", "state.store.Store",
                                           "supervisor.cli"}
    assert not _under("supervisor", ALLOWED["cluster/chaos"])
    assert _under("cluster.core.protocol.frame", ALLOWED["state"])
    (tmp_path / "n.py").write_text("from cluster.core.protocol import codes\n")
    assert any(_under(n, FORBIDDEN_LIBS["state"]) for n in _imports(tmp_path / "n.py"))


def test_worker_root_modules_import_no_process_folder() -> None:
    bad = [f"{path.name} imports {name}" for path in sorted((ROOT / "worker").glob("*.py"))
           for name in _imports(path) if _under(name, set(WORKER_SIDES))]
    assert bad == []
