"""Whose streak a call counts in: the gateway's session key and where it came from.

Many agents share one gateway, and the 2026-07-28 MCP protocol is stateless
(no ``Mcp-Session-Id``), so the key is looked for in this order, the first
found wins (``SOURCES``):

1. ``meta``: ``params._meta["loop-brake/session"]`` of the ``tools/call``;
2. ``header``: a ``Loop-Brake-Session`` request header;
3. ``mcp-session-id``: the ``Mcp-Session-Id`` header of a stateful connection
   (the key is a digest of it: a session id is a bearer secret too);
4. ``authorization``: a digest of the ``Authorization`` header (never the header);
5. none of them: the ``anonymous`` rule decides. ``refuse`` (the default)
   answers the call with an error that says how to name a session;
   ``connection`` keys the call by the client's TCP connection (``conn:HOST:PORT``).
   There is no rule that puts every anonymous client in one streak: that would
   let one agent's loop deny another's calls, and a denial would tell a client
   that someone else had just made the same call.

Every source has its own namespace, so no name a client chooses can be a key the
gateway derives, nor another credential's (issue 36.4): a client's name ``a``
is ``name:a``; a digest of ``Mcp-Session-Id`` is ``mcp-session:<digest>``; of
``Authorization``, ``auth:<digest>``; a connection, ``conn:HOST:PORT``. When
the request carries ``Authorization``, whatever else names the session is
scoped by that credential: ``auth:<digest>/name:a``,
``auth:<digest>/mcp-session:<digest>``. So a client without ``Authorization``
never reaches an authenticated client's streak, two tokens never share one
whatever names their agents pick, and no client can probe, inflate or reset
another's streak by naming its key. Without ``Authorization`` (the loopback
default: one user's agents) names are the clients' own: two clients that give
the same name share a streak, as they asked.

An operator may believe fewer sources (``--session-from``, ``believed_sources``):
a source not believed is skipped as if absent, its value not even checked, so it
never picks the streak (the order of the rest stays the one above). With
``--session-from authorization`` a client that names a new session for every
call stays in its credential's streak. The credential still scopes whatever keys
the call (a name, a session id, a connection) even when it is not believed as a
source: scoping only ever keeps two credentials apart, never joins them.

Digests are the first 16 hex digits of a SHA-256 under a fixed label: they stay
equal across gateway processes (a shared store needs that) and across restarts.
A low-entropy credential (a password in ``Basic`` auth) could be guessed from its
digest by someone who reads the log; bearer tokens cannot.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from typing import Any

from ..core.canonical import canonical_json

__all__ = [
    "ANONYMOUS_RULES",
    "MAX_NAME",
    "META_KEY",
    "NAMING_SOURCES",
    "SESSION_HEADER",
    "SOURCES",
    "SessionNameError",
    "SessionKey",
    "believed_sources",
    "call_scope",
    "digest",
    "scoped_id",
    "session_key",
]

META_KEY = "loop-brake/session"
SESSION_HEADER = "loop-brake-session"
SOURCES = ("meta", "header", "mcp-session-id", "authorization", "connection")
NAMING_SOURCES = SOURCES[:4]
"""The sources a client's request names its session by (``--session-from``'s choices
and default); ``connection`` is the ``--anonymous`` rule's, never named there."""
ANONYMOUS_RULES = ("refuse", "connection")
MAX_NAME = 256  # characters of a session name a client may give


class SessionNameError(ValueError):
    """A session name that cannot be used (not a string, empty, too long)."""


class SessionKey:
    """A session's name (what the verdict line's ``sessionId`` says) and its source."""

    __slots__ = ("name", "source")

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source

    def __repr__(self) -> str:
        return f"SessionKey({self.name!r}, {self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SessionKey) and (self.name, self.source) == (
            other.name,
            other.source,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.source))


def digest(value: str) -> str:
    """16 hex digits standing for a secret (a credential, a session id), never the secret."""
    return hashlib.sha256(b"loop-brake/gateway\0" + value.encode("utf-8", "replace")).hexdigest()[
        :16
    ]


def _named(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SessionNameError(f"{where} must be a non-empty string")
    if len(value) > MAX_NAME:
        raise SessionNameError(f"{where} is longer than {MAX_NAME} characters")
    return value


def believed_sources(text: str) -> tuple[str, ...]:
    """``--session-from``'s value (``authorization`` or ``meta,authorization``: names
    from ``NAMING_SOURCES``, comma-separated, any order) as those sources in their order
    of precedence. Raises ``ValueError`` (one line) for an empty list or an unknown name."""
    given = [part.strip() for part in text.split(",")]
    if not any(given):
        raise ValueError(f"name at least one source ({', '.join(NAMING_SOURCES)})")
    for part in given:
        if part == "connection":
            raise ValueError(
                "connection is not a source a client names: --anonymous connection "
                "counts calls that name none per TCP connection"
            )
        if part not in NAMING_SOURCES:
            what = "an empty source" if not part else f"unknown source {part[:40]!r}"
            raise ValueError(f"{what} (choose from {', '.join(NAMING_SOURCES)})")
    return tuple(source for source in NAMING_SOURCES if source in given)


def session_key(
    message: Mapping[str, Any],
    headers: Mapping[str, str],
    peer: str | None,
    anonymous: str = "refuse",
    believe: Collection[str] = NAMING_SOURCES,
) -> SessionKey | None:
    """The key of one ``tools/call`` (``headers`` keyed in lower case), or None when
    no source in ``believe`` names a session and ``anonymous`` is ``refuse``. Raises
    ``SessionNameError`` for a name that is given, believed, but unusable."""
    auth = headers.get("authorization")
    scope = f"auth:{digest(auth)}/" if auth else ""
    if "meta" in believe:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and META_KEY in meta:
            name = _named(meta[META_KEY], f'params._meta["{META_KEY}"]')
            return SessionKey(f"{scope}name:{name}", "meta")
    if "header" in believe and SESSION_HEADER in headers:
        name = _named(headers[SESSION_HEADER], "Loop-Brake-Session")
        return SessionKey(f"{scope}name:{name}", "header")
    mcp_session = headers.get("mcp-session-id")
    if mcp_session and "mcp-session-id" in believe:
        return SessionKey(f"{scope}mcp-session:{digest(mcp_session)}", "mcp-session-id")
    if auth and "authorization" in believe:
        return SessionKey(f"auth:{digest(auth)}", "authorization")
    if anonymous == "connection" and peer is not None:
        # ``scope`` is empty unless Authorization is there but not believed
        return SessionKey(f"{scope}conn:{peer}", "connection")
    return None


def call_scope(headers: Mapping[str, str], peer: str | None) -> str | None:
    """Where a JSON-RPC id is unique: its MCP session (a digest of ``Mcp-Session-Id``),
    else the client's TCP connection. Every client numbers its requests from 1, so
    within one streak (many clients may share a session name, several gateways a
    store) the id alone would make one client's call look like another's retry;
    scoped (``127.0.0.1:53422/5``), a request sent again in its MCP session while
    open, even over a new connection, is still the same request (``scoped_id``)."""
    mcp_session = headers.get("mcp-session-id")
    if mcp_session:
        return f"mcp-session:{digest(mcp_session)[:8]}"
    return peer


def scoped_id(scope: str | None, call_id: Any) -> Any:
    """A call id made unique where it is: ``<scope>/<id as JSON>`` (``peer/5``,
    ``peer/"5"``: the ids 5 and "5" stay apart), or the id itself without a scope."""
    if scope is None:
        return call_id
    return f"{scope}/{canonical_json(call_id)}"
