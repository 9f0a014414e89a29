"""The deliberate differences, each naming its row of README's compatibility table.

An entry explains a difference only when the two outcomes have exactly the
documented shape; anything else is a real difference. Entries marked `scoped`
also need the step to name their row (`Step.deliberate`), because the
difference shows in a later query rather than in the step itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from cluster.core.protocol.codes import RequestCode, ResponseCode
from tests.java_diff.normalize import canonical
from tests.java_diff.sides import Outcome, Step

JAVA_EXCEPTION = re.compile(r"^[a-z][\w.]*\.\w*(Exception|Error)\b")
OUR_EXCEPTION = re.compile(r"^[A-Z]\w*(: .*)?$", re.S)
FIVE_X_CODES = frozenset({RequestCode.REGISTER_TOPIC_IN_NAMESRV,
                          RequestCode.GET_BROKER_MEMBER_GROUP, RequestCode.BROKER_HEARTBEAT})
PYNAMESRV_CODES = frozenset({RequestCode.GET_NODE_SNAPSHOT, RequestCode.GET_NODE_DIGEST})
JAVA_CODES = frozenset(RequestCode) - FIVE_X_CODES - PYNAMESRV_CODES


@dataclass(frozen=True)
class Deliberate:
    row: str  # the first cell of the README row, verbatim
    matches: Callable[[Step, Outcome, Outcome], bool]


def _code(out: Outcome) -> int | None:
    return None if out.reply is None else out.reply.code


def _unknown_code(step: Step, java: Outcome, ours: Outcome) -> bool:
    code = step.cmd.code if step.cmd is not None else None
    return (code is not None and code not in JAVA_CODES and code not in FIVE_X_CODES
            and java.kind == "none" and ours.reply is not None
            and ours.reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            and ours.reply.remark == f" request type {code} not supported")


def _five_x_code(step: Step, java: Outcome, ours: Outcome) -> bool:
    return (step.cmd is not None and step.cmd.code in FIVE_X_CODES
            and java.kind == "none" and ours.reply is not None)


def _exception_remark(step: Step, java: Outcome, ours: Outcome) -> bool:
    if _code(java) != ResponseCode.SYSTEM_ERROR or _code(ours) != ResponseCode.SYSTEM_ERROR:
        return False
    assert java.reply is not None and ours.reply is not None
    cj, co = canonical(java), canonical(ours)
    cj.pop("remark")
    co.pop("remark")
    return (cj == co and JAVA_EXCEPTION.match(java.reply.remark or "") is not None
            and OUR_EXCEPTION.match(ours.reply.remark or "") is not None)


def _one_connection_many_brokers(step: Step, java: Outcome, ours: Outcome) -> bool:
    """Java removed one broker of the closed connection and kept the other."""
    if step.deliberate != SEVERAL_BROKERS or _code(java) != 0 or _code(ours) != 0:
        return False
    jb, ob = canonical(java)["body"], canonical(ours)["body"]
    kept = set(jb["brokerAddrTable"]) - set(ob["brokerAddrTable"])
    return len(kept) == 1 and set(ob["brokerAddrTable"]) < set(jb["brokerAddrTable"])


def _config_value_refused(step: Step, java: Outcome, ours: Outcome) -> bool:
    return (step.deliberate == BAD_CONFIG_VALUE and _code(java) == ResponseCode.SUCCESS
            and _code(ours) == ResponseCode.SYSTEM_ERROR)


def _protected_key_4_9_7(step: Step, java: Outcome, ours: Outcome) -> bool:
    """The 4.9 oracle is 4.9.7: its remark for a protected path predates 4.9.8's black list."""
    return (java.reply is not None and ours.reply is not None
            and (java.reply.code, java.reply.remark) == (16, "Can not update config path")
            and (ours.reply.code, ours.reply.remark) == (16, "Can not update config in black "
                                                             "list."))


def align_version(java: Outcome, ours: Outcome) -> Outcome | None:
    """Java's outcome with the node's reply version when the 4.9.7 oracle answered 407 and
    the node 409 (4.9.8, README row VERSION_ROW); None when that is not the case."""
    if java.reply is None or ours.reply is None:
        return None
    if (java.reply.version, ours.reply.version) != (VERSION_4_9_7, VERSION_4_9_8):
        return None
    return replace(java, reply=replace(java.reply, version=VERSION_4_9_8))


VERSION_4_9_7, VERSION_4_9_8 = 407, 409
VERSION_ROW = "`version` in replies"
SEVERAL_BROKERS = "a closed connection that carried several brokers"
BAD_CONFIG_VALUE = "config value of the wrong type or out of range"
ALLOWLIST: tuple[Deliberate, ...] = (
    Deliberate("unknown request code", _unknown_code),
    Deliberate("codes 217, 901, 904", _five_x_code),
    Deliberate("SYSTEM_ERROR remark", _exception_remark),
    Deliberate(SEVERAL_BROKERS, _one_connection_many_brokers),
    Deliberate(BAD_CONFIG_VALUE, _config_value_refused),
    Deliberate("UPDATE_NAMESRV_CONFIG of a protected key", _protected_key_4_9_7),
)


def explain(step: Step, java: Outcome, ours: Outcome) -> str | None:
    """The README row that documents this difference, or None."""
    for entry in ALLOWLIST:
        if entry.matches(step, java, ours):
            return entry.row
    return None
