"""What makes `pynamesrv up` start quickly: a command line imports only its command's module,
the late children start when they are due, the launcher's wire, its node command lines and
the stray reaper of a child subreaper."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cluster.cli import main as cli
from cluster.core import launch_wire
from cluster.core.procs import python_module
from supervisor.child import ChildSpec
from supervisor.cli import LateChild, nodes_booted
from worker.controller.launcher import node_args


def _registered(module: str) -> list[str]:
    sub = argparse.ArgumentParser().add_subparsers()
    cli.load(module).register(sub)
    return list(sub.choices)


@pytest.mark.parametrize("module", list(cli.COMMAND_MODULES))
def test_the_command_table_names_what_each_module_registers(module: str) -> None:
    assert list(cli.COMMAND_MODULES[module]) == _registered(module)


def test_a_command_line_parses_as_with_every_module_imported() -> None:
    argv = ["up", "-c", "x.yaml", "--brokers", "2"]
    lazy, full = cli.build_parser(argv), cli.build_parser()
    assert vars(lazy.parse_args(argv)) == vars(full.parse_args(argv))
    assert _commands(lazy) == _commands(full)


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(sub.choices)


def test_up_imports_none_of_the_other_areas() -> None:
    code = textwrap.dedent("""
        import sys
        from cluster.cli.main import build_parser
        build_parser(["up"])
        print(" ".join(m for m in sys.modules if m.startswith(
            ("cluster.bench", "cluster.audit", "cluster.chaos", "cluster.peers",
             "cluster.client", "cluster.addr", "pyspark"))))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == ""


@dataclass
class FakeChild:
    state: str
    started: list[float] = field(default_factory=list)

    def start(self, now: float) -> None:
        self.started.append(now)


@dataclass
class FakeSupervisor:
    states: list[str]
    ready_announced: bool = False
    shutting_down: bool = False
    added: list[ChildSpec] = field(default_factory=list)

    def nodes(self) -> list[FakeChild]:
        return [FakeChild(s) for s in self.states]

    def add_child(self, spec: ChildSpec) -> FakeChild:
        self.added.append(spec)
        return FakeChild("stopped")

    def now(self) -> float:
        return 7.0


def test_nodes_have_booted_once_none_is_starting() -> None:
    sup: Any = FakeSupervisor(["running", "starting"])
    assert not nodes_booted(sup)
    for states in (["running", "running"], ["running", "backoff"], ["failed", "stopped"], []):
        sup.states = states
        assert nodes_booted(sup)


def test_a_late_child_starts_once_when_due_and_never_while_shutting_down() -> None:
    spec = ChildSpec("addr-service", ["x"], cwd=Path("."), log_path=Path("x.log"), env={})
    sup: Any = FakeSupervisor(["starting"])
    late = LateChild(spec, nodes_booted)
    late.tick(sup)
    assert sup.added == []
    sup.states = ["running"]
    sup.shutting_down = True
    late.tick(sup)
    assert sup.added == []
    sup.shutting_down = False
    late.tick(sup)
    late.tick(sup)
    assert sup.added == [spec]


def test_the_launcher_takes_only_node_command_lines() -> None:
    node = python_module("worker.controller", sys.executable)
    assert node_args([*node, "--port", "1", "--name", "n1"]) == ["--port", "1", "--name", "n1"]
    assert node_args(python_module("cluster.cli", sys.executable)) is None
    assert node_args(["/bin/sh", "-c", "true"]) is None
    assert node_args([]) is None


def test_launcher_messages_carry_their_descriptors() -> None:
    a, b = launch_wire.socket_pair()
    r, w = os.pipe()
    try:
        launch_wire.send(a, {"argv": ["x"], "env": {"K": "V"}}, (w,))
        got = launch_wire.recv(b)
        assert got is not None
        msg, fds = got
        assert msg == {"argv": ["x"], "env": {"K": "V"}} and len(fds) == 1
        os.write(fds[0], b"through")
        os.close(fds[0])
        assert os.read(r, 16) == b"through"
        a.close()
        assert launch_wire.recv(b) is None
    finally:
        for fd in (r, w):
            os.close(fd)
        b.close()


def _python(code: str, *args: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_stray_children_are_reaped_and_watched_ones_left() -> None:
    out = _python("""
        import os
        from supervisor.procs import reap_strays
        def ended(pid):  # wait until the child has exited, leaving it to be reaped
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        watched = os.fork()
        if watched == 0:
            os._exit(3)
        ended(watched)
        strays = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            strays.append(pid)
            ended(pid)
        reaped = set()
        for _ in range(3):
            reaped |= set(reap_strays({watched}))
            if reaped == set(strays):
                break
            # the watched child is reaped by its own handler; the strays come after it
            if os.waitid(os.P_PID, watched, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                _, status = os.waitpid(watched, 0)
                print("watched", os.waitstatus_to_exitcode(status))
        print("strays", sorted(reaped) == sorted(strays))
        print("more", reap_strays(set()))
    """)
    assert out.splitlines() == ["watched 3", "strays True", "more []"]


def test_a_process_shows_another_command_line_in_the_room_it_was_given() -> None:
    out = _python("""
        import psutil
        from cluster.core.procs import set_command_line
        set_command_line(["python", "-m", "worker.controller", "--port", "9"])
        print(psutil.Process().cmdline())
        set_command_line(["x" * 500])
        print(len(" ".join(psutil.Process().cmdline())))
    """, " " * 100)
    first, second = out.splitlines()
    assert first == "['python', '-m', 'worker.controller', '--port', '9']"
    assert int(second) < 500  # cut to the room it has
