"""Per-tenant policies: which policy a caller's calls are judged under (``--tenants FILE``).

One TOML file names the tenants, in order; a call belongs to the first tenant one
of whose selectors matches it, else to the default::

    header = "X-Team"                  # the header tenants may be chosen by (optional)

    [default]                          # everyone else (optional: else -m / --policy)
    max_repeats = 3

    [[tenant]]
    name = "ci"                        # letters, digits, . _ -; unique
    policy = "policies/ci.toml"        # relative to this file; or max_repeats = N
    credentials = ["1f0c9a7e5d3b2a41"] # the Authorization digest the log shows (auth:...)
    headers = ["ci"]                   # values of the header named above
    session_prefixes = ["ci-"]         # the start of a session name the client chose

Selectors, from the strongest: a credential digest (16 hex digits, the
``auth:<digest>`` of ``keys``: the credential itself is never written here, nor
read back); a header the operator names (only worth trusting behind a proxy that
sets it: a client can send any value); the prefix of the session name a client
chose (``_meta`` or ``Loop-Brake-Session``; a hint, not a boundary).

A tenant's calls are counted under its own policy and limits, in sessions of its
own: its keys are ``tenant:<name>/<key>`` (``keys``' namespaces go on inside), so
two tenants never share a streak, even in a shared store, and the verdict line's
``sessionId`` says whose it was. The default tenant's keys are the gateway's
usual ones. Every mistake in the file is one located error (``file:line: what``),
never a value from it (a credential pasted by mistake is not echoed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ..core.policy import PolicyError, load_policy
from ..core.toml_reader import tomllib
from .keys import SessionKey

__all__ = ["TENANT_PREFIX", "Tenant", "TenantError", "Tenants", "load_tenants", "tenant_of"]

TENANT_PREFIX = "tenant:"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_DIGEST = re.compile(r"[0-9a-f]{16}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")
_TOP_KEYS = {"header", "default", "tenant"}
_TENANT_KEYS = {"name", "policy", "max_repeats", "credentials", "headers", "session_prefixes"}
MAX_TENANT_BYTES = 1 << 20


class TenantError(ValueError):
    """An unusable tenants file: one line per located mistake."""

    def __init__(self, problems: list[str], unopened: bool = False) -> None:
        self.problems = problems
        self.unopened = unopened
        super().__init__("\n".join(problems))


class Tenant:
    """One tenant: its name (None: the default), its limits, and its selectors."""

    __slots__ = ("name", "max_repeats", "policy", "credentials", "headers", "prefixes")

    def __init__(
        self,
        name: str | None,
        max_repeats: int | None = None,
        policy: Any = None,
        credentials: tuple[str, ...] = (),
        headers: tuple[str, ...] = (),
        prefixes: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.max_repeats = max_repeats
        self.policy = policy
        self.credentials = frozenset(credentials)
        self.headers = frozenset(headers)
        self.prefixes = prefixes

    def __repr__(self) -> str:  # names only: the selectors may be sensitive
        return f"Tenant({self.name!r})"


class Tenants:
    """The tenants of one file, in order, and the header they may be chosen by."""

    def __init__(self, tenants: list[Tenant], default: Tenant, header: str | None) -> None:
        self.tenants = tenants
        self.default = default
        self.header = header.lower() if header else None

    def choose(self, key: SessionKey, headers: Mapping[str, str]) -> Tenant:
        """The tenant a call keyed ``key`` belongs to (``headers`` in lower case)."""
        credential = _credential(key.name)
        value = headers.get(self.header) if self.header else None
        name = _client_name(key)
        for tenant in self.tenants:
            if credential is not None and credential in tenant.credentials:
                return tenant
            if value is not None and value in tenant.headers:
                return tenant
            if name is not None and any(name.startswith(p) for p in tenant.prefixes):
                return tenant
        return self.default

    def key(self, key: SessionKey, headers: Mapping[str, str]) -> tuple[SessionKey, Tenant]:
        """``key`` in its tenant's namespace (the default tenant's: unchanged)."""
        tenant = self.choose(key, headers)
        if tenant.name is None:
            return key, tenant
        return SessionKey(f"{TENANT_PREFIX}{tenant.name}/{key.name}", key.source), tenant


def tenant_of(session: str) -> str | None:
    """The tenant a session key belongs to (None: the default)."""
    if not session.startswith(TENANT_PREFIX):
        return None
    return session[len(TENANT_PREFIX) : session.index("/")]


def _credential(name: str) -> str | None:
    if not name.startswith("auth:"):
        return None
    return name[5:21]


def _client_name(key: SessionKey) -> str | None:
    """The session name the client chose, without the gateway's namespaces."""
    if key.source not in ("meta", "header"):
        return None
    return key.name.split("name:", 1)[1]


