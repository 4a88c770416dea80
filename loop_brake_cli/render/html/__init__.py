"""``replay --html``: a replay as one self-contained HTML page (totals, a sortable table of
sessions, and a timeline of each session's calls).

- ``data``: the finished report as the page's compact JSON (never an argument);
- ``page``: the document, the JSON embedded inertly, a Content-Security-Policy that
  allows no request and only the page's own script;
- ``style`` and ``script``: the inline CSS and JavaScript;
- ``write``: the file written atomically, or standard output.

A front-end: it reads ``analysis`` and imports neither click nor rich.
"""

from __future__ import annotations

from .data import page_data
from .page import embed_json, render_page
from .write import HtmlWriteError, write_html

__all__ = ["HtmlWriteError", "embed_json", "page_data", "render_page", "write_html"]
