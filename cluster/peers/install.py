"""Install the peers, idempotently: ``python -m cluster.peers.install [--java] [--go] [--rust]``.

Each part is installed only when missing from the cache, so a second run takes seconds.
A registry that does not answer, with nothing cached, is one line on stderr and a
recorded reason (the tests that need the part skip, printing it); a registry that
answers and an install that still fails is an error (exit 1).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

from cluster.peers import cache, gobuild, maven, native, rust
from cluster.peers.catalog import RELEASES, Release, release


class Unreachable(Exception):
    """A registry did not answer."""


def _say(msg: str) -> None:
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def install_java(releases: Sequence[Release]) -> None:
    native.bindlo()
    for rel in releases:
        for component in rel.components:
            if maven.installed(rel, component) is not None:
                continue
            start = time.monotonic()
            try:
                jars = maven.resolve(rel, component)
            except maven.RegistryUnreachable as exc:
                raise Unreachable(str(exc)) from None
            _say(f"RocketMQ {rel.name}: rocketmq-{component} {rel.version(component)} "
                 f"({len(jars)} jars) in {time.monotonic() - start:.0f} s")


def install_go() -> None:
    if gobuild.installed() is None:
        start = time.monotonic()
        try:
            path = gobuild.build()
        except gobuild.GoUnreachable as exc:
            raise Unreachable(str(exc)) from None
        _say(f"Go probe built in {time.monotonic() - start:.0f} s: {path}")


def install_rust() -> None:
    if rust.installed() is None:
        start = time.monotonic()
        _say("compiling the Rust NameServer (cargo install; about 12 minutes on 2 cores)")
        path = rust.install()
        _say(f"Rust NameServer installed in {time.monotonic() - start:.0f} s: {path}")


def _part(name: str, step: Callable[[], None]) -> bool:
    """Run one part; False when it failed for a reason other than an unreachable registry."""
    try:
        step()
    except Unreachable as exc:
        cache.mark_unavailable(name, str(exc))
        _say(f"{name}: not installed, its tests will skip: {exc}")
        return True
    except (maven.ResolveFailed, gobuild.GoBuildFailed, rust.RustInstallFailed,
            RuntimeError) as exc:
        _say(f"{name}: install failed: {exc}")
        return False
    cache.clear_unavailable(name)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pynamesrv peer install",
                                description="install the RocketMQ peers into the cache")
    add_arguments(p)
    return run(p.parse_args(argv))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--java", action="store_true", help="the Java releases (Maven Central)")
    p.add_argument("--release", action="append", choices=sorted(RELEASES),
                   help="Java release (repeatable; default: those the tests use)")
    p.add_argument("--go", action="store_true", help="the Go probe (Go module proxy)")
    p.add_argument("--rust", action="store_true",
                   help="the Rust NameServer (crates.io; compiles for minutes)")


def run(args: argparse.Namespace) -> int:
    if not (args.java or args.go or args.rust):
        args.java = args.go = True
    names = args.release or [r.name for r in RELEASES.values() if r.in_setup]
    releases = [release(n) for n in names]
    ok = True
    if args.java:
        ok &= _part("java", lambda: install_java(releases))
    if args.go:
        ok &= _part("go", install_go)
    if args.rust:
        ok &= _part("rust", install_rust)
    _say(f"cache: {cache.root()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
