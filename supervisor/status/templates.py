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
h3{font-size:13px;margin:14px 0 6px;color:#52606d}
.lanes th{width:90px;text-transform:none;font-size:13px;color:#323f4b;border:0;padding:2px 8px}
.lanes td{border:0;padding:2px 8px}.lanes td.sum{width:330px;font-size:12.5px;color:#616e7c}
svg.strip{width:100%;height:16px;display:block;background:#f5f7fa}
svg.axis{width:100%;height:14px;display:block;font-size:10px;fill:#7b8794}
.s-agree{fill:#3ebd93}.s-diverge{fill:#e12d39}.s-silent{fill:#f0b429}.s-off{fill:#cbd2d9}
a rect.s-diverge:hover{fill:#8a041a}
form.filter{display:flex;gap:8px;flex-wrap:wrap;margin:0 0 10px}
form.filter input,form.filter select{font:inherit;padding:3px 6px}
"""

SCRIPT = """
(function(){
  var live=document.getElementById('live'), pulse=document.getElementById('pulse');
  var every=+live.dataset.refresh;
  function stamp(){ var s=live.querySelector('[data-updated]'); return s ? s.dataset.updated : ''; }
  function tick(){
    var t0=performance.now(), t1=0;
    fetch('/fragment',{cache:'no-store'}).then(function(r){
      if(!r.ok) throw new Error(r.status); return r.text();
    }).then(function(html){
      t1=performance.now();
      live.innerHTML=html; pulse.className='';
      pulse.lastChild.textContent=' live, updated '+stamp();
      window.pnsRefresh={fetchMs:t1-t0, swapMs:performance.now()-t1, bytes:html.length,
                         count:((window.pnsRefresh||{}).count||0)+1};
    }).catch(function(){
      pulse.className='stale';
      pulse.lastChild.textContent=' supervisor not reachable; retrying';
    }).then(function(){ setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
"""

LIVE = """
<span hidden data-updated="{{ updated }}"></span>
<section class="banner {{ banner.cls }}" id="agreement">{{ banner.text }}
{% if shutting_down %}<br><span class="muted">The cluster is shutting down.</span>{% endif %}
</section>
<section id="history"><h2>Agreement over time
<span class="muted">{{ history.from }}&ndash;{{ history.to }} ({{ history.window }})</span></h2>
{% if history.since_agreement %}<p>The nodes have not all agreed for
<b>{{ history.since_agreement }}</b>.</p>{% endif %}
<table class="lanes"><tbody>{% for lane in history.lanes %}<tr data-lane="{{ lane.name }}">
<th>{{ lane.name }}</th><td><svg class="strip" viewBox="0 0 1000 16" preserveAspectRatio="none">
{% for b in lane.bars %}{% if b.href %}<a href="{{ b.href }}">{% endif %}<rect x="{{ b.x }}" y="0"
width="{{ b.w }}" height="16" class="s-{{ b.cls }}"><title>{{ b.title }}</title></rect>
{% if b.href %}</a>{% endif %}{% endfor %}</svg></td><td class="sum">{{ lane.summary }}</td></tr>
{% endfor %}<tr><th></th><td><svg class="axis" viewBox="0 0 1000 14" preserveAspectRatio="none">
{% for t in history.ticks %}<text x="{{ t.x }}" y="11" text-anchor="middle">{{ t.text }}</text>
{% endfor %}</svg></td><td class="sum">green agreed, red diverged (click for the entries),
amber not answering, grey not running</td></tr></tbody></table>
</section>
<section id="nodes"><h2>Nodes</h2>
<table><thead><tr><th>node</th><th>address</th><th>pid</th><th>state</th><th>uptime</th>
<th class="num">restarts</th><th>last exit</th><th>digest</th>
<th class="num" title="broker names">brokers</th>
<th class="num" title="broker addresses: the rows of clusterList">addresses</th>
<th class="num" title="brokers with a live channel: pynamesrv_live_brokers">live</th>
<th class="num">topics</th><th class="num">KV</th></tr></thead>
<tbody>{% for n in nodes %}<tr data-node="{{ n.name }}" data-state="{{ n.state }}">
<td><b>{{ n.name }}</b></td><td>{{ n.addr }}</td><td>{{ n.pid }}</td>
<td><span class="pill {{ n.state_cls }}">{{ n.state }}</span></td><td>{{ n.uptime }}</td>
<td class="num">{{ n.restarts }}</td><td>{{ n.last_exit }}</td>
<td class="ans {{ n.answer.cls }}">{{ n.answer.text }}</td>
{% if n.counts %}{% for k in ("brokers", "rows", "live", "topics", "kv") %}
<td class="num">{{ "{:,}".format(n.counts[k]) }}</td>{% endfor %}
{% else %}{% for k in range(5) %}<td class="num muted">-</td>{% endfor %}{% endif %}</tr>
{% endfor %}</tbody></table>
</section>
<section id="differences"><h2>Disagreement right now</h2>
{% if diffs_total %}<p>{{ "{:,}".format(diffs_total) }} entries in {{ groups_total }}
group{{ '' if groups_total == 1 else 's' }}: <a href="/keys">list them, with a filter</a></p>
<table><thead><tr><th>table</th><th>broker / namespace / key</th><th class="num">entries</th>
<th>odd nodes (entries)</th></tr></thead><tbody>{% for g in groups %}
<tr data-group="{{ g.table }}/{{ g.group }}"><td>{{ g.table }}</td>
<td class="key"><a href="/keys?table={{ g.table|urlencode }}&amp;group={{ g.group|urlencode }}">{{
g.group }}</a></td><td class="num">{{ "{:,}".format(g.count) }}</td>
<td>{{ g.odd|join(", ") }}</td></tr>{% endfor %}</tbody></table>
{% if groups_total > groups|length %}<p class="muted">the {{ groups|length }} largest of
{{ groups_total }} groups shown</p>{% endif %}
<h3>The first {{ diffs|length }} of {{ "{:,}".format(diffs_total) }} entries</h3>
{% include "rows" %}
{% else %}<p class="muted">none: every answering node has the same clusters, brokers, topics,
live brokers, filter servers and KV entries</p>{% endif %}
</section>
<section id="brokers"><h2>Brokers</h2>
{% if brokers %}<table><thead><tr><th>cluster</th><th>broker</th><th>role</th><th>address</th>
<th>version</th><th>last heartbeat (ago, per node)</th><th>on nodes</th></tr></thead><tbody>
{% for b in brokers %}<tr data-broker="{{ b.addr }}"><td>{{ b.cluster }}</td><td>{{ b.name }}</td>
<td>{{ b.role }}</td><td class="key">{{ b.addr }}</td><td>{{ b.version }}</td>
<td>{% for h in b.beats %}<span class="chip" title="{{ h.at }}">{{ h.node }} {{ h.text }}</span>
{% endfor %}</td><td>{{ b.on|join(", ") }}</td></tr>{% endfor %}</tbody></table>
{% else %}<p class="muted">no broker registered on an answering node</p>{% endif %}
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
<p class="muted">Supervisor state as of {{ updated }}; node digests asked at {{ gathered }}.</p>
"""

ROWS = """
<table><thead><tr><th>table</th><th>key</th><th>broker / key</th><th>held by</th>
<th>missing on</th><th>odd node</th><th>what differs</th></tr></thead><tbody>
{% for d in diffs %}<tr data-table="{{ d.table }}"><td>{{ d.table }}</td>
<td class="key">{{ d.key }}</td><td class="key">{{ d.sub }}</td>
<td>{% for p in d.present %}<span class="chip">{{ p }}</span>{% endfor %}</td>
<td>{% for m in d.missing %}<span class="chip miss">{{ m }}</span>{% endfor %}</td>
<td>{% if d.majority %}{% for o in d.odd %}<b>{{ o }}</b> {% endfor %}{% else %}<span
class="muted">no majority</span>{% endif %}</td><td>{{ d.what }}</td></tr>{% endfor %}
</tbody></table>
"""

KEYS = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>pynamesrv: disagreeing entries</title><style>{{ css|safe }}</style></head>
<body><header><div><h1>{{ title }}</h1><div class="meta">as of {{ gathered }} &middot;
<a href="/" style="color:#e4e7eb">back to the status page</a></div></div></header>
<main><section>
{% if not past %}<form class="filter" method="get" action="/keys">
<select name="table"><option value="">every table</option>{% for t in tables %}
<option{{ ' selected' if t == f.table else '' }}>{{ t }}</option>{% endfor %}</select>
<input name="group" placeholder="broker / namespace" value="{{ f.group }}">
<select name="node"><option value="">any odd node</option>{% for n in nodes %}
<option{{ ' selected' if n == f.node else '' }}>{{ n }}</option>{% endfor %}</select>
<input name="q" placeholder="key contains" value="{{ f.q }}"><button>filter</button></form>
<p>{{ "{:,}".format(matched) }} of {{ "{:,}".format(total) }} entries match{% if matched > shown %};
the first {{ shown }} are shown{% endif %}.</p>
{% else %}<p>{{ "{:,}".format(shown) }} kept of {{ "{:,}".format(total) }}.</p>{% endif %}
{% set diffs = rows %}{% include "rows" %}
</section></main></body></html>
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
    env = jinja2.Environment(loader=jinja2.DictLoader({"page": PAGE, "live": LIVE, "rows": ROWS,
                                                      "keys": KEYS}),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.globals.update(css=CSS, script=SCRIPT)
    return env
