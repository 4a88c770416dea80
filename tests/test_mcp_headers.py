"""mcp_shared.headers: ``--header 'NAME: VALUE'``, ``env:NAME``, and the address as printed.

Written from docs/mcp-proxy.md ("Remote servers"): a header the transport sets is
refused whatever its case, ``env:NAME`` replaces the value's last word only, an
unset or empty variable is an error naming it (never the value), and the server's
address is printed without user info or query.
"""

from __future__ import annotations

import pytest

from loop_brake_cli.mcp_shared.headers import HeaderError, parse_headers, safe_url

SECRET = "s3cr3t-token-value"


@pytest.mark.parametrize("name", ["Content-Type", "content-type", "MCP-Session-Id", "Host"])
def test_a_header_the_transport_sets_is_refused_in_any_case(name: str) -> None:
    with pytest.raises(HeaderError, match="set by the MCP transport itself"):
        parse_headers([f"{name}: {SECRET}"], {})


def test_env_replaces_the_last_word_only() -> None:
    env = {"TOKEN": SECRET}
    assert parse_headers(["Authorization: Bearer env:TOKEN"], env) == [
        ("Authorization", f"Bearer {SECRET}")
    ]
    assert parse_headers(["X-Api-Key: env:TOKEN"], env) == [("X-Api-Key", SECRET)]


@pytest.mark.parametrize("env", [{}, {"TOKEN": ""}])
def test_an_unset_or_empty_variable_is_an_error_naming_it(env: dict[str, str]) -> None:
    with pytest.raises(HeaderError) as raised:
        parse_headers(["Authorization: Bearer env:TOKEN"], env)
    assert "TOKEN is not set or is empty" in str(raised.value)


def test_errors_never_hold_the_value() -> None:
    for spec in (f"Content-Type: {SECRET}", f"X-Key: {SECRET}\x7f", f"bad name: {SECRET}"):
        with pytest.raises(HeaderError) as raised:
            parse_headers([spec], {})
        assert SECRET not in str(raised.value), spec


def test_safe_url_drops_user_info_query_and_fragment() -> None:
    url = f"https://user:{SECRET}@example.test:8443/mcp?key={SECRET}#{SECRET}"
    assert safe_url(url) == "https://example.test:8443/mcp"
    assert safe_url(f"http://{SECRET}@[::1]/mcp") == "http://[::1]/mcp"
    assert safe_url("http://[::1") == "(an invalid URL)"
