"""The report page's outcome section (``replay --html FILE --sweep LOW..HIGH --outcomes FILE``):
its data, markup, style and script.

Only a page whose data holds ``outcomes`` gets the section, and its own script
(pinned by hash in the page's Content-Security-Policy beside the main one): every
other page is the same, byte for byte, as before the section existed. The script
draws the table and a plot of cost (resolved runs stopped, across) against
savings (calls of failed runs after their stop, up), one point per maxRepeats,
the recommended one ringed. Every piece of the input (the outcome file's name,
run names) reaches the DOM through ``textContent``; the SVG holds only numbers
and this script's class names.
"""

from __future__ import annotations

from typing import Any

from ...analysis.outcome_sweep import RUNS_LISTED, OutcomeSweep
from ...analysis.prices import Prices
from ...analysis.waste import dollars
from ..outcomes import fresh_tokens, recommendation_line, stop_words

__all__ = ["OUTCOMES_MARKUP", "OUTCOMES_SCRIPT", "OUTCOMES_STYLE", "outcomes_data"]


def outcomes_data(sweep: OutcomeSweep, prices: Prices | None) -> dict[str, Any]:
    """The page's ``outcomes`` member: one row per maxRepeats, as parallel fields."""
    rows = []
    for row in sweep.rows:
        unknown = bool(row.failed_stopped) and row.unknown_runs == row.failed_stopped
        fresh = fresh_tokens(row.saved.tokens())
        amount = None
        if prices is not None:
            priced = dollars(row.saved, prices)
            amount = priced.amount if priced.priced_turns else None
        rows.append(
            {
                "m": row.max_repeats,
                "rd": row.resolved_denied,
                "rs": row.resolved_stopped,
                "fd": row.failed_denied,
                "fs": row.failed_stopped,
                "c": row.saved_calls,
                "t": None if unknown else row.saved.turns,
                "k": None if unknown else (fresh or 0),
                "d": amount,
                "u": row.unknown_runs,
            }
        )
    limits = range(sweep.rows[0].max_repeats, sweep.rows[-1].max_repeats + 1)
    unmatched = sweep.unmatched_runs()
    best = sweep.recommended
    return {
        "source": sweep.source,
        "stop": stop_words(sweep),
        "resolved": sweep.resolved,
        "failed": sweep.failed,
        "recommended": None if best is None else best.max_repeats,
        "recommendation": recommendation_line(sweep, limits, prices),
        "unmatched": len(unmatched),
        "unmatchedListed": [
            stats.file if stats.session == stats.file else stats.session
            for stats in unmatched[:RUNS_LISTED]
        ],
        "unused": 0 if sweep.complement else len(sweep.matched.unused),
        "rows": rows,
    }


OUTCOMES_MARKUP = """<h2>Outcomes: what each maxRepeats costs and saves</h2>
<section class="lb-outcomes" id="lb-outcomes">
<p class="lb-meta" id="lb-o-meta"></p>
<div class="lb-o-wrap">
<table class="lb-o-table">
<thead><tr><th class="lb-num">maxRepeats</th><th class="lb-num">resolved runs denied</th>
<th class="lb-num">resolved runs stopped</th><th class="lb-num">failed runs stopped</th>
<th class="lb-num">calls saved</th><th class="lb-num">turns saved</th>
<th class="lb-num">tokens saved</th><th class="lb-num">cost saved</th></tr></thead>
<tbody id="lb-o-rows"></tbody>
</table>
<div class="lb-o-plot" id="lb-o-plot"></div>
</div>
<p class="lb-o-best" id="lb-o-best"></p>
<ul class="lb-o-notes" id="lb-o-notes"></ul>
</section>
"""

OUTCOMES_STYLE = """
.lb-o-wrap { display: flex; gap: 18px; flex-wrap: wrap; align-items: flex-start; }
.lb-o-table { width: auto; flex: 1 1 520px; table-layout: auto; }
.lb-o-table th, .lb-o-table td { width: auto; }
.lb-o-best-row td { font-weight: 600; background: #eef6ee; }
.lb-o-plot { flex: 0 0 auto; background: var(--card); border: 1px solid var(--line);
  border-radius: 8px; padding: 6px; }
.lb-o-best { font-weight: 600; margin: 10px 0 4px; overflow-wrap: anywhere; }
.lb-o-notes { color: var(--muted); margin: 0; padding-left: 18px; overflow-wrap: anywhere; }
.lb-o-axis { stroke: var(--muted); stroke-width: 1; }
.lb-o-line { fill: none; stroke: #4e79a7; stroke-width: 1.5; }
.lb-o-point { fill: #4e79a7; }
.lb-o-point.lb-o-rec { fill: #2f7d32; }
.lb-o-ring { fill: none; stroke: #2f7d32; stroke-width: 2; }
.lb-o-label { font-size: 11px; fill: var(--ink); }
"""

