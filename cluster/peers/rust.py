"""The Rust NameServer (crate ``rocketmq-namesrv`` from crates.io), installed on demand.

``cargo install --locked`` compiles it into the cache; on two cores that takes about
12 minutes, so only ``pynamesrv bench --rust`` (and ``pynamesrv peer install --rust``)
ask for it, never the test command.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from cluster.peers import cache
from cluster.peers.catalog import RUST_CRATE, RUST_VERSION

BINARY = "rocketmq-namesrv-rust"
INSTALL_TIMEOUT_S = 3600.0
UNREACHABLE = re.compile(r"failed to (download|get|query)|Couldn't resolve host|"
                         r"Could not resolve host|network failure|spurious network error|"
                         r"timed out", re.I)


class RustInstallFailed(Exception):
    pass


def binary_path() -> Path:
    return cache.rust_root() / RUST_VERSION / "bin" / BINARY


def installed() -> Path | None:
    path = binary_path()
    return path if path.is_file() else None


def missing() -> str:
    if installed() is not None:
        return ""
    return (cache.unavailable_reason("rust") or
            f"the Rust NameServer is not installed (pynamesrv peer install --rust: "
            f"cargo install {RUST_CRATE} {RUST_VERSION}, about 12 minutes on 2 cores)")


def install(log: Path | None = None) -> Path:
    """``cargo install --locked --version V rocketmq-namesrv`` into the cache, unless there."""
    found = installed()
    if found is not None:
        return found
    cargo = shutil.which("cargo")
    if cargo is None:
        raise RustInstallFailed("Rust's cargo is not installed (https://rustup.rs)")
    root = binary_path().parent.parent
    argv = [cargo, "install", "--locked", "--version", RUST_VERSION, RUST_CRATE,
            "--root", str(root)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    if log is not None:
        log.write_text(done.stdout + done.stderr)
    if done.returncode != 0 or installed() is None:
        output = (done.stdout + done.stderr).strip()
        hit = next((ln for ln in output.splitlines() if UNREACHABLE.search(ln)), "")
        if hit:
            cache.mark_unavailable("rust", f"crates.io did not answer: {hit.strip()[:300]}")
        raise RustInstallFailed(f"cargo install {RUST_CRATE} {RUST_VERSION} failed: "
                                f"{output[-500:]}")
    cache.clear_unavailable("rust")
    return binary_path()


def namesrv_argv(port: int, workdir: Path) -> list[str]:
    """The Rust NameServer on 127.0.0.1:``port``, its files in ``workdir``."""
    binary = installed()
    if binary is None:
        raise RustInstallFailed(missing())
    workdir.mkdir(parents=True, exist_ok=True)
    return [str(binary), "--listenPort", str(port), "--bindAddress", "127.0.0.1",
            "--rocketmqHome", str(workdir), "--kvConfigPath", str(workdir / "kvConfig.json")]
