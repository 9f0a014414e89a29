"""Which nodes the address service lists: running, answering and agreeing with the majority.

Pure, with time passed in. Each step gets every node's state (answering or not, and
why) and the entries on which the answering nodes differ (``cluster.core.divergence``
``Difference``: the nodes grouped by the entry's digest, none for a node without it).
For each entry the reference is the digest most answering nodes hold (absent counts
as a value); a tie is broken by the nodes listed now, and stays undecided (nobody
differs on it) when they tie too. Then:

* a node that does not answer, or is not running, leaves the list at once;
* a listed node leaves once some entry has differed from the reference for
  ``diverged_after_s`` without a break (a registration reaching the nodes a few
  milliseconds apart, or a dead broker expired by each node at its own scan, differs
  only briefly);
* a node not listed (new, restarted, diverged, back from a pause) joins when none of
  its entries differs: once it has caught up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cluster.core.divergence import Difference

Key = tuple[str, str]  # (table, entry: key or key/sub, as in the audit's rows)
MAX_SHOWN = 5  # differing entries named in a reason


@dataclass(frozen=True)
class NodeView:
    """One node at one step: whether it answered, and why not (``why``)."""

    name: str
    addr: str
    answering: bool
    why: str = ""


@dataclass
class NodeState:
    name: str
    addr: str
    listed: bool = False
    reason: str = "not read yet"
    since: float = 0.0  # when ``listed`` last changed
    differing: dict[Key, float] = field(default_factory=dict)  # entry -> differing since


class Membership:
    def __init__(self, diverged_after_s: float) -> None:
        self.diverged_after_s = diverged_after_s
        self.nodes: dict[str, NodeState] = {}

    def update(self, views: Sequence[NodeView], differences: Sequence[Difference],
               now: float) -> list[NodeState]:
        """One step; returns the state of every node of ``views``, in their order."""
        self.nodes = {v.name: self.nodes.get(v.name) or NodeState(v.name, v.addr, since=now)
                      for v in views}
        listed = {n for n, s in self.nodes.items() if s.listed}
        differs = differing(differences, listed)
        for v in views:
            state = self.nodes[v.name]
            state.addr = v.addr
            if not v.answering:
                state.differing.clear()
                self._set(state, False, v.why or "not answering", now)
            else:
                self._judge(state, differs.get(v.name, set()), now)
        return [self.nodes[v.name] for v in views]

    def listed(self) -> list[NodeState]:
        return [s for s in self.nodes.values() if s.listed]

    def _judge(self, state: NodeState, differing: set[Key], now: float) -> None:
        state.differing = {k: state.differing.get(k, now) for k in differing}
        if not differing:
            self._set(state, True, "agrees with the majority", now)
            return
        oldest = min(state.differing.values())
        shown = ", ".join(f"{t} {k}" for t, k in sorted(differing)[:MAX_SHOWN])
        more = f" (+{len(differing) - MAX_SHOWN} more)" if len(differing) > MAX_SHOWN else ""
        if not state.listed:
            self._set(state, False, f"catching up: {len(differing)} entries differ from the "
                                    f"majority: {shown}{more}", now)
        elif now - oldest >= self.diverged_after_s:
            self._set(state, False, f"diverged: {len(differing)} entries differ from the "
                                    f"majority for {now - oldest:.1f}s: {shown}{more}", now)
        else:
            state.reason = f"listed; {len(differing)} entries differ since {now - oldest:.1f}s"

    @staticmethod
    def _set(state: NodeState, listed: bool, reason: str, now: float) -> None:
        if listed != state.listed:
            state.since = now
        state.listed = listed
        state.reason = reason


def differing(differences: Sequence[Difference], listed: set[str]) -> dict[str, set[Key]]:
    """node -> the entries on which it holds another digest than the reference."""
    out: dict[str, set[Key]] = {}
    for d in differences:
        values = {n: digest for digest, nodes in d.groups for n in nodes}
        ref = reference(values, listed)
        if ref is UNDECIDED:
            continue
        for n, v in values.items():
            if v != ref:
                out.setdefault(n, set()).add((d.table, d.label))
    return out


UNDECIDED = object()


def reference(values: Mapping[str, str | None], listed: set[str]) -> object:
    """The value most nodes hold; a tie broken by the listed nodes; else UNDECIDED."""
    counts = Counter(values.values()).most_common()
    if len(counts) == 1 or counts[0][1] > counts[1][1]:
        return counts[0][0]
    top = {v for v, c in counts if c == counts[0][1]}
    among_listed = Counter(v for n, v in values.items() if n in listed and v in top)
    ranked = among_listed.most_common()
    if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        return ranked[0][0]
    return UNDECIDED
