"""TableMemo: large topic tables known by their whole text, bounded in bytes."""

from __future__ import annotations

from cluster.core.protocol import register_body, register_scan, table_memo
from tests.unit.test_register_fast import configs, plain_body


def _table(body: bytes) -> register_scan.PlainTable:
    head = register_body.register_head(body, False, 500)
    assert head is not None
    return register_scan.PlainTable(body, head, 500, None)


def test_a_table_is_known_by_its_whole_text_not_its_digest_alone() -> None:
    memo = table_memo.TableMemo(1, 1 << 20)
    a, b = _table(plain_body(configs(A=4, B=4))), _table(plain_body(configs(A=4, B=8)))
    queues = a.queues()
    memo.keep(a, queues)
    got = memo.get(_table(plain_body(configs(A=4, B=4))))
    assert got == queues and got is not queues
    assert memo.get(b) is None
    ((digest, (text, held)),) = memo.held.items()
    memo.held = {memo._key(b)[0]: (text, held)}  # type: ignore[index]  # b's digest, a's text
    assert memo.get(b) is None


def test_the_tables_held_are_bounded_and_small_ones_are_not_held() -> None:
    tables = [_table(plain_body(configs(**{f"T{i}{j}": 4 for j in range(20)})))
              for i in range(3)]
    size = tables[0].span()[1] - tables[0].span()[0]  # type: ignore[index]
    memo = table_memo.TableMemo(1, 2 * size)
    for table in tables:
        memo.keep(table, table.queues())
    assert memo.size == 2 * size
    assert memo.get(tables[0]) is None and memo.get(tables[2]) is not None  # oldest out
    small = table_memo.TableMemo(size + 1, 1 << 20)
    small.keep(tables[0], tables[0].queues())
    assert not small.held
