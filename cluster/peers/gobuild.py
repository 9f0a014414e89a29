"""The Go probe (``goprobe/``: the Apache RocketMQ Go client), built into the cache.

Its ``go.mod`` pins the client's version and ``go.sum`` the checksums; the Go module
proxy serves the modules into Go's own module cache, outside the clone.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from cluster.peers import cache

SOURCE = Path(__file__).with_name("goprobe")
BUILD_TIMEOUT_S = 1800.0
UNREACHABLE = re.compile(r"dial tcp|no such host|i/o timeout|connection refused|"
                         r"network is unreachable|TLS handshake timeout", re.I)


class GoUnreachable(Exception):
    """The Go module proxy did not answer."""


class GoBuildFailed(Exception):
    pass


def _digest() -> str:
    h = hashlib.sha256()
    for path in sorted(SOURCE.iterdir()):
        if path.is_file():
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def probe_path() -> Path:
    return cache.bin_dir() / f"goprobe-{_digest()}"


def installed() -> Path | None:
    path = probe_path()
    return path if path.is_file() else None


def missing() -> str:
    """Why the Go probe cannot run here, or ""."""
    if installed() is not None:
        return ""
    return (cache.unavailable_reason("go")
            or "the Go probe is not built (pynamesrv peer install --go)")


def build() -> Path:
    """Build the probe (downloading the client through the module proxy) unless cached."""
    target = probe_path()
    if target.is_file():
        return target
    go = shutil.which("go")
    if go is None:
        raise GoBuildFailed("Go is not installed (go on the PATH)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    done = subprocess.run([go, "build", "-mod=readonly", "-o", str(tmp), "."], cwd=SOURCE,
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                          env={**os.environ, "CGO_ENABLED": "0"}, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()
        hit = next((ln for ln in output.splitlines() if UNREACHABLE.search(ln)), "")
        if hit:
            raise GoUnreachable(f"the Go module proxy did not answer: {hit.strip()[:300]}")
        raise GoBuildFailed(f"go build of the Go probe failed: {output[-500:]}")
    tmp.replace(target)
    return target
