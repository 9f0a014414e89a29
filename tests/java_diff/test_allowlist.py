"""The diff suite's allowlist names real rows of README's compatibility table (no Java needed)."""

from __future__ import annotations

from tests.java_diff.allowlist import ALLOWLIST, VERSION_ROW
from tests.nodeproc import ROOT


def compatibility_rows() -> set[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Compatibility", 1)[1].split("\n## ", 1)[0]
    return {line.split("|")[1].strip() for line in section.splitlines()
            if line.startswith("| ") and line.count("|") >= 5}


def test_every_allowlist_entry_is_a_readme_row() -> None:
    rows = compatibility_rows()
    assert "unknown request code" in rows
    missing = [row for row in (*(e.row for e in ALLOWLIST), VERSION_ROW) if row not in rows]
    assert not missing, f"allowlist entries without a README compatibility row: {missing}"


def test_allowlist_stays_small() -> None:
    assert len(ALLOWLIST) <= 6 and len({e.row for e in ALLOWLIST}) == len(ALLOWLIST)
