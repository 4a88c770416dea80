"""The gateway's session key: its sources in order, scoping by credential, no shared default."""

from __future__ import annotations

import pytest

from loop_brake_cli.mcp_gateway.keys import SessionKey, SessionNameError, digest, session_key

SECRET = "Bearer CANARY-0b7e-token"


def call(meta: dict[str, object] | None = None) -> dict[str, object]:
    params: dict[str, object] = {"name": "echo", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def test_each_source_wins_over_the_ones_after_it() -> None:
    every = {"loop-brake-session": "h", "mcp-session-id": "sid", "authorization": SECRET}
    scope = f"@auth:{digest(SECRET)}"
    assert session_key(call({"loop-brake/session": "m"}), every, "p:1") == SessionKey(
        "m" + scope, "meta"
    )
    assert session_key(call(), every, "p:1") == SessionKey("h" + scope, "header")
    del every["loop-brake-session"]
    assert session_key(call(), every, "p:1") == SessionKey(
        f"mcp-session:{digest('sid')}", "mcp-session-id"
    )
    del every["mcp-session-id"]
    assert session_key(call(), every, "p:1") == SessionKey(
        f"auth:{digest(SECRET)}", "authorization"
    )


def test_names_without_a_credential_are_the_clients_own() -> None:
    assert session_key(call({"loop-brake/session": "a"}), {}, None) == SessionKey("a", "meta")
    assert session_key(call(), {"loop-brake-session": "b"}, None) == SessionKey("b", "header")


def test_no_key_is_refused_or_per_connection_never_shared() -> None:
    assert session_key(call(), {}, "127.0.0.1:5000") is None
    assert session_key(call(), {}, "127.0.0.1:5000", "connection") == SessionKey(
        "conn:127.0.0.1:5000", "connection"
    )
    assert session_key(call(), {}, None, "connection") is None


@pytest.mark.parametrize("bad", ["", "  ", 7, None, "x" * 257])
def test_an_unusable_name_is_an_error_that_does_not_quote_it(bad: object) -> None:
    with pytest.raises(SessionNameError) as caught:
        session_key(call({"loop-brake/session": bad}), {}, None)
    assert "x" * 20 not in str(caught.value)


def test_digests_hide_the_secret_and_are_stable() -> None:
    value = digest(SECRET)
    assert len(value) == 16 and "CANARY" not in value
    assert digest(SECRET) == value != digest(SECRET + "x")
