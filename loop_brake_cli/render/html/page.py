"""The report as one HTML document: static markup, the inline style and script, and the
page data as JSON.

Everything that comes from the input (file names, session ids, tool names, JSON
paths) is only ever in the JSON block, escaped so that no ``<``, ``>`` or ``&``
appears in it literally: a value holding ``</script>`` cannot end the block. The
Content-Security-Policy allows no request at all and pins the one script by its
hash, so even a markup injection could neither run code nor load anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from .script import SCRIPT
from .style import STYLE

_JSON_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def embed_json(data: Any) -> str:
    """``data`` as JSON that is inert inside a ``<script>`` element.

    ASCII only (a lone surrogate from an undecodable name stays a valid ``\\udcxx``
    escape; U+2028 and U+2029 are escaped too), and ``<``, ``>``, ``&`` only as
    ``\\u`` escapes, which can occur only inside JSON strings."""
    return json.dumps(data, ensure_ascii=True, separators=(",", ":")).translate(_JSON_ESCAPES)


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src "
    + _csp_hash(SCRIPT)
    + "; base-uri 'none'; form-action 'none'"
)

_MARK = "@@"
"""Placeholders in the template are ``@@name@@``."""

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="@@policy@@">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="loop-brake replay --html">
<link rel="icon" href="data:,">
<title>loop-brake replay report</title>
<style>@@style@@</style>
</head>
<body>
<header>
<h1>loop-brake replay: where the brake would have stopped each agent</h1>
<p class="lb-meta" id="lb-meta"></p>
<div class="lb-totals" id="lb-totals"></div>
<section class="lb-problems" id="lb-problems" role="alert" hidden></section>
</header>
<h2>Sessions</h2>
<div class="lb-controls">
<input type="search" id="lb-query" placeholder="filter by file or session" aria-label="filter">
<label><input type="checkbox" id="lb-denied-only"> only sessions with a denial</label>
<button type="button" id="lb-prev">&larr; previous</button>
<button type="button" id="lb-next">next &rarr;</button>
<span id="lb-page"></span>
</div>
<table>
<thead><tr id="lb-head"></tr></thead>
<tbody id="lb-rows"></tbody>
</table>
<h2>Timelines</h2>
<div class="lb-legend">
<div class="lb-keys" id="lb-legend"></div>
<div class="lb-keys" id="lb-marks-key"></div>
</div>
<div id="lb-timelines"></div>
<p class="lb-foot">One mark per tool call, in the order the transcript recorded them; hover a mark
for its tool, 12-hex hash prefix, count and location. Tool arguments and results are never
part of this page. The A/B alternation and same-tool run are each session's longest, shown for
information: the exact brake does not deny them.</p>
<div class="lb-tip" id="lb-tip" hidden></div>
<svg width="0" height="0" aria-hidden="true" style="position:absolute"><defs>
<pattern id="lb-hatch" width="6" height="6" patternUnits="userSpaceOnUse"
 patternTransform="rotate(45)"><rect width="6" height="6" fill="rgba(179,38,30,0.10)"/>
<rect width="2.2" height="6" fill="rgba(179,38,30,0.55)"/>
</pattern></defs></svg>
<noscript><p>This report draws its tables and timelines with JavaScript.</p></noscript>
<script type="application/json" id="lb-data">@@data@@</script>
<script>@@script@@</script>
</body>
</html>
"""


def _outcomes_template() -> tuple[str, dict[str, str]]:
    """The template and fills of a page with an outcome section (``render/html/outcomes``):
    its markup before the sessions, its script after the main one, both scripts pinned."""
    from .outcomes import OUTCOMES_MARKUP, OUTCOMES_SCRIPT, OUTCOMES_STYLE

    template = _TEMPLATE.replace("<h2>Sessions</h2>", OUTCOMES_MARKUP + "<h2>Sessions</h2>", 1)
    template = template.replace(
        "<script>@@script@@</script>",
        "<script>@@script@@</script>\n<script>@@outcomes@@</script>",
        1,
    )
    policy = _POLICY.replace("; base-uri", " " + _csp_hash(OUTCOMES_SCRIPT) + "; base-uri", 1)
    fills = {
        "policy": policy,
        "style": STYLE + OUTCOMES_STYLE,
        "script": SCRIPT,
        "outcomes": OUTCOMES_SCRIPT,
    }
    return template, fills


def render_page(data: dict[str, Any]) -> str:
    """The whole document for the page data ``data`` (see ``data.page_data``); with an
    ``outcomes`` member, the outcome section too (a page without one is unchanged).

    Joined piece by piece, never by a format or replace over the whole text, so
    nothing inserted can be read as a placeholder."""
    template = _TEMPLATE
    fills = {"policy": _POLICY, "style": STYLE, "script": SCRIPT}
    if "outcomes" in data:
        template, fills = _outcomes_template()
    parts = template.split(_MARK)
    out = []
    for index, part in enumerate(parts):
        if index % 2 == 0:
            out.append(part)
        else:
            out.append(embed_json(data) if part == "data" else fills[part])
    return "".join(out)
