"""A real headless Chromium for the HTML report's tests and bench (Debian's ``chromium``,
driven by the ``playwright`` package; never ``playwright install``, no network).

Every visit records each request the browser makes, each console message and
each uncaught page error, so a test can require that a page asked for nothing
but itself and logged no error.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("LOOP_BRAKE_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL = (
    "the HTML report's browser tests need Debian's chromium at {path} and the playwright "
    "package: `sudo apt-get install chromium` and `pip install -e '.[test]'` "
    "(.ci/run installs chromium when it is missing; never `playwright install`)"
)


def missing() -> str | None:
    """Why no browser can be launched here (None: it can)."""
    problems = []
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        problems.append(f"{CHROMIUM} is missing")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("the playwright package is not installed")
    if not problems:
        return None
    return "; ".join(problems) + ": " + INSTALL.format(path=CHROMIUM)


def required() -> bool:
    """In CI (``CI`` set, as .ci/run does) a missing browser fails the tests, never skips them."""
    return bool(os.environ.get("CI"))


@dataclass
class Visit:
    """One page load: the page, and what it asked for and logged."""

    page: Any
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [text for kind, text in self.console if kind == "error"] + self.page_errors

    def count(self, selector: str) -> int:
        return int(self.page.eval_on_selector_all(selector, "nodes => nodes.length"))

    def data(self, selector: str, key: str) -> list[str]:
        return list(
            self.page.eval_on_selector_all(selector, f"nodes => nodes.map(n => n.dataset.{key})")
        )


@contextmanager
def chromium(width: int = 1200, height: int = 800) -> Iterator[Any]:
    """A headless browser context with a fresh profile, closed (and the profile removed)
    on exit."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="loop-brake-chromium-")
    try:
        with sync_playwright() as driver:
            context = driver.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                headless=True,
                args=ARGS,
                viewport={"width": width, "height": height},
                java_script_enabled=True,
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def visit(context: Any, path: Path, timeout_ms: float = 30_000) -> Visit:
    """Open ``path`` from disk and wait until the report's script says it has drawn."""
    page = context.new_page()
    seen = Visit(page)
    page.on("request", lambda request: seen.requests.append(request.url))
    page.on("console", lambda message: seen.console.append((message.type, message.text)))
    page.on("pageerror", lambda error: seen.page_errors.append(str(error)))
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=timeout_ms)
    return seen
