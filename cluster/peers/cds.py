"""A class-data sharing archive for mqadmin: its JVM starts with its classes already parsed.

An mqadmin run loads about 4,000 classes from the release's jars before it prints a line,
most of its run time. The first run of a release makes an archive of the classes a
training run loads (``-XX:ArchiveClassesAtExit``, a run against an address nobody
listens on, output discarded); later runs map it (``-XX:SharedArchiveFile``) and print
the same bytes. The archive is named after the JVM and the classpath (each jar's size
and time), so a new JDK or new jars get a new archive; a JVM that cannot map it loads
its classes as without one. A training run that makes no archive leaves a marker: no
further try, runs go without.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

from cluster.peers import cache

TRAINING_TIMEOUT_S = 120.0


def archive_path(java: str, classpath: str, name: str) -> Path:
    """Where the archive for ``java`` running ``classpath`` lives (``name``: e.g. tools-5.5)."""
    digest = hashlib.sha256()
    for part in [os.path.realpath(java), *classpath.split(os.pathsep)]:
        with contextlib.suppress(OSError):
            st = os.stat(part)
            part = f"{part}:{st.st_size}:{st.st_mtime_ns}"
        digest.update(part.encode() + b"\0")
    return cache.root() / "cds" / f"{name}-{digest.hexdigest()[:16]}.jsa"


def _closed_address() -> str:
    """127.0.0.1:PORT with nothing listening (a port just bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def options(jvm: Sequence[str], archive: Path, training_args: Sequence[str],
            env: dict[str, str]) -> list[str]:
    """JVM options that map ``archive``, made first by running ``jvm`` (the command line up
    to and with its main class) with ``training_args``; [] when there is none to map."""
    failed = archive.with_suffix(".failed")
    if not archive.is_file() and not failed.exists():
        _train(jvm, archive, training_args, env)
    if archive.is_file():
        return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"]
    return []


def _train(jvm: Sequence[str], archive: Path, training_args: Sequence[str],
           env: dict[str, str]) -> None:
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    argv = [jvm[0], f"-XX:ArchiveClassesAtExit={tmp}", *jvm[1:],
            *(a.replace("{closed}", _closed_address()) for a in training_args)]
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=TRAINING_TIMEOUT_S,
                       env={**os.environ, **env}, check=False)
    if tmp.is_file() and tmp.stat().st_size > 0:
        os.replace(tmp, archive)
    else:
        tmp.unlink(missing_ok=True)
        archive.with_suffix(".failed").touch()
