"""The loopback-only bind library (``bindlo.c``), compiled once into the cache."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from cluster.peers import cache

SOURCE = Path(__file__).with_name("bindlo.c")


def bindlo_path() -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    return cache.bin_dir() / f"bindlo-{digest}.so"


def bindlo() -> Path:
    """The compiled library, built from ``bindlo.c`` when this version is not cached."""
    target = bindlo_path()
    if target.is_file():
        return target
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("a C compiler (cc) is needed to build the loopback bind library")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(SOURCE), "-ldl"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"building {SOURCE.name} failed: {done.stderr.strip()[:500]}")
    tmp.replace(target)
    return target
