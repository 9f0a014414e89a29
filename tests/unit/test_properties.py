import json
from pathlib import Path

import pytest

from cluster.core.protocol.properties import PropertiesError, format_properties, parse_properties

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
GOLDEN = SHARED / "reference" / "java-4.9.7-golden"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a\tb", {"a": "b"}),
        ("a\fb", {"a": "b"}),
        ("   a = b  ", {"a": "b  "}),
        ("a  =  = b", {"a": "= b"}),
        ("a==b", {"a": "=b"}),
        ("a:=b", {"a": "=b"}),
        ("key", {"key": ""}),
        ("key=", {"key": ""}),
        ("=v", {"": "v"}),
        ("a=1\na=2", {"a": "2"}),
        ("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}),
        ("\n\n  \t\n", {}),
        ("", {}),
    ],
)
def test_separators_and_whitespace(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_comments() -> None:
    text = "# comment\n! other\n   # indented\nx=1\n#tail\\\ny=2"
    assert parse_properties(text) == {"x": "1", "y": "2"}


def test_hash_inside_value_and_key_is_literal() -> None:
    assert parse_properties("a=#b\nc#d=!e") == {"a": "#b", "c#d": "!e"}


def test_line_continuation() -> None:
    text = "k=one,\\\n     two,\\\r\n\tthree\nnext=1"
    assert parse_properties(text) == {"k": "one,two,three", "next": "1"}


def test_continuation_line_is_never_a_comment() -> None:
    assert parse_properties("k=\\\n#kept") == {"k": "#kept"}


def test_even_backslashes_do_not_continue() -> None:
    assert parse_properties("k=a\\\\\nb=c") == {"k": "a\\", "b": "c"}


def test_continuation_into_blank_line_ends_value() -> None:
    assert parse_properties("k=a\\\n\nb=c") == {"k": "a", "b": "c"}


def test_trailing_backslash_at_eof_is_dropped() -> None:
    assert parse_properties("k=a\\") == {"k": "a"}
    assert parse_properties("k=a\\\n") == {"k": "a"}


def test_lone_backslash_line_at_eof_matches_java() -> None:
    assert parse_properties("\\") == {"": ""}
    assert parse_properties("\\\n") == {"": ""}
    assert parse_properties("\\\r\n") == {}


def test_escapes() -> None:
    text = "k=\\t\\n\\r\\f\\\\\\x\\=\\:\\ \nu=\\u0041\\u00e9\\u4E2D"
    assert parse_properties(text) == {"k": "\t\n\r\f\\x=: ", "u": "A\u00e9\u4e2d"}


def test_escaped_separators_in_key() -> None:
    assert parse_properties("a\\=b\\:c\\ d=v") == {"a=b:c d": "v"}


def test_surrogate_pair_escape_joins() -> None:
    assert parse_properties("x=\\uD83D\\uDE00") == {"x": "\U0001f600"}


def test_non_ascii_literal_text() -> None:
    assert parse_properties("名前=値") == {"名前": "値"}


def test_only_java_line_terminators() -> None:
    assert parse_properties("a=1\u2028b\x0bc") == {"a": "1\u2028b\x0bc"}


@pytest.mark.parametrize("text", ["a=\\u12", "a=\\u12G4", "a=\\u", "\\uZZZZ=1"])
def test_malformed_unicode_escape_raises(text: str) -> None:
    with pytest.raises(PropertiesError, match="Malformed"):
        parse_properties(text)


def test_properties_error_is_value_error() -> None:
    assert issubclass(PropertiesError, ValueError)


def test_format_sorted_and_skips_none() -> None:
    props = {"b": "2", "a": "1", "c": None, "A": "0"}
    assert format_properties(props) == "A=0\na=1\nb=2\n"


def test_format_unsorted_keeps_order_and_writes_verbatim() -> None:
    props = {"z": "x=y", "a": "with space "}
    assert format_properties(props, sort=False) == "z=x=y\na=with space \n"


def test_format_sort_uses_java_string_order() -> None:
    props = {"\U0001f600": "1", "\uff21": "2"}
    assert format_properties(props) == "\U0001f600=1\n\uff21=2\n"


def test_format_empty() -> None:
    assert format_properties({}) == ""


def test_round_trip_simple_values() -> None:
    props = {"listenPort": "9876", "orderMessageEnable": "true", "rocketmqHome": "/opt/rmq"}
    assert parse_properties(format_properties(props)) == props


def test_golden_update_namesrv_config_bodies() -> None:
    if not GOLDEN.is_dir():
        pytest.skip(f"golden captures not found at {GOLDEN}")
    index = json.loads((GOLDEN / "index.json").read_text())
    bodies = {e["file_prefix"][:2]: e["request"]["body_text"] for e in index}
    assert parse_properties(bodies["45"]) == {"orderMessageEnable": "true"}
    assert parse_properties(bodies["46"]) == {"scanNotActiveBrokerInterval": "7000"}
