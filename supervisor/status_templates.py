"""Jinja2 templates of the status page (autoescaped), kept in code so an install carries them.

``PAGE`` is the whole document; ``LIVE`` is the part the page's script fetches
again from ``/fragment`` every ``refresh_ms`` and swaps in, so the page
refreshes itself without reloading (and with a plain meta refresh without
JavaScript).
"""

from __future__ import annotations

import jinja2

CSS = """
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1f2933;
 background:#f3f5f8}
header{background:#1f2933;color:#f5f7fa;padding:14px 28px;display:flex;
 justify-content:space-between;align-items:center;gap:24px;flex-wrap:wrap}
header>div:first-child{flex:1;min-width:0}
header h1{font-size:19px;margin:0;font-weight:600}
header .meta{color:#aeb8c4;font-size:12.5px;overflow-wrap:anywhere}
header code{color:#e4e7eb}
#pulse{font-size:12.5px;color:#aeb8c4;white-space:nowrap}
#pulse .dot{display:inline-block;width:9px;height:9px;border-radius:50%;background:#3ebd93;
 margin-right:6px;vertical-align:middle}
#pulse.stale .dot{background:#e12d39}
main{padding:18px 28px;max-width:1280px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(15,23,42,.12);
 padding:14px 18px;margin:0 0 16px}
h2{font-size:15px;margin:0 0 10px;color:#323f4b}
.banner{border-left:6px solid;padding:12px 16px;font-size:15.5px;font-weight:500}
.banner.ok{border-color:#3ebd93;background:#effcf6}
.banner.bad{border-color:#e12d39;background:#ffeeee}
.banner.warn{border-color:#f0b429;background:#fffbea}
.banner.info{border-color:#2186eb;background:#e6f6ff}
table{border-collapse:collapse;width:100%}
th{font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:#616e7c;
 text-align:left;padding:6px 10px;border-bottom:2px solid #e4e7eb}
td{padding:7px 10px;border-bottom:1px solid #eef1f4;vertical-align:middle}
td.num{text-align:right;font-variant-numeric:tabular-nums}
th.num{text-align:right}
.pill{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12.5px;font-weight:600}
.pill.ok{background:#c6f7e2;color:#014d40}.pill.bad{background:#ffbdbd;color:#610316}
.pill.warn{background:#fce588;color:#513c06}.pill.info{background:#b6e0fe;color:#035388}
.pill.paused{background:#dad2f9;color:#240754}.pill.off{background:#e4e7eb;color:#3e4c59}
.ans.ok{color:#147d64}.ans.bad{color:#cf1124;font-weight:600}.ans.off{color:#7b8794}
.chip{display:inline-block;padding:0 7px;margin:1px 3px 1px 0;border-radius:4px;
 font-size:12.5px;background:#e4e7eb}
.chip.miss{background:#ffbdbd;color:#610316}
.chip.stale{border:1px dashed #7b8794}.chip.stale:after{content:' (last seen)';font-size:11px}
.muted{color:#7b8794}
.key{font-family:ui-monospace,'SFMono-Regular',Menlo,monospace;font-size:13px}
a{color:#0b69a3}
"""

SCRIPT = """
(function(){
  var live=document.getElementById('live'), pulse=document.getElementById('pulse');
  var every=+live.dataset.refresh;
  function tick(){
    fetch('/fragment',{cache:'no-store'}).then(function(r){
      if(!r.ok) throw new Error(r.status); return r.text();
    }).then(function(html){
      live.innerHTML=html; pulse.className='';
      pulse.lastChild.textContent=' live, updated '+new Date().toLocaleTimeString();
    }).catch(function(){
      pulse.className='stale';
      pulse.lastChild.textContent=' supervisor not reachable; retrying';
    }).then(function(){ setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
"""

