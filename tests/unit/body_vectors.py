"""Java 4.9.7 golden captures and vectors.json, shared by the body codec tests."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REFERENCE = SHARED / "reference"
GOLDEN = REFERENCE / "java-4.9.7-golden"

needs_reference = pytest.mark.skipif(
    not REFERENCE.is_dir(), reason=f"reference material not found at {REFERENCE}"
)


def golden_index() -> list[dict[str, Any]]:
    if not GOLDEN.is_dir():
        return []
    return json.loads((GOLDEN / "index.json").read_text())  # type: ignore[no-any-return]


def load_vectors() -> dict[str, dict[str, Any]]:
    data = json.loads((REFERENCE / "vectors.json").read_text())
    return {v["name"]: v for v in data["vectors"]}


def frame_body(prefix: str, kind: str) -> bytes:
    frame = bytes.fromhex((GOLDEN / f"{prefix}.{kind}.hex").read_text().strip())
    (total, word) = struct.unpack_from(">ii", frame, 0)
    assert total == len(frame) - 4
    return frame[8 + (word & 0xFFFFFF) :]


INDEX = golden_index()
REGISTER_CASES = [e for e in INDEX if e["request"]["header"]["code"] == 103]
RESPONSE_CASES = [e for e in INDEX if (e.get("response") or {}).get("body_len")]


def case_ids(cases: list[dict[str, Any]]) -> list[str]:
    return [e["file_prefix"] for e in cases]