class _Lines:
    """Where each ``[[tenant]]`` entry and each key starts (1-based lines)."""

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[str, int], int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        where, entries = ("", 0), -1
        for number, line in enumerate(text.splitlines(), 1):
            header = re.match(r"\s*(\[\[?)\s*([A-Za-z0-9_.\"' -]+?)\s*\]", line)
            if header:
                name = header.group(2).strip("\"' ")
                if header.group(1) == "[[" and name == "tenant":
                    entries += 1
                    where = ("tenant", entries)
                else:
                    where = (name, 0)
                self.tables.setdefault(where, number)
                continue
            key = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", line)
            if key:
                self.keys.setdefault((*where, key.group(1)), number)

    def line(self, table: str, index: int, key: str | None = None) -> int | None:
        if key is not None and (table, index, key) in self.keys:
            return self.keys[(table, index, key)]
        return self.tables.get((table, index))


class _Reader:
    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.base = os.path.dirname(os.path.abspath(path))
        self.lines = _Lines(text)
        self.problems: list[str] = []

    def problem(self, table: str, index: int, key: str | None, message: str) -> None:
        line = self.lines.line(table, index, key)
        where = self.path if line is None else f"{self.path}:{line}"
        self.problems.append(f"{where}: {message}")

    def limits(self, table: str, index: int, entry: Mapping[str, Any], label: str) -> Tenant:
        """A tenant's ``policy`` or ``max_repeats`` (one of them, or neither: the default's)."""
        tenant = Tenant(None)
        if "policy" in entry and "max_repeats" in entry:
            self.problem(table, index, "policy", f"{label}: give policy or max_repeats, not both")
        repeats = entry.get("max_repeats")
        if repeats is not None:
            if type(repeats) is not int or repeats < 1:
                self.problem(table, index, "max_repeats", f"{label}: max_repeats must be >= 1")
            else:
                tenant.max_repeats = repeats
        policy = entry.get("policy")
        if policy is not None:
            if not isinstance(policy, str) or not policy:
                self.problem(table, index, "policy", f"{label}: policy must be a file name")
            else:
                try:
                    tenant.policy = load_policy(os.path.join(self.base, policy))
                except PolicyError as exc:
                    self.problem(table, index, "policy", f"{label}: its policy: {exc}")
        return tenant

    def strings(
        self, index: int, entry: Mapping[str, Any], key: str, pattern: re.Pattern[str] | None
    ) -> tuple[str, ...]:
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.problem(
                "tenant", index, key, f"[[tenant]] {index + 1}: {key} must be a list of strings"
            )
            return ()
        if pattern is not None and not all(pattern.fullmatch(v) for v in value):
            self.problem(
                "tenant",
                index,
                key,
                f"[[tenant]] {index + 1}: each of {key} must be the 16 hex digits of a "
                "credential's digest (the auth:... of a verdict line), never the credential",
            )
            return ()
        return tuple(value)


