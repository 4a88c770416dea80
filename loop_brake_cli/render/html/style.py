"""The report page's style sheet, inline so the page loads nothing from anywhere."""

STYLE = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #d9dee4; --bg: #f7f8fa; --card: #fff;
  --streak: #f6d38a; --bracket: #b7791f; --denial: #b3261e; --alt: #7b3fa0; --same: #2a8f85; }
* { box-sizing: border-box; }
body { margin: 0; padding: 20px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI",
  Roboto, "DejaVu Sans", sans-serif; color: var(--ink); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 2px; }
h2 { font-size: 16px; margin: 26px 0 10px; }
.lb-meta { color: var(--muted); margin: 0 0 14px; }
.lb-totals { display: grid; grid-template-columns: repeat(auto-fit, minmax(104px, 1fr)); gap: 8px; }
.lb-card { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 8px 12px; }
.lb-card-value { font-size: 19px; font-weight: 600; font-variant-numeric: tabular-nums;
  white-space: nowrap; }
.lb-c-cost .lb-card-value { white-space: normal; }
.lb-c-bad, .lb-c-skip { border-color: var(--denial); }
.lb-c-bad .lb-card-value { color: var(--denial); }
.lb-problems { margin: 12px 0 0; padding: 8px 12px; background: #fdf1f0;
  border: 1px solid var(--denial); border-radius: 8px; }
.lb-problems p { margin: 0 0 4px; }
.lb-problem-head { font-weight: 600; color: var(--denial); }
.lb-problems ul { margin: 4px 0; padding-left: 20px; overflow-wrap: anywhere; }
.lb-card-value.lb-unknown { font-size: 14px; font-weight: 500; color: var(--muted);
  padding: 4px 0 3px; white-space: normal; line-height: 1.2; }
.lb-card-label { color: var(--muted); font-size: 12px; }
.lb-controls { display: flex; gap: 14px; align-items: center; flex-wrap: wrap; margin: 0 0 8px; }
.lb-controls input[type=search] { padding: 4px 8px; border: 1px solid var(--line);
  border-radius: 6px; min-width: 240px; font: inherit; }
.lb-controls button { font: inherit; padding: 3px 10px; border: 1px solid var(--line);
  border-radius: 6px; background: var(--card); cursor: pointer; }
.lb-controls button:disabled { opacity: .4; cursor: default; }
#lb-page { color: var(--muted); }
table { border-collapse: collapse; width: 100%; background: var(--card);
  border: 1px solid var(--line); table-layout: fixed; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--line); text-align: left;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
th { background: #eef1f4; white-space: normal; vertical-align: bottom; }
th:nth-child(1) { width: 26%; } th:nth-child(2) { width: 16%; }
.lb-num { text-align: right; font-variant-numeric: tabular-nums; }
.lb-sort { all: unset; cursor: pointer; font-weight: 600; display: block; width: 100%; }
th.lb-num .lb-sort { text-align: right; }
.lb-row { cursor: pointer; }
.lb-row:hover { background: #f0f4fa; }
.lb-denied td:nth-child(4) { color: var(--denial); font-weight: 600; }
.lb-legend { position: sticky; top: 0; z-index: 2; background: var(--bg); padding: 6px 0;
  border-bottom: 1px solid var(--line); display: flex; flex-direction: column; gap: 4px; }
.lb-keys { display: flex; flex-wrap: wrap; gap: 4px 14px; }
.lb-key { display: inline-flex; align-items: center; gap: 5px; font-size: 12.5px; }
.lb-key-count { color: var(--muted); }
.lb-more { color: var(--muted); }
.lb-swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; }
.lb-k-streak { background: var(--streak); border-top: 3px solid var(--bracket); }
.lb-k-denial { background: var(--denial); width: 3px; }
.lb-k-waste { background: repeating-linear-gradient(135deg, rgba(179,38,30,.55) 0 2px,
  rgba(179,38,30,.12) 2px 5px); }
.lb-k-alt { background: var(--alt); height: 6px; border-radius: 3px; }
.lb-k-same { background: var(--same); height: 6px; border-radius: 3px; }
.lb-session { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  margin: 10px 0; padding: 8px 12px; scroll-margin-top: 70px; min-height: 60px; }
.lb-session-head { display: flex; gap: 12px; flex-wrap: wrap; align-items: baseline; }
.lb-session-file { font-weight: 600; overflow-wrap: anywhere; }
.lb-session-id { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px;
  color: var(--muted); overflow-wrap: anywhere; }
.lb-session-facts { color: var(--muted); font-size: 12.5px; }
.lb-plot { min-height: 96px; }
.lb-scroll { overflow-x: auto; }
.lb-svg { display: block; }
.lb-mark.lb-d { stroke: var(--denial); stroke-width: 1; }
.lb-band { fill: var(--streak); fill-opacity: .6; stroke: var(--bracket); stroke-width: 1.2; }
.lb-bracket { fill: var(--bracket); }
.lb-band-label { font-size: 11px; fill: var(--bracket); font-weight: 600; }
.lb-waste { fill: url(#lb-hatch); }
.lb-denial line { stroke: var(--denial); stroke-width: 2; }
.lb-denial path { fill: var(--denial); }
.lb-alt { fill: var(--alt); }
.lb-same { fill: var(--same); }
.lb-tick { font-size: 10.5px; fill: var(--muted); }
.lb-notes { margin: 2px 0 0; font-size: 12.5px; }
.lb-none { color: var(--muted); font-style: italic; }
.lb-tip { position: fixed; z-index: 5; background: #1f2933; color: #fff; padding: 6px 9px;
  border-radius: 6px; font-size: 12px; pointer-events: none; max-width: 520px;
  overflow-wrap: anywhere; box-shadow: 0 2px 8px rgba(0,0,0,.25); }
.lb-tip b { color: #cbd2d9; font-weight: 500; }
@media (max-width: 900px) {
  /* A narrow window: the numeric headers wrap between words and shrink a little, so
     each stays whole (checked at 700 px in tests/test_html_browser.py). */
  body { padding: 16px 12px 32px; }
  th, td { padding: 4px 5px; }
  th { font-size: 12px; }
  th:nth-child(1) { width: 22%; } th:nth-child(2) { width: 14%; }
  .lb-totals { grid-template-columns: repeat(auto-fit, minmax(120px, 1fr)); }
}
.lb-foot { color: var(--muted); font-size: 12px; margin-top: 24px; }
"""
