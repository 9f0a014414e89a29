"""One way to write a time on the whole command line: the parser, and every option using it."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from cluster.bench.fanout import build_parser as fanout_parser
from cluster.cli.main import build_parser, main
from cluster.core.durations import (
    DURATION_TYPES,
    duration,
    duration_or_zero,
    go_duration,
    parse_duration,
)

# An option is a time when its name says so; each such option must take a duration.
TIME_NAME = re.compile(r"timeout|interval|duration|period|every|after|warmup|heartbeat|margin"
                       r"|bound|expiry|grace|delay|wait")


@pytest.mark.parametrize("text, seconds", [
    ("2s", 2.0), ("500ms", 0.5), ("1.5m", 90.0), ("1h", 3600.0), ("3", 3.0), ("0.25", 0.25),
    (" 45s ", 45.0), ("120s", 120.0), ("2m", 120.0), (".5s", 0.5), ("0", 0.0)])
def test_units_and_bare_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "s", "-1s", "2 days", "1e3", "nan", "inf", "5sec", "1:30",
                                  "10x", "1.2.3s"])
def test_anything_else_is_one_line_naming_the_value(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert repr(text) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)
    with pytest.raises(argparse.ArgumentTypeError):
        duration_or_zero(text)


def test_zero_is_only_for_options_where_it_means_off() -> None:
    assert duration_or_zero("0s") == 0.0
    with pytest.raises(argparse.ArgumentTypeError, match="more than zero"):
        duration("0ms")


def test_go_durations_for_rmqload() -> None:
    assert [go_duration(s) for s in (3.0, 0.5, 90.0, 0.0001)] == ["3000ms", "500ms", "90000ms",
                                                                   "1ms"]


def _options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
             ) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        elif action.option_strings and action.nargs != 0:
            yield " ".join((*path, action.option_strings[-1])), action


ALL_OPTIONS = [*_options(build_parser(), ("pynamesrv",)),
               *_options(fanout_parser(), ("python -m cluster.bench.fanout",))]
TIME_OPTIONS = [(name, a) for name, a in ALL_OPTIONS if TIME_NAME.search(a.dest)]


def test_the_walk_finds_the_time_options_of_every_area() -> None:
    names = {name for name, _ in TIME_OPTIONS}
    for expected in ("pynamesrv broker-sim --duration", "pynamesrv chaos run --duration",
                     "pynamesrv audit collect --interval", "pynamesrv bench --warmup",
                     "pynamesrv clusterList --interval", "pynamesrv status --timeout",
                     "pynamesrv kill --wait-timeout", "pynamesrv audit run --bound",
                     "pynamesrv chaos plan --heartbeat", "pynamesrv topicRoute --timeout",
                     "python -m cluster.bench.fanout --timeout"):
        assert expected in names, sorted(names)


@pytest.mark.parametrize("name, action", TIME_OPTIONS, ids=[n for n, _ in TIME_OPTIONS])
def test_every_time_option_takes_a_duration(name: str, action: argparse.Action) -> None:
    assert action.type in DURATION_TYPES, f"{name} parses with {action.type!r}"
    assert "seconds" not in (action.help or "").lower(), f"{name}: say the unit, e.g. 5s"


@pytest.mark.parametrize("name, action", ALL_OPTIONS, ids=[n for n, _ in ALL_OPTIONS])
def test_no_other_option_speaks_of_seconds(name: str, action: argparse.Action) -> None:
    text = f"{action.help or ''} {action.metavar or ''}"
    if action.type not in DURATION_TYPES:
        assert not re.search(r"\bseconds\b|\bSECONDS\b", text), f"{name}: {text}"


@pytest.mark.parametrize("argv", [
    ["broker-sim", "-n", "127.0.0.1:1", "--duration", "120x"],
    ["chaos", "plan", "--scenario", "mixed", "--duration", "soon"],
    ["audit", "collect", "-n", "127.0.0.1:1", "--out", "x", "--interval", "-2s"],
    ["clusterList", "-n", "127.0.0.1:1", "-i", "0"],
    ["stop", "--timeout", "5 s s"],
])
def test_a_bad_time_anywhere_is_one_line_and_exit_2(argv: list[str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: argument" in err, err