def load_tenants(
    path: str, fallback_repeats: int, fallback_policy: Any, *, client_names: bool = True
) -> Tenants:
    """The tenants of the file at ``path``; the default tenant's limits, unless the file
    has ``[default]``, are ``fallback_repeats`` and ``fallback_policy`` (the command's).
    ``TenantError`` with every located mistake. Without ``client_names`` (the gateway
    believes no session name a client chose: ``--session-from`` without ``meta`` and
    ``header``) a ``session_prefixes`` is a mistake too: it could never match."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TENANT_BYTES + 1)
    except OSError as exc:
        raise TenantError([f"{path}: cannot be read ({exc.strerror or exc})"], True) from None
    if len(data) > MAX_TENANT_BYTES:
        raise TenantError([f"{path}: larger than {MAX_TENANT_BYTES} bytes"])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TenantError([f"{path}: not UTF-8"]) from None
    toml = tomllib()
    if toml is None:
        raise TenantError([f"{path}: reading TOML needs Python 3.11+ or tomli"])
    try:
        document = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+)", str(exc))
        where = f"{path}:{found.group(1)}" if found else path
        raise TenantError([f"{where}: not TOML ({str(exc).split(' (at line')[0]})"]) from None
    reader = _Reader(path, text)
    for key in sorted(set(document) - _TOP_KEYS):
        reader.problem("", 0, key, f"unknown key {key!r} (header, [default], [[tenant]])")
    header = document.get("header")
    if header is not None and (not isinstance(header, str) or not _HEADER_NAME.fullmatch(header)):
        reader.problem("", 0, "header", "header must be an HTTP header name")
        header = None
    default = Tenant(None, fallback_repeats, fallback_policy)
    given = document.get("default")
    if given is not None:
        if not isinstance(given, dict):
            reader.problem("", 0, "default", "[default] must be a table")
        else:
            for key in sorted(set(given) - {"policy", "max_repeats"}):
                reader.problem("default", 0, key, f"[default]: unknown key {key!r}")
            chosen = reader.limits("default", 0, given, "[default]")
            if chosen.policy is not None or chosen.max_repeats is not None:
                default = Tenant(None, chosen.max_repeats or fallback_repeats, chosen.policy)
    tenants = _tenants(document.get("tenant", []), reader, header, default, client_names)
    if reader.problems:
        raise TenantError(reader.problems)
    return Tenants(tenants, default, header)


def _tenants(
    entries: Any, reader: _Reader, header: str | None, default: Tenant, client_names: bool
) -> list[Tenant]:
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        reader.problem("", 0, "tenant", "tenant must be [[tenant]] tables")
        return []
    out: list[Tenant] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        label = f"[[tenant]] {index + 1}"
        for key in sorted(set(entry) - _TENANT_KEYS):
            reader.problem("tenant", index, key, f"{label}: unknown key {key!r}")
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            reader.problem(
                "tenant", index, "name", f"{label}: name must be 1-64 of A-Z a-z 0-9 . _ -"
            )
            continue
        if name in seen:
            reader.problem("tenant", index, "name", f"{label}: the name {name!r} is taken")
        seen.add(name)
        tenant = reader.limits("tenant", index, entry, f"{label} ({name})")
        if tenant.policy is None and tenant.max_repeats is None:
            tenant.max_repeats, tenant.policy = default.max_repeats, default.policy
        credentials = reader.strings(index, entry, "credentials", _DIGEST)
        headers = reader.strings(index, entry, "headers", None)
        prefixes = reader.strings(index, entry, "session_prefixes", None)
        if prefixes and not client_names:
            reader.problem(
                "tenant",
                index,
                "session_prefixes",
                f"{label} ({name}): session_prefixes never match: --session-from "
                "believes no session name a client chooses (neither meta nor header)",
            )
        if headers and header is None:
            reader.problem(
                "tenant", index, "headers", f"{label}: headers needs a top-level header = NAME"
            )
        if not (credentials or headers or prefixes):
            reader.problem(
                "tenant",
                index,
                None,
                f"{label} ({name}): no credentials, headers or session_prefixes",
            )
        out.append(Tenant(name, tenant.max_repeats, tenant.policy, credentials, headers, prefixes))
    return out
