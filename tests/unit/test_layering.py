"""The import rules of docs/architecture.md, checked on the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# package -> top-level modules it must never import
FORBIDDEN: dict[str, set[str]] = {
    "cluster/protocol": {"worker", "state", "supervisor", "zmq", "socket", "asyncio", "lmdb",
                         "pyspark", "cluster.client", "cluster.audit", "cluster.chaos"},
    "state": {"worker", "supervisor", "zmq", "socket", "asyncio", "uvloop"},
    "worker": {"supervisor", "cluster.client", "cluster.audit", "cluster.chaos"},
    "supervisor": {"worker", "state"},
    "cluster": {"worker", "state"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _violations(package: str, forbidden: set[str]) -> list[str]:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_respects_layering(package: str) -> None:
    assert _violations(package, FORBIDDEN[package]) == []


def test_rule_detects_a_violation(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import worker.node\nfrom state.store import Store\n")
    assert _imports(tmp_path / "m.py") == {"worker.node", "state.store"}
