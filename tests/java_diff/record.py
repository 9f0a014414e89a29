"""Differences seen against a release the node does not follow yet: recorded, not failed.

A pair in record mode adds each unexplained difference here instead of raising;
at the end of the session the table is written as Markdown to the test report
directory (``$PYNAMESRV_REPORT_DIR``, else ``test-artifacts/``), one file per release and
pytest process (a pytest-xdist worker adds its name), and summed up in pytest's terminal
summary.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.nodeproc import ROOT


@dataclass(frozen=True)
class Difference:
    release: str
    context: str
    step: str
    fields: str
    java: str
    ours: str


DIFFERENCES: list[Difference] = []


def add(diff: Difference) -> None:
    DIFFERENCES.append(diff)


def report_dir() -> Path:
    return Path(os.environ.get("PYNAMESRV_REPORT_DIR") or ROOT / "test-artifacts")


def _cell(text: str, limit: int = 300) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit] + " …"


def write_tables() -> list[tuple[str, int, Path]]:
    """One Markdown table per release with recorded differences: (release, count, path)."""
    out = []
    for release in sorted({d.release for d in DIFFERENCES}):
        rows = [d for d in DIFFERENCES if d.release == release]
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        path = report_dir() / f"java-diff-{release}{f'-{worker}' if worker else ''}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        kinds = Counter(d.fields for d in rows)
        lines = [f"# Differences from the Java NameServer {release} ({len(rows)})", "",
                 "| what differs | steps |", "| --- | --- |"]
        lines += [f"| {_cell(fields, 120)} | {n} |" for fields, n in kinds.most_common()]
        lines += ["", "| scenario | step | differs | java | pynamesrv |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {_cell(d.context, 60)} | {_cell(d.step, 80)} | {_cell(d.fields, 80)} | "
                  f"{_cell(d.java)} | {_cell(d.ours)} |" for d in rows]
        path.write_text("\n".join(lines) + "\n")
        out.append((release, len(rows), path))
    return out
