"""The report page's script: reads the embedded JSON, draws the totals, the table and the
timelines.

Kept as a Python string so the page needs no file beside the package, and so
``page.py`` can pin it by hash in the page's Content-Security-Policy (an injected
script could not run even if escaping failed). Every piece of the input reaches
the DOM through ``textContent`` or ``setAttribute``, never through markup; the
SVG markup built as a string holds only numbers and this script's own class names
and colours. Timelines are drawn when their card scrolls into view, and the table
shows one page of sessions, so 10,000 sessions or a 10,000-call session stay fast.
"""

SCRIPT = r"""
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("lb-data").textContent);
  var PAGE_SIZE = 50;
  var SVGNS = "http://www.w3.org/2000/svg";
  // 24 colours, each at least 25 CIE76 units from every other (Tableau 10, then the
  // colours that were farthest from all before them): a tool's colour names it.
  var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                 "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1d1dc9", "#e236c6",
                 "#36e236", "#501070", "#3670e2", "#701030", "#295640", "#d9f5bc",
                 "#c91d73", "#bce963", "#707010", "#292956", "#36e2a9", "#ef8fef"];
  var OTHER = "#d0d4d9";  // every tool past the 24 most used: one grey, named in the legend
  var tools = DATA.tools, files = DATA.files, sessions = DATA.sessions;
  var toolCalls = new Array(tools.length).fill(0);
  sessions.forEach(function (s, i) { s.i = i; if (s.s === null) s.s = "(the file)"; });
  (DATA.toolCalls || []).forEach(function (n, i) { toolCalls[i] = n; });
  // The most used tools get the palette's colours, no two alike; the rest share one grey
  // (more colours could no longer be told apart, so none would name its tool).
  var byUse = tools.map(function (_, i) { return i; })
    .sort(function (a, b) { return toolCalls[b] - toolCalls[a] || a - b; });
  var colour = new Array(tools.length);
  byUse.forEach(function (t, rank) {
    colour[t] = rank < PALETTE.length ? PALETTE[rank] : OTHER;
  });

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function fmt(n) { return n === null || n === undefined ? "\u2014" : n.toLocaleString("en-US"); }
  function money(n) {  // as the text summary: 4 decimals below one unit
    if (n === null || n === undefined) return "\u2014";
    var digits = n >= 0.995 ? 2 : 4;
    var places = {minimumFractionDigits: digits, maximumFractionDigits: digits};
    return n.toLocaleString("en-US", places) + " " + DATA.currency;
  }
  function tokens(s) {  // "120 tokens and 19,500 cache reads in 3 turns: 48 input, ..."
    var names = ["input", "output", "cache read", "cache write", "reasoning"], kinds = [];
    s.wk.forEach(function (n, k) { if (n !== null) kinds.push(fmt(n) + " " + names[k]); });
    return fmt(s.wt) + " tokens" + (s.wr !== null ? " and " + fmt(s.wr) + " cache reads" : "") +
      " in " + fmt(s.wn) + (s.wn === 1 ? " turn" : " turns") +
      (kinds.length ? ": " + kinds.join(", ") : "");
  }
  function where(s, i) {
    var tl = s.tl, loc = tl.l[i];
    var file = files[tl.fi ? tl.fi[i] : s.f];
    if (loc === null || loc === undefined) return file + " (call " + tl.o[i] + ")";
    return file + ":" + loc;
  }

  // ---- totals -----------------------------------------------------------
  function totals() {
    var t = DATA.totals, box = document.getElementById("lb-totals");
    var noUsage = "no usage recorded";
    var cost = DATA.prices === null ? "no prices given"
      : t.wasteTokens === null ? noUsage
      : t.wasteDollars === null ? "no price matches their models" : money(t.wasteDollars);
    var costLabel = "wasted cost";
    if (t.wasteDollars !== null && t.wasteCacheDollars !== null) {
      costLabel += ": " + money(t.wasteDollars - t.wasteCacheDollars) + " fresh tokens, " +
        money(t.wasteCacheDollars) + " cache reads";
    }
    var cards = [
      ["files", fmt(t.files)], ["sessions", fmt(t.sessions)], ["tool calls", fmt(t.calls)],
      ["denied calls", fmt(t.denied)], ["sessions with a denial", fmt(t.sessionsWithDenial)],
      ["wasted calls", fmt(t.wasteCalls)],
      ["wasted tokens (input, output, cache writes)",
        t.wasteTokens === null ? noUsage : fmt(t.wasteTokens), "lb-c-tokens"],
      ["wasted cache reads (re-read context, priced apart)",
        t.wasteTokens === null ? noUsage : t.wasteCacheReads === null ? "none recorded"
          : fmt(t.wasteCacheReads), "lb-c-cache"],
      [costLabel, cost, "lb-c-cost"]
    ];
    var problems = DATA.problems;
    if (problems.unreadable) {
      cards.push(["unreadable (left out of these totals)", fmt(problems.unreadable), "lb-c-bad"]);
    }
    if (problems.skipped.length) {
      cards.push(["files skipped: not transcripts", fmt(problems.skipped.length), "lb-c-skip"]);
    }
    cards.forEach(function (c) {
      var card = el("div", "lb-card" + (c[2] ? " " + c[2] : ""));
      var known = /^[0-9$]/.test(c[1]);
      card.appendChild(el("div", known ? "lb-card-value" : "lb-card-value lb-unknown", c[1]));
      card.appendChild(el("div", "lb-card-label", c[0]));
      box.appendChild(card);
    });
    var meta = document.getElementById("lb-meta");
    meta.textContent = "maxRepeats = " + DATA.maxRepeats + " (" + DATA.maxRepeatsSource + ")" +
      (DATA.policy ? " \u00b7 policy " + DATA.policy : "") +
      (t.warned !== undefined ? " \u00b7 " + fmt(t.warned) +
        (t.warned === 1 ? " call ran with a warning" : " calls ran with a warning") +
        " (warn_at)" : "") +
      (DATA.base ? (t.files === 1 ? " \u00b7 file in " : " \u00b7 files in ") + DATA.base : "") +
      (t.duplicates ? " \u00b7 " + fmt(t.duplicates) + (t.duplicates === 1 ? " call" : " calls") +
        " logged twice under one call id, counted once" : "");
    showProblems(problems);
  }

  // ---- what the totals leave out ------------------------------------------
  function showProblems(problems) {
    var box = document.getElementById("lb-problems");
    if (!problems.unreadable && !problems.skipped.length) return;
    box.hidden = false;
    if (problems.unreadable) {
      var head = el("p", "lb-problem-head", fmt(problems.unreadable) +
        (problems.unreadable === 1 ? " unreadable record or file"
          : " unreadable records or files") +
        ": the totals above leave them out (the run exited 3).");
      box.appendChild(head);
      var list = el("ul", "lb-errors");
      problems.errors.forEach(function (text) { list.appendChild(el("li", null, text)); });
      box.appendChild(list);
      if (problems.unreadable > problems.errors.length) {
        box.appendChild(el("p", null, "\u2026 and " +
          fmt(problems.unreadable - problems.errors.length) + " more, counted but not listed."));
      }
    }
    if (problems.skipped.length) {
      var skip = el("details", "lb-skipped");
      skip.appendChild(el("summary", null, fmt(problems.skipped.length) +
        (problems.skipped.length === 1 ? " file" : " files") +
        " found in the directories skipped: not transcripts (--strict makes them unreadable)"));
      var items = el("ul");
      problems.skipped.forEach(function (p) {
        items.appendChild(el("li", null, p[0] + ": " + p[1]));
      });
      skip.appendChild(items);
      box.appendChild(skip);
    }
  }

  // ---- legend -----------------------------------------------------------
  function legend() {
    var box = document.getElementById("lb-legend");
    var shown = byUse.slice(0, PALETTE.length);
    shown.forEach(function (t) {
      var item = el("span", "lb-key");
      var sw = el("span", "lb-swatch");
      sw.style.background = colour[t];
      item.appendChild(sw);
      item.appendChild(el("span", "lb-key-name", tools[t]));
      item.appendChild(el("span", "lb-key-count", fmt(toolCalls[t])));
      box.appendChild(item);
    });
    if (tools.length > shown.length) {
      var more = tools.length - shown.length;
      var rest = el("span", "lb-key lb-more");
      var grey = el("span", "lb-swatch");
      grey.style.background = OTHER;
      rest.appendChild(grey);
      rest.appendChild(el("span", "lb-key-name", "+" + more + " more tools, all in grey"));
      box.appendChild(rest);
    }
    var marks = document.getElementById("lb-marks-key");
    [["lb-k-streak", "streak of identical calls"],
     ["lb-k-denial", "brake's first denial"],
     ["lb-k-waste", "waste: tries after the denial"],
     ["lb-k-alt", "A/B alternation (informational)"],
     ["lb-k-same", "same tool, arguments changing (informational)"]].forEach(function (k) {
      var item = el("span", "lb-key");
      item.appendChild(el("span", "lb-swatch " + k[0]));
      item.appendChild(el("span", "lb-key-name", k[1]));
      marks.appendChild(item);
    });
  }

  // ---- table ------------------------------------------------------------
  var COLUMNS = [
    {label: "File", get: function (s) { return files[s.f]; }, text: true},
    {label: "Session", get: function (s) { return s.s; }, text: true},
    {label: "Calls", get: function (s) { return s.n; }},
    {label: "Denied", get: function (s) { return s.d; }},
    {label: "Wasted calls", get: function (s) { return s.wc; }},
    {label: "Wasted tokens", get: function (s) { return s.wt; }},
    {label: "Wasted cost", get: function (s) { return s.wd; }, money: true},
    {label: "Longest streak", get: function (s) { return s.ls; }}
  ];
  var state = {sort: 3, desc: true, page: 0, query: "", deniedOnly: false};
  var order = [];

  function compare(col, desc) {
    var get = COLUMNS[col].get, text = COLUMNS[col].text;
    return function (a, b) {
      var x = get(a), y = get(b);
      var xn = x === null || x === undefined, yn = y === null || y === undefined;
      if (xn || yn) return xn === yn ? a.i - b.i : (xn ? 1 : -1);  // unknown last
      var c = text ? (x < y ? -1 : x > y ? 1 : 0) : x - y;
      if (desc) c = -c;
      return c || a.i - b.i;
    };
  }
  function refilter() {
    var q = state.query.toLowerCase();
    order = sessions.filter(function (s) {
      if (state.deniedOnly && !s.d) return false;
      if (!q) return true;
      return files[s.f].toLowerCase().indexOf(q) >= 0 || s.s.toLowerCase().indexOf(q) >= 0;
    });
    order.sort(compare(state.sort, state.desc));
  }
  function header() {
    var row = document.getElementById("lb-head");
    row.textContent = "";
    COLUMNS.forEach(function (col, i) {
      var th = el("th", col.text ? "" : "lb-num");
      var button = el("button", "lb-sort", col.label);
      button.type = "button";
      var sorted = state.sort === i;
      th.setAttribute("aria-sort", sorted ? (state.desc ? "descending" : "ascending") : "none");
      if (sorted) button.appendChild(el("span", "lb-arrow", state.desc ? " \u25bc" : " \u25b2"));
      button.addEventListener("click", function () {
        if (state.sort === i) state.desc = !state.desc;
        else { state.sort = i; state.desc = !col.text; }
        state.page = 0;
        refresh();
      });
      th.appendChild(button);
      row.appendChild(th);
    });
  }
  function body() {
    var tbody = document.getElementById("lb-rows");
    tbody.textContent = "";
    var start = state.page * PAGE_SIZE, rows = order.slice(start, start + PAGE_SIZE);
    var frag = document.createDocumentFragment();
    rows.forEach(function (s) {
      var tr = el("tr", s.d ? "lb-row lb-denied" : "lb-row");
      tr.dataset.session = s.i;
      COLUMNS.forEach(function (col) {
        var v = col.get(s);
        var td = el("td", col.text ? "lb-text" : "lb-num",
          col.text ? v : col.money ? money(v) : fmt(v));
        if (col.text) td.title = v;
        else if (col.label === "Wasted tokens" && s.wk) td.title = tokens(s);
        else if (col.money && s.wrd !== null && s.wrd !== undefined) {
          td.title = money(s.wd - s.wrd) + " fresh tokens, " + money(s.wrd) + " cache reads";
        }
        tr.appendChild(td);
      });
      tr.tabIndex = 0;
      function go() {
        var card = document.getElementById("lb-s" + s.i);
        if (card) card.scrollIntoView({block: "start"});
      }
      tr.addEventListener("click", go);
      tr.addEventListener("keydown", function (ev) { if (ev.key === "Enter") go(); });
      frag.appendChild(tr);
    });
    tbody.appendChild(frag);
    var pages = Math.max(1, Math.ceil(order.length / PAGE_SIZE));
    document.getElementById("lb-page").textContent =
      order.length ? (start + 1) + "\u2013" + (start + rows.length) + " of " + fmt(order.length) +
      " sessions (page " + (state.page + 1) + " of " + pages + ")" : "no session matches";
    document.getElementById("lb-prev").disabled = state.page === 0;
    document.getElementById("lb-next").disabled = state.page >= pages - 1;
    cards(rows);
  }
  function refresh() { refilter(); header(); body(); }

  // ---- timelines --------------------------------------------------------
  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { observer.unobserve(e.target); draw(e.target); }
    });
  }, {rootMargin: "400px 0px"}) : null;

  function cards(rows) {
    var box = document.getElementById("lb-timelines");
    if (observer) observer.disconnect();
    box.textContent = "";
    rows.forEach(function (s) {
      var card = el("section", "lb-session");
      card.id = "lb-s" + s.i;
      card.dataset.session = s.i;
      var head = el("div", "lb-session-head");
      head.appendChild(el("span", "lb-session-file", files[s.f]));
      if (s.s !== "(the file)") head.appendChild(el("span", "lb-session-id", s.s));
      var facts = fmt(s.n) + " calls \u00b7 " + fmt(s.d) + " denied";
      if (s.u) facts += " \u00b7 " + fmt(s.u) + " logged twice under one call id (counted once)";
      if (s.wc) facts += " \u00b7 " + fmt(s.wc) + " wasted calls";
      if (s.wk) facts += " (" + tokens(s) + ")";
      if (s.ls > 1) {
        facts += " \u00b7 longest streak \u00d7" + s.ls + " " + tools[s.lt] + " " + s.lh;
      }
      head.appendChild(el("span", "lb-session-facts", facts));
      card.appendChild(head);
      var plot = el("div", "lb-plot");
      if (!s.tl) plot.appendChild(el("p", "lb-none", "timeline not recorded"));
      card.appendChild(plot);
      box.appendChild(card);
      if (s.tl) { if (observer) observer.observe(card); else draw(card); }
    });
  }

  var ROW = {label: 0, bracket: 14, top: 22, mark: 34, info: 62, axis: 82, height: 96};

  function draw(card) {
    var s = sessions[+card.dataset.session], tl = s.tl, n = tl.t.length;
    var plot = card.querySelector(".lb-plot");
    var avail = Math.max(300, plot.clientWidth - 24);
    var step = Math.max(3, Math.min(18, avail / Math.max(n, 1)));
    var w = Math.max(1, Math.min(step - 1, step * 0.8));
    var width = Math.ceil(n * step) + 24, x0 = 12;
    var parts = [], pad = (step - w) / 2;
    function x(i) { return x0 + i * step; }
    function rect(cls, rx, ry, rw, rh, extra) {
      parts.push('<rect class="' + cls + '" x="' + rx + '" y="' + ry + '" width="' + rw +
        '" height="' + rh + '"' + (extra || "") + "/>");
    }
    // Informational measures: below the marks.
    if (tl.alt) {
      rect("lb-alt", x(tl.alt[0]), ROW.info, tl.alt[1] * step - 2 * pad, 6,
        ' rx="3" data-len="' + tl.alt[1] + '"');
    }
    if (tl.same) {
      rect("lb-same", x(tl.same[0]), ROW.info + 8, tl.same[1] * step - 2 * pad, 6,
        ' rx="3" data-len="' + tl.same[1] + '"');
    }
    // Streak bands behind the marks, with a bracket and its length above.
    tl.st.forEach(function (b) {
      var bx = x(b[0]) - pad, bw = b[1] * step;
      rect("lb-band", bx, ROW.top - 3, bw, ROW.mark + 6, ' rx="3" data-len="' + b[1] + '"');
      rect("lb-bracket", bx, ROW.bracket, bw, 4);
      if (bw >= 22) {
        parts.push('<text class="lb-band-label" x="' + (bx + 2) + '" y="' + (ROW.bracket - 3) +
          '">\u00d7' + b[1] + "</text>");
      }
    });
    // One mark per call, coloured by tool; a denied call gets a dark outline.
    var ww = w.toFixed(2);
    for (var i = 0; i < n; i++) {
      var v = tl.v.charCodeAt(i), denied = v === 100 || v === 115;  // d, s
      rect(denied ? "lb-mark lb-d" : "lb-mark", x(i).toFixed(2), ROW.top, ww, ROW.mark,
        ' fill="' + colour[tl.t[i]] + '"');
    }
    // Waste: the tries after each streak's first denial, shaded over the marks.
    tl.w.forEach(function (r) {
      rect("lb-waste", x(r[0]) - pad, ROW.top - 2, r[1] * step, ROW.mark + 4,
        ' data-calls="' + r[1] + '"');
    });
    // The brake's first denial of each streak: a line and a flag under it.
    tl.fd.forEach(function (i) {
      var cx = x(i) + w / 2, foot = ROW.top + ROW.mark + 4;
      parts.push('<g class="lb-denial" data-call="' + tl.o[i] + '"><line x1="' + cx + '" x2="' +
        cx + '" y1="' + (ROW.bracket - 2) + '" y2="' + foot + '"/><path d="M' + (cx - 5) + "," +
        (foot + 8) + 'l5,-8l5,8z"/></g>');
    });
    // Axis: call numbers within the session.
    var every = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000].find(function (k) {
      return k * step >= 40;
    }) || 10000;
    for (var k = 0; k < n; k += every) {
      parts.push('<text class="lb-tick" x="' + (x(k) + w / 2) + '" y="' + ROW.axis + '">' +
        (k + 1) + "</text>");
    }
    var svg = document.createElementNS(SVGNS, "svg");
    svg.setAttribute("class", "lb-svg");
    svg.setAttribute("width", width);
    svg.setAttribute("height", ROW.height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + ROW.height);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "timeline of " + n + " calls");
    svg.innerHTML = parts.join("");
    svg.addEventListener("mousemove", function (ev) {
      var r = svg.getBoundingClientRect();
      var i = Math.floor((ev.clientX - r.left - x0 + pad) / step);
      if (i < 0 || i >= n) { hideTip(); return; }
      showTip(s, i, ev);
    });
    svg.addEventListener("mouseleave", hideTip);
    plot.textContent = "";
    var scroller = el("div", "lb-scroll");
    scroller.appendChild(svg);
    plot.appendChild(scroller);
    var notes = [];
    tl.fd.forEach(function (i) {
      notes.push("first denial at call " + tl.o[i] + " of the file (" + tools[tl.t[i]] + " " +
        tl.hs[tl.h[i]] + ", its " + ordinal(tl.c[i]) + " identical call)");
    });
    var wasted = tl.w.reduce(function (a, r) { return a + r[1]; }, 0);
    if (wasted) notes.push(wasted + (wasted === 1 ? " try" : " tries") + " after it wasted");
    if (tl.alt) notes.push("A/B alternation \u00d7" + tl.alt[1] + " from call " + tl.o[tl.alt[0]]);
    if (tl.same) {
      notes.push("same tool, arguments changing \u00d7" + tl.same[1] + " from call " +
        tl.o[tl.same[0]]);
    }
    if (notes.length) plot.appendChild(el("p", "lb-notes", notes.join(" \u00b7 ")));
    card.dataset.drawn = "1";
  }

  function ordinal(n) {
    var s = ["th", "st", "nd", "rd"], v = n % 100;
    return n + (s[(v - 20) % 10] || s[v] || s[0]);
  }

  var tip = document.getElementById("lb-tip");
  function showTip(s, i, ev) {
    var tl = s.tl, v = tl.v[i];
    var status = {d: "denied", s: "stop"}[v] || "passed";
    if (tl.fd.indexOf(i) >= 0) status += " (first denial)";
    if (inWaste(tl, i)) status += " \u00b7 wasted";
    var lines = [
      ["tool", tools[tl.t[i]]], ["hash", tl.hs[tl.h[i]]], ["count", tl.c[i]],
      ["call", (i + 1) + " of the session, " + tl.o[i] + " of the file"],
      ["where", where(s, i)], ["verdict", status]
    ];
    tip.textContent = "";
    lines.forEach(function (l) {
      var row = el("div");
      row.appendChild(el("b", null, l[0] + " "));
      row.appendChild(document.createTextNode(String(l[1])));
      tip.appendChild(row);
    });
    tip.hidden = false;
    var left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(4, left) + "px";
    var below = ev.clientY + 16, above = ev.clientY - tip.offsetHeight - 12;
    var fits = below + tip.offsetHeight <= window.innerHeight || above < 0;
    tip.style.top = (fits ? below : above) + "px";
  }
  function hideTip() { tip.hidden = true; }
  function inWaste(tl, i) {
    return tl.w.some(function (r) { return i >= r[0] && i < r[0] + r[1]; });
  }

  // ---- controls ---------------------------------------------------------
  document.getElementById("lb-prev").addEventListener("click", function () {
    if (state.page > 0) { state.page--; body(); }
  });
  document.getElementById("lb-next").addEventListener("click", function () {
    state.page++; body();
  });
  document.getElementById("lb-query").addEventListener("input", function (ev) {
    state.query = ev.target.value; state.page = 0; refilter(); body();
  });
  document.getElementById("lb-denied-only").addEventListener("change", function (ev) {
    state.deniedOnly = ev.target.checked; state.page = 0; refilter(); body();
  });

  totals();
  legend();
  refresh();
  document.body.dataset.ready = "1";
  if (window.performance && performance.mark) performance.mark("lb-ready");
})();
"""
