"""The audit report as a self-contained HTML page, from its JSON document (no Spark needed).

``audit_sections`` (timeline and detail tables) is shared with the chaos run's
page, which draws the run's faults on the same time axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster.audit.html_kit import page, table_or_none, verdict_block
from cluster.audit.timeline import Fault, from_audit, secs
from cluster.audit.timeline_svg import legend, render
from cluster.core.clock import clock_text as clock

HTML_INTERVALS = 200


def verdict_headline(doc: dict[str, Any]) -> tuple[bool, str, str]:
    """(holds, one-line verdict, its basis) of an audit report document."""
    v = doc["verdict"]
    basis = (f"bound {secs(v['bound_ms'])} after the faults stopped at "
             f"{clock(v['fault_end'])} ({v['fault_end_source']}); times are UTC")
    if v["holds"]:
        n = doc["intervals_total"]
        text = ("Eventually consistent: the nodes never disagreed" if not n else
                f"Eventually consistent: {n} divergence interval(s), every one closed "
                f"within the bound")
        return True, text, basis
    stuck = [f"{i['table']} {i['key']} ({i['kind']} on {', '.join(i['nodes'])})"
             for i in doc["never_converged"][:3]]
    if stuck:
        basis = f"never converged: {'; '.join(stuck)}. {basis[0].upper()}{basis[1:]}"
    return False, "NOT eventually consistent: " + "; ".join(v["reasons"]), basis


def _yes(flag: bool) -> str:
    return "yes" if flag else ""


def details_html(doc: dict[str, Any]) -> str:
    shown = doc["intervals"][:HTML_INTERVALS]
    more = (f" (first {len(shown)} of {doc['intervals_total']})"
            if doc["intervals_total"] > len(shown) else "")
    return "".join([
        "<h3>Unavailable nodes</h3>",
        table_or_none(["node", "start", "end", "duration", "rounds"],
                      [[u["node"], clock(u["start"]), clock(u["end"]), secs(u["duration_ms"]),
                        u["rounds"]] for u in doc["unavailability"]]),
        "<h3>Node divergence (unavailable, or involved in a disagreeing key)</h3>",
        table_or_none(["node", "start", "end", "duration", "rounds", "causes"],
                      [[n["node"], clock(n["start"]), clock(n["end"]), secs(n["duration_ms"]),
                        n["rounds"], ", ".join(n["causes"])] for n in doc["node_intervals"]]),
        "<h3>Worst keys</h3>",
        table_or_none(["table", "key", "total", "intervals", "kinds", "nodes", "open"],
                      [[w["table"], w["key"], secs(w["total_ms"]), w["intervals"],
                        ", ".join(w["kinds"]), ", ".join(w["nodes"]), _yes(w["open"])]
                       for w in doc["worst_keys"]]),
        f"<h3>Divergence intervals{more}</h3>",
        table_or_none(["table", "key", "kind", "nodes", "start", "end", "duration", "open"],
                      [[i["table"], i["key"], i["kind"], ", ".join(i["nodes"]),
                        clock(i["start"]), clock(i["end"]), secs(i["duration_ms"]), _yes(i["open"])]
                       for i in shown])])


def timeline_section(doc: dict[str, Any], faults: Sequence[Fault] = ()) -> str:
    """The timeline of an audit document (and a chaos run's faults) with its legend."""
    tl = from_audit(doc, faults)
    return ("<section id=\"timeline\"><h2>Timeline (UTC): one lane per node; hover or focus "
            "a bar for its keys</h2>" + render(tl) + legend(tl) + "</section>")


def audit_sections(doc: dict[str, Any], faults: Sequence[Fault] = ()) -> str:
    """Timeline and detail tables of an audit document, for the audit and chaos pages."""
    return (timeline_section(doc, faults)
            + f"<section id=\"details\"><h2>Details</h2>{details_html(doc)}</section>")


def audit_page(doc: dict[str, Any]) -> str:
    """The whole page of an audit report document (``audit-report.json``)."""
    m = doc["manifest"]
    names = [n["name"] for n in m["nodes"]]
    holds, headline, basis = verdict_headline(doc)
    meta = (f"{len(names)} nodes ({', '.join(names)}), {len(doc['rounds'])} rounds "
            f"every {secs(m['interval_ms'])}, {doc['rows']} rows")
    return page(f"pynamesrv consistency audit: {doc['source']}", meta,
                verdict_block(holds, headline, basis) + audit_sections(doc))
