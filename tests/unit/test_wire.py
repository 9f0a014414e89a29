"""Messages between a node's processes: one frame each, kind byte first."""

from __future__ import annotations

from worker import wire


def test_pairs_round_trip_behind_their_kind() -> None:
    pairs = [(b"0.1.7", b"frame-a"), (b"0.1.8", b""), (b"", b"x" * 70_000)]
    message = wire.pack_pairs(pairs, wire.REQUESTS)
    assert message[:1] == wire.REQUESTS
    assert wire.unpack_pairs(message[1:]) == pairs
    views = wire.unpack_pairs(memoryview(message)[1:])
    assert all(type(v) is memoryview for pair in views for v in pair)
    assert [(bytes(c), bytes(f)) for c, f in views] == pairs


def test_hello_names_lane_and_pid() -> None:
    for lane in (wire.LANE_ALL, wire.LANE_READ):
        message = wire.hello(lane, 4242)
        assert message[:1] == wire.HELLO
        assert wire.parse_hello(message[1:]) == (lane, 4242)
    assert wire.hello() == wire.HELLO
    assert wire.parse_hello(b"") == (None, 0)
    assert wire.parse_hello(b"bogus 12") == (None, 0)
    assert wire.parse_hello(b"all x") == (wire.LANE_ALL, 0)


def test_replies_carry_the_time_each_request_took() -> None:
    pairs = [(b"0.1.7", b"reply-a"), (b"0.1.8", b"")]
    message = wire.pack_replies(pairs, [12, 2**40])
    assert message[:1] == wire.REPLIES
    assert wire.unpack_replies(message[1:]) == (pairs, [12, wire.MAX_MICROS])
    assert wire.unpack_replies(wire.pack_replies([], [])[1:]) == ([], [])


def test_replies_read_from_a_view_of_the_message_copy_only_the_short_ones() -> None:
    """The I/O worker unpacks a view of the received message: a short reply is copied out
    as bytes (a route template outlives the message); a long one (a topic list) is handed
    on as a view of the message, not copied."""
    long_reply = b"x" * wire.VIEW_FROM
    pairs = [(b"0.1.7", long_reply), (b"0.1.8", b"reply-b")]
    message = wire.pack_replies(pairs, [3, 4])
    view = memoryview(message)[1:]
    replies, micros = wire.unpack_replies(view)
    assert replies == pairs and micros == [3, 4]
    assert all(type(conn) is bytes for conn, _ in replies)
    assert type(replies[1][1]) is bytes
    assert type(replies[0][1]) is memoryview and replies[0][1].obj is view.obj


def test_a_reply_given_in_parts_packs_as_the_frame_they_make() -> None:
    """A business worker hands a reply's head and body over unjoined; the message holds the
    frame they make, so the I/O worker reads no difference."""
    head, body = b"\x00\x00\x00\x10head", b"b" * 3_000_000
    message = wire.pack_replies([(b"0.1.7", [head, body]), (b"0.1.8", [])], [5, 6])
    assert message == wire.pack_replies([(b"0.1.7", head + body), (b"0.1.8", b"")], [5, 6])
    assert wire.unpack_replies(message[1:]) == ([(b"0.1.7", head + body), (b"0.1.8", b"")],
                                                [5, 6])
