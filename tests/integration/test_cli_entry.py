"""The installed ``pynamesrv`` command, as the README documents it."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess

import pytest

from cluster.cli.main import build_parser, parse
from tests.nodeproc import PYNAMESRV, ROOT

pytestmark = pytest.mark.integration

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _all_commands() -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name, sub in _subcommands(build_parser()).items():
        nested = _subcommands(sub)
        found.extend((name, inner) for inner in nested) if nested else found.append((name,))
    return found


def _readme_command_lines() -> list[str]:
    """Command lines of the README's code blocks that are complete (no placeholders)."""
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        block = re.sub(r"\\\n\s*", " ", block)  # continuation lines
        for raw in block.splitlines():
            line = raw.split("  #", 1)[0].strip()
            line = re.sub(r"^(\.venv/bin/|\./)", "", line)
            if line.startswith("pynamesrv ") and not re.search(r"[\[\]|<>]", line):
                lines.append(line)
    return lines


@pytest.mark.parametrize("command", _all_commands(), ids=" ".join)
def test_every_command_answers_help_through_the_entry_point(command: tuple[str, ...]) -> None:
    out = subprocess.run([PYNAMESRV, *command, "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: pynamesrv"), out.stdout[:200]


def test_every_command_the_readme_names_exists() -> None:
    known = {name for name, *_ in _all_commands()} | {"COMMAND"}
    named = set(re.findall(r"`(?:\.venv/bin/)?pynamesrv ([A-Za-z][\w-]*)", README))
    assert named and named <= known, named - known


@pytest.mark.parametrize("line", _readme_command_lines())
def test_readme_command_lines_parse_as_written(line: str) -> None:
    """Every complete example in the README is accepted by the parser (nothing is run)."""
    try:
        parse(shlex.split(line)[1:])
    except SystemExit as exc:
        pytest.fail(f"README line does not parse: {line!r} (exit {exc.code})")