LIVE = """
<section class="banner {{ banner.cls }}" id="agreement">{{ banner.text }}
{% if shutting_down %}<br><span class="muted">The cluster is shutting down.</span>{% endif %}
</section>
<section id="nodes"><h2>Nodes</h2>
<table><thead><tr><th>node</th><th>address</th><th>pid</th><th>state</th><th>uptime</th>
<th class="num">restarts</th><th>last exit</th><th>snapshot</th>
<th class="num">brokers</th><th class="num">topics</th><th class="num">KV</th></tr></thead>
<tbody>{% for n in nodes %}<tr data-node="{{ n.name }}" data-state="{{ n.state }}">
<td><b>{{ n.name }}</b></td><td>{{ n.addr }}</td><td>{{ n.pid }}</td>
<td><span class="pill {{ n.state_cls }}">{{ n.state }}</span></td><td>{{ n.uptime }}</td>
<td class="num">{{ n.restarts }}</td><td>{{ n.last_exit }}</td>
<td class="ans {{ n.answer.cls }}">{{ n.answer.text }}</td>
{% if n.answer.counts %}{% set c = "num muted" if n.answer.stale else "num" %}
<td class="{{ c }}">{{ n.answer.counts.brokers }}</td>
<td class="{{ c }}">{{ n.answer.counts.topics }}</td>
<td class="{{ c }}">{{ n.answer.counts.kv }}</td>
{% else %}<td class="num muted">-</td><td class="num muted">-</td><td class="num muted">-</td>
{% endif %}</tr>{% endfor %}</tbody></table>
</section>
<section id="differences"><h2>Disagreement right now</h2>
{% if diffs %}<table><thead><tr><th>table</th><th>key</th><th>present on</th><th>missing on</th>
<th></th></tr></thead><tbody>{% for d in diffs %}<tr data-table="{{ d.table }}">
<td>{{ d.table }}</td><td class="key">{{ d.key }}</td>
<td>{% for p in d.present %}
<span class="chip{{ ' stale' if p in d.stale else '' }}">{{ p }}</span>{% endfor %}</td>
<td>{% for m in d.missing %}
<span class="chip miss{{ ' stale' if m in d.stale else '' }}">{{ m }}</span>{% endfor %}</td>
<td class="muted">{{ d.note }}</td></tr>{% endfor %}</tbody></table>
{% if diffs_total > diffs|length %}<p class="muted">first {{ diffs|length }} of
{{ diffs_total }} shown</p>{% endif %}
{% else %}<p class="muted">none: every answering node has the same brokers, topics and KV
entries</p>{% endif %}
</section>
{% if children %}<section id="children"><h2>Other supervised processes</h2>
<table><thead><tr><th>name</th><th>pid</th><th>state</th><th>uptime</th>
<th class="num">restarts</th><th>last exit</th></tr></thead><tbody>
{% for c in children %}<tr><td><b>{{ c.name }}</b></td><td>{{ c.pid }}</td>
<td><span class="pill {{ c.state_cls }}">{{ c.state }}</span></td><td>{{ c.uptime }}</td>
<td class="num">{{ c.restarts }}</td><td>{{ c.last_exit }}</td></tr>{% endfor %}
</tbody></table></section>{% endif %}
<section id="reports"><h2>Reports</h2>
{% if reports %}<table><tbody>{% for r in reports %}<tr>
<td><a href="{{ r.href }}"><b>latest {{ r.kind }} report</b></a></td>
<td><span class="pill {{ r.cls }}">{{ r.summary }}</span></td>
<td class="muted">{{ r.when }}</td><td class="muted key">{{ r.path }}</td></tr>
{% endfor %}</tbody></table>
{% else %}<p class="muted">none found: the reports of <code>pynamesrv audit run</code> and
<code>pynamesrv chaos run</code> show up here when they are in the cluster file's directory or
the supervisor's working directory (or one or two levels below)</p>{% endif %}
</section>
<p class="muted">Supervisor state as of {{ updated }}; node tables asked at {{ gathered }}.</p>
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>pynamesrv cluster status</title>
<noscript><meta http-equiv="refresh" content="{{ (refresh_ms / 1000)|round|int }}"></noscript>
<style>{{ css|safe }}</style></head>
<body><header><div><h1>pynamesrv cluster</h1>
<div class="meta">{{ h.cluster_file }} &middot; namesrvAddr <code>{{ h.namesrv_addr }}</code>
&middot; control <code>{{ h.control }}</code></div></div>
<div id="pulse"><span class="dot"></span><span> live, updated {{ updated }}</span></div>
</header>
<main id="live" data-refresh="{{ refresh_ms }}">{% include "live" %}</main>
<script>{{ script|safe }}</script>
</body></html>
"""


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.DictLoader({"page": PAGE, "live": LIVE}),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.globals.update(css=CSS, script=SCRIPT)
    return env