OUTCOMES_SCRIPT = r"""
(function () {
  "use strict";
  var O = JSON.parse(document.getElementById("lb-data").textContent).outcomes;
  var currency = JSON.parse(document.getElementById("lb-data").textContent).currency;
  function fmt(n) { return n === null || n === undefined ? "\u2014" : n.toLocaleString("en-US"); }
  function money(n) {
    if (n === null || n === undefined) return "\u2014";
    var digits = n >= 0.995 ? 2 : 4;
    return n.toLocaleString("en-US", {minimumFractionDigits: digits,
      maximumFractionDigits: digits}) + " " + currency;
  }
  function plural(n, word) { return fmt(n) + " " + word + (n === 1 ? "" : "s"); }
  document.getElementById("lb-o-meta").textContent =
    plural(O.resolved, "resolved run") + " and " + plural(O.failed, "failed run") +
    " matched in " + O.source + "; " + O.stop;
  var body = document.getElementById("lb-o-rows");
  O.rows.forEach(function (r) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-m", String(r.m));
    if (r.m === O.recommended) tr.className = "lb-o-best-row";
    [r.m, r.rd, r.rs, r.fs, r.c, r.t, r.k].forEach(function (v) {
      var td = document.createElement("td");
      td.className = "lb-num";
      td.textContent = fmt(v);
      tr.appendChild(td);
    });
    var cost = document.createElement("td");
    cost.className = "lb-num";
    cost.textContent = money(r.d);
    tr.appendChild(cost);
    body.appendChild(tr);
  });
  document.getElementById("lb-o-best").textContent = O.recommendation;
  var notes = document.getElementById("lb-o-notes");
  function note(text) { var li = document.createElement("li"); li.textContent = text;
    notes.appendChild(li); }
  var unknown = O.rows.reduce(function (a, r) { return Math.max(a, r.u); }, 0);
  if (unknown) note("Turns and tokens saved leave out " + plural(unknown, "stopped failed run") +
    " recording fewer than two model turns (no usage, or one total per run).");
  if (O.unmatched) note(plural(O.unmatched, "run") + " with no outcome, left out: " +
    O.unmatchedListed.join(", ") + (O.unmatched > O.unmatchedListed.length ? ", ..." : ""));
  if (O.unused) note(plural(O.unused, "outcome") + " of " + O.source + " matched no replayed run");
  note("Cost, across: resolved runs each maxRepeats would have stopped. Savings, up: the " +
    "calls failed runs made after their stop. One point per maxRepeats.");

  // The plot: numbers and our own class names only.
  var W = 360, H = 240, L = 52, R = 16, T = 14, B = 40;
  var maxX = Math.max(1, O.rows.reduce(function (a, r) { return Math.max(a, r.rs); }, 0));
  var maxY = Math.max(1, O.rows.reduce(function (a, r) { return Math.max(a, r.c); }, 0));
  function x(v) { return L + (W - L - R) * v / maxX; }
  function y(v) { return H - B - (H - T - B) * v / maxY; }
  var svg = ['<svg class="lb-o-svg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W +
    ' ' + H + '" role="img" aria-label="cost against savings">'];
  svg.push('<line class="lb-o-axis" x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - R) +
    '" y2="' + (H - B) + '"/>');
  svg.push('<line class="lb-o-axis" x1="' + L + '" y1="' + T + '" x2="' + L + '" y2="' +
    (H - B) + '"/>');
  [0, maxX].forEach(function (v) {
    svg.push('<text class="lb-o-label" x="' + x(v) + '" y="' + (H - B + 14) +
      '" text-anchor="middle">' + v + '</text>');
  });
  [0, maxY].forEach(function (v) {
    svg.push('<text class="lb-o-label" x="' + (L - 6) + '" y="' + (y(v) + 4) +
      '" text-anchor="end">' + v + '</text>');
  });
  svg.push('<text class="lb-o-label" x="' + ((L + W - R) / 2) + '" y="' + (H - 6) +
    '" text-anchor="middle">resolved runs stopped</text>');
  svg.push('<text class="lb-o-label" x="12" y="' + ((T + H - B) / 2) +
    '" text-anchor="middle" transform="rotate(-90 12 ' + ((T + H - B) / 2) +
    ')">calls saved</text>');
  var path = O.rows.map(function (r, i) {
    return (i ? "L" : "M") + x(r.rs).toFixed(1) + " " + y(r.c).toFixed(1);
  }).join(" ");
  svg.push('<path class="lb-o-line" d="' + path + '"/>');
  O.rows.forEach(function (r) {
    var best = r.m === O.recommended;
    if (best) svg.push('<circle class="lb-o-ring" cx="' + x(r.rs) + '" cy="' + y(r.c) +
      '" r="8"/>');
    svg.push('<circle class="lb-o-point' + (best ? " lb-o-rec" : "") + '" data-m="' + r.m +
      '" data-cost="' + r.rs + '" data-saved="' + r.c + '" cx="' + x(r.rs) + '" cy="' +
      y(r.c) + '" r="4"><title>maxRepeats ' + r.m + ": " + r.rs + " resolved stopped, " +
      r.c + ' calls saved</title></circle>');
    svg.push('<text class="lb-o-label" x="' + (x(r.rs) + 7) + '" y="' + (y(r.c) - 6) + '">' +
      r.m + '</text>');
  });
  svg.push("</svg>");
  document.getElementById("lb-o-plot").innerHTML = svg.join("");
})();
"""
