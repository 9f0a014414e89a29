"""Where installed peers live: a cache outside the clone, shared by every checkout and CI.

``$PYNAMESRV_PEERS_CACHE``, else ``$XDG_CACHE_HOME/pynamesrv/peers``, else
``~/.cache/pynamesrv/peers``. A part that could not be installed because its registry
did not answer leaves a one-line reason in ``unavailable/<part>``, which the tests show
when they skip.
"""

from __future__ import annotations

import os
from pathlib import Path


def root() -> Path:
    explicit = os.environ.get("PYNAMESRV_PEERS_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pynamesrv" / "peers"


def maven_repo() -> Path:
    return root() / "m2"


def classpath_file(release: str, component: str) -> Path:
    return root() / "java" / release / f"{component}.classpath"


def bin_dir() -> Path:
    return root() / "bin"


def rust_root() -> Path:
    return root() / "rust"


def _reason_file(part: str) -> Path:
    return root() / "unavailable" / part


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def mark_unavailable(part: str, reason: str) -> None:
    write_atomic(_reason_file(part), reason.strip() + "\n")


def clear_unavailable(part: str) -> None:
    _reason_file(part).unlink(missing_ok=True)


def unavailable_reason(part: str) -> str:
    """The recorded reason ``part`` could not be installed, or ""."""
    try:
        return _reason_file(part).read_text().strip()
    except OSError:
        return ""
