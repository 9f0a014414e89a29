"""Building blocks of the self-contained report pages: shell, style, tooltips, tables.

Everything is inline (CSS, a small script, SVG); nothing is loaded from the
network. Any element with ``data-tip`` shows its lines in a tooltip when
hovered or focused; ``page.html#tip=ID`` shows the tooltip of element ``ID``
on load, so a link can point at one divergence or fault.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1f2933;
 background:#f3f5f8}
header{background:#1f2933;color:#f5f7fa;padding:16px 28px}
header h1{font-size:19px;margin:0 0 4px;font-weight:600;overflow-wrap:anywhere}
header .meta{color:#aeb8c4;font-size:12.5px}
main{padding:18px 28px;max-width:1320px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(15,23,42,.12);
 padding:14px 18px;margin:0 0 16px}
h2{font-size:15px;margin:0 0 10px;color:#323f4b}
h3{font-size:13.5px;margin:14px 0 6px;color:#3e4c59}
.verdict{border-left:6px solid;font-size:16px;font-weight:600;padding:12px 16px}
.verdict.ok{border-color:#3ebd93;background:#effcf6;color:#014d40}
.verdict.bad{border-color:#e12d39;background:#ffeeee;color:#610316}
.verdict.info{border-color:#2186eb;background:#e6f6ff;color:#03449e}
.verdict small{display:block;font-weight:400;font-size:13px;color:#3e4c59;margin-top:3px}
table{border-collapse:collapse;width:100%}
th{font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:#616e7c;
 text-align:left;padding:5px 9px;border-bottom:2px solid #e4e7eb}
td{padding:5px 9px;border-bottom:1px solid #eef1f4;vertical-align:top;font-size:13px}
.none{color:#7b8794;font-style:italic;margin:2px 0 8px}
.pill{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:700}
.pill.ok{background:#c6f7e2;color:#014d40}.pill.bad{background:#ffbdbd;color:#610316}
.pill.skip{background:#e4e7eb;color:#3e4c59}
.mono{font-family:ui-monospace,'SFMono-Regular',Menlo,monospace;font-size:12.5px}
details summary{cursor:pointer;color:#0b69a3}
pre{white-space:pre-wrap;word-break:break-all;background:#f5f7fa;padding:6px 8px;margin:4px 0;
 font-size:12px;max-height:260px;overflow:auto}
svg.timeline{width:100%;height:auto;display:block}
svg.timeline [data-tip]{cursor:pointer}
svg.timeline [data-tip]:hover,svg.timeline [data-tip]:focus,svg.timeline .picked{
 stroke:#102a43;stroke-width:2;outline:none}
.legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12.5px;color:#3e4c59;margin:8px 0 0}
.legend i{display:inline-block;width:14px;height:10px;border-radius:2px;margin-right:5px;
 vertical-align:middle}
#tip{position:fixed;z-index:10;display:none;max-width:520px;background:#102a43;color:#f0f4f8;
 padding:8px 10px;border-radius:6px;font-size:12.5px;line-height:1.4;pointer-events:none;
 box-shadow:0 4px 14px rgba(0,0,0,.25);white-space:pre-line}
#tip b{color:#fff}
"""

SCRIPT = """
(function(){
  var tip=document.getElementById('tip');
  function show(el, x, y){
    var lines=el.getAttribute('data-tip').split('\\n');
    tip.textContent='';
    var head=document.createElement('b'); head.textContent=lines[0]; tip.appendChild(head);
    if(lines.length>1) tip.appendChild(document.createTextNode('\\n'+lines.slice(1).join('\\n')));
    tip.style.display='block';
    var w=tip.offsetWidth, h=tip.offsetHeight;
    tip.style.left=Math.max(4, Math.min(x+14, window.innerWidth-w-8))+'px';
    tip.style.top=(y+16+h>window.innerHeight ? Math.max(4, y-h-10) : y+16)+'px';
  }
  function hide(){ tip.style.display='none'; }
  document.querySelectorAll('[data-tip]').forEach(function(el){
    el.addEventListener('mousemove', function(e){ show(el, e.clientX, e.clientY); });
    el.addEventListener('mouseleave', hide);
    el.addEventListener('focus', function(){
      var r=el.getBoundingClientRect(); show(el, r.left, r.bottom-8); });
    el.addEventListener('blur', hide);
  });
  var picked=location.hash.match(/^#tip=(.+)$/);
  var target=picked && document.getElementById(decodeURIComponent(picked[1]));
  if(target && target.hasAttribute('data-tip')){
    var r=target.getBoundingClientRect();
    target.classList.add('picked'); show(target, r.left, r.bottom-8);
  }
})();
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def table_or_none(headers: Sequence[str], rows: Sequence[Sequence[Any]],
                  none: str = "none") -> str:
    """A table of escaped cells, or one line saying ``none`` when there are no rows."""
    if not rows:
        return f'<p class="none">{esc(none)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def verdict_block(ok: bool | None, headline: str, detail: str = "") -> str:
    cls = "info" if ok is None else ("ok" if ok else "bad")
    mark = "" if ok is None else ("\u2714 " if ok else "\u2718 ")
    small = f"<small>{esc(detail)}</small>" if detail else ""
    return f'<section class="verdict {cls}" id="verdict">{mark}{esc(headline)}{small}</section>'


def page(title: str, meta: str, body: str) -> str:
    """The whole document: header, the body's sections, the tooltip and its script."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
            f'<header><h1>{esc(title)}</h1><div class="meta">{esc(meta)}</div></header>'
            f'<main>{body}</main><div id="tip" role="tooltip"></div>'
            f"<script>{SCRIPT}</script></body></html>")
