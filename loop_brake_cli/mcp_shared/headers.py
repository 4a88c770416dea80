"""HTTP headers for a remote MCP server: ``--header 'NAME: VALUE'``, and what may be said of them.

A header value is usually a credential (``Authorization: Bearer ...``), so it is
never printed, logged or put in an error: every message here names the header,
never its value. So that a token need not be written on a command line (where
``ps`` shows it to every user) or in a client's configuration file, a value
may name an environment variable: when the value's last word is ``env:NAME``
that word is replaced by the variable's value::

    --header 'Authorization: Bearer env:GITHUB_TOKEN'   # "Bearer " + $GITHUB_TOKEN
    --header 'X-Api-Key: env:API_KEY'                   # $API_KEY

An unset or empty variable is an error naming the variable.

Also here: ``safe_url``, the server's address as it may be printed (no user
info, no query: either may carry a token).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

__all__ = ["HeaderError", "RESERVED", "parse_headers", "safe_url"]

_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP field name (RFC 9110 token)
_ENV = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")

RESERVED = frozenset(
    {
        "accept",
        "content-type",
        "content-length",
        "host",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
        "transfer-encoding",
        "connection",
    }
)
"""Headers the transport sets itself: a ``--header`` may not replace them."""


class HeaderError(ValueError):
    """A ``--header`` that cannot be used; the message never holds its value."""


def _one(spec: str, environ: Mapping[str, str]) -> tuple[str, str]:
    name, colon, value = spec.partition(":")
    name = name.strip()
    if not colon or not _NAME.fullmatch(name):
        shown = name if _NAME.fullmatch(name) else "?"
        raise HeaderError(
            f"--header must be 'NAME: VALUE' (a header name, a colon, the value); got one "
            f"starting with {shown!r} (value not shown)"
        )
    if name.lower() in RESERVED:
        raise HeaderError(f"--header {name}: set by the MCP transport itself, cannot be given")
    value = value.strip()
    head, _, last = value.rpartition(" ")
    match = _ENV.fullmatch(last)
    if match is not None:
        variable = match.group(1)
        found = environ.get(variable, "")
        if not found:
            raise HeaderError(
                f"--header {name}: environment variable {variable} is not set or is empty"
            )
        value = f"{head} {found}" if head else found
    if not value:
        raise HeaderError(f"--header {name}: empty value")
    if _BAD_VALUE.search(value):
        raise HeaderError(f"--header {name}: the value holds a control character (not shown)")
    return name, value


def parse_headers(
    specs: Iterable[str], environ: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """``--header`` options as (name, value) pairs, ``env:NAME`` read from ``environ``
    (default ``os.environ``). Raises ``HeaderError``, whose text names no value."""
    env = os.environ if environ is None else environ
    return [_one(spec, env) for spec in specs]


def safe_url(url: str) -> str:
    """``scheme://host[:port]/path`` of ``url``: no user info, query or fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(an invalid URL)"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{netloc}{parts.path}"
