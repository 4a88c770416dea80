"""The gateway's session key: its sources in order, one namespace per source, scoping by
credential, no shared default."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loop_brake_cli.mcp_gateway.keys import (
    MAX_NAME,
    NAMING_SOURCES,
    SessionKey,
    SessionNameError,
    believed_sources,
    digest,
    scoped_id,
    session_key,
)

SECRET = "Bearer CANARY-0b7e-token"
OTHER = "Bearer CANARY-0b7e-other"


def call(meta: dict[str, object] | None = None) -> dict[str, object]:
    params: dict[str, object] = {"name": "echo", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def named(name: object) -> dict[str, object]:
    return call({"loop-brake/session": name})


def test_each_source_wins_over_the_ones_after_it() -> None:
    every = {"loop-brake-session": "h", "mcp-session-id": "sid", "authorization": SECRET}
    scope = f"auth:{digest(SECRET)}/"
    assert session_key(named("m"), every, "p:1") == SessionKey(scope + "name:m", "meta")
    assert session_key(call(), every, "p:1") == SessionKey(scope + "name:h", "header")
    del every["loop-brake-session"]
    assert session_key(call(), every, "p:1") == SessionKey(
        f"{scope}mcp-session:{digest('sid')}", "mcp-session-id"
    )
    del every["mcp-session-id"]
    assert session_key(call(), every, "p:1") == SessionKey(
        f"auth:{digest(SECRET)}", "authorization"
    )
    assert session_key(call(), {"mcp-session-id": "sid"}, "p:1") == SessionKey(
        f"mcp-session:{digest('sid')}", "mcp-session-id"
    )


def test_names_without_a_credential_are_the_clients_own() -> None:
    assert session_key(named("a"), {}, None) == SessionKey("name:a", "meta")
    assert session_key(call(), {"loop-brake-session": "b"}, None) == SessionKey("name:b", "header")


def derived_keys(peer: str) -> list[str]:
    """Every key the gateway derives for other clients, as a prober would name them."""
    return [
        f"conn:{peer}",
        f"auth:{digest(SECRET)}",
        f"mcp-session:{digest('sid')}",
        f"auth:{digest(SECRET)}/name:a",
        f"auth:{digest(SECRET)}/mcp-session:{digest('sid')}",
        f"a@auth:{digest(SECRET)}",  # the form of c40a10b
        "a",
    ]


@pytest.mark.parametrize("credential", [None, OTHER])
@pytest.mark.parametrize("source", ["meta", "header"])
def test_no_name_a_client_chooses_is_a_derived_key_or_another_credentials(
    credential: str | None, source: str
) -> None:
    """Issue 36.4: at c40a10b a client naming ``conn:...``, ``auth:<digest>`` or
    ``a@auth:<digest>`` joined that streak (resetting it, inflating it, or learning
    whether a guessed call had just been made); a client without Authorization joined
    an authenticated one's."""
    peer = "127.0.0.1:5000"
    victims = {
        session_key(call(), {}, peer, "connection").name,  # type: ignore[union-attr]
        session_key(call(), {"authorization": SECRET}, peer).name,  # type: ignore[union-attr]
        session_key(call(), {"mcp-session-id": "sid"}, peer).name,  # type: ignore[union-attr]
        session_key(named("a"), {"authorization": SECRET}, peer).name,  # type: ignore[union-attr]
        session_key(call(), {"mcp-session-id": "sid", "authorization": SECRET}, peer).name,  # type: ignore[union-attr]
    }
    headers = {} if credential is None else {"authorization": credential}
    for probe in derived_keys(peer):
        if source == "meta":
            key = session_key(named(probe), headers, "127.0.0.1:6000")
        else:
            key = session_key(call(), {**headers, "loop-brake-session": probe}, "127.0.0.1:6000")
        assert key is not None and key.name not in victims, probe


def test_two_credentials_never_share_a_name() -> None:
    first = session_key(named("a"), {"authorization": SECRET}, None)
    second = session_key(named("a"), {"authorization": OTHER}, None)
    plain = session_key(named("a"), {}, None)
    assert len({first.name, second.name, plain.name}) == 3  # type: ignore[union-attr]


def test_no_key_is_refused_or_per_connection_never_shared() -> None:
    assert session_key(call(), {}, "127.0.0.1:5000") is None
    assert session_key(call(), {}, "127.0.0.1:5000", "connection") == SessionKey(
        "conn:127.0.0.1:5000", "connection"
    )
    assert session_key(call(), {}, None, "connection") is None


@pytest.mark.parametrize("bad", ["", "  ", 7, None, "x" * (MAX_NAME + 1)])
def test_an_unusable_name_is_an_error_that_does_not_quote_it(bad: object) -> None:
    with pytest.raises(SessionNameError) as caught:
        session_key(named(bad), {}, None)
    assert "x" * 20 not in str(caught.value)


def test_a_name_of_exactly_the_limit_is_taken() -> None:
    """Issue 42: 256 characters is a name; 257 is refused (above)."""
    assert MAX_NAME == 256
    name = "é" * MAX_NAME  # characters, not bytes
    assert session_key(named(name), {}, None) == SessionKey("name:" + name, "meta")
    key = session_key(call(), {"loop-brake-session": "y" * MAX_NAME}, None)
    assert key == SessionKey("name:" + "y" * MAX_NAME, "header")


def test_call_ids_are_scoped_and_1_is_not_string_1() -> None:
    """Issue 36.3: at c40a10b the gateway's scoped ids were ``scope/1`` for both."""
    assert scoped_id("127.0.0.1:5000", 1) == "127.0.0.1:5000/1"
    assert scoped_id("127.0.0.1:5000", "1") == '127.0.0.1:5000/"1"'
    assert scoped_id(None, 1) == 1


def test_digests_hide_the_secret_and_are_stable() -> None:
    value = digest(SECRET)
    assert len(value) == 16 and "CANARY" not in value
    assert digest(SECRET) == value != digest(SECRET + "x")


# --session-from: the sources the gateway believes


def request(
    present: frozenset[str], credential: str = SECRET
) -> tuple[dict[str, object], dict[str, str]]:
    """A call carrying the sources in ``present`` (names m, h; session id sid)."""
    headers = {}
    if "header" in present:
        headers["loop-brake-session"] = "h"
    if "mcp-session-id" in present:
        headers["mcp-session-id"] = "sid"
    if "authorization" in present:
        headers["authorization"] = credential
    return (named("m") if "meta" in present else call()), headers


SUBSETS = st.sets(st.sampled_from(NAMING_SOURCES))


@settings(max_examples=300, deadline=None)
@given(
    believe=SUBSETS.filter(bool),
    present=SUBSETS,
    anonymous=st.sampled_from(["refuse", "connection"]),
)
def test_the_first_believed_source_present_keys_the_call_and_no_other(
    believe: set[str], present: set[str], anonymous: str
) -> None:
    """Written from the docs: a source not believed is as if absent, the order of the
    believed ones is the fixed one, the credential scopes whatever keys the call, and
    --anonymous decides when no believed source is there."""
    message, headers = request(frozenset(present))
    believed = believed_sources(",".join(sorted(believe)))
    key = session_key(message, headers, "127.0.0.1:5000", anonymous, believed)
    scope = f"auth:{digest(SECRET)}/" if "authorization" in present else ""
    expected = {
        "meta": f"{scope}name:m",
        "header": f"{scope}name:h",
        "mcp-session-id": f"{scope}mcp-session:{digest('sid')}",
        "authorization": f"auth:{digest(SECRET)}",
    }
    first = next((s for s in NAMING_SOURCES if s in believe and s in present), None)
    if first is not None:
        assert key == SessionKey(expected[first], first)
    elif anonymous == "connection":
        assert key == SessionKey(f"{scope}conn:127.0.0.1:5000", "connection")
    else:
        assert key is None
    # two credentials never share a key, whatever is believed
    if key is not None and "authorization" in present:
        other = session_key(
            *request(frozenset(present), OTHER), "127.0.0.1:5000", anonymous, believed
        )
        assert other is not None and other.name != key.name


def test_all_four_believed_is_the_default() -> None:
    every = {"loop-brake-session": "h", "mcp-session-id": "sid", "authorization": SECRET}
    assert believed_sources("meta,header,mcp-session-id,authorization") == NAMING_SOURCES
    for message in (named("m"), call()):
        for headers in (every, {"authorization": SECRET}, {}):
            assert session_key(message, headers, "p:1", "connection") == session_key(
                message, headers, "p:1", "connection", NAMING_SOURCES
            )


def test_a_new_name_per_call_stays_in_the_credentials_streak() -> None:
    """The hole --session-from authorization closes: one credential, a fresh _meta
    name (or header) for every call, one key."""
    only_auth = believed_sources("authorization")
    keys = {
        session_key(
            named(f"run-{n}"),
            {"authorization": SECRET, "loop-brake-session": f"h{n}"},
            None,
            "refuse",
            only_auth,
        )
        for n in range(5)
    }
    assert keys == {SessionKey(f"auth:{digest(SECRET)}", "authorization")}
    by_session = believed_sources("mcp-session-id")
    headers = {"mcp-session-id": "sid", "loop-brake-session": "h"}
    assert session_key(named("x"), headers, None, "refuse", by_session) == SessionKey(
        f"mcp-session:{digest('sid')}", "mcp-session-id"
    )


@pytest.mark.parametrize("bad", ["", "  ", 7, None, "x" * (MAX_NAME + 1)])
def test_an_unusable_name_in_an_ignored_source_is_ignored_not_an_error(bad: object) -> None:
    only_auth = believed_sources("authorization")
    headers = {"authorization": SECRET}
    assert session_key(named(bad), headers, None, "refuse", only_auth) == SessionKey(
        f"auth:{digest(SECRET)}", "authorization"
    )
    if isinstance(bad, str):
        headers["loop-brake-session"] = bad
        assert session_key(call(), headers, None, "refuse", only_auth) == SessionKey(
            f"auth:{digest(SECRET)}", "authorization"
        )
    with pytest.raises(SessionNameError):  # believed: the error it always was
        session_key(named(bad), headers, None, "refuse", believed_sources("meta"))


def test_an_ignored_source_alone_is_anonymous() -> None:
    meta_only = believed_sources("meta")
    assert session_key(call(), {"authorization": SECRET}, "p:1", "refuse", meta_only) is None
    assert session_key(call(), {"loop-brake-session": "h"}, "p:1", "refuse", meta_only) is None
    assert session_key(call(), {}, "p:1", "connection", meta_only) == SessionKey(
        "conn:p:1", "connection"
    )


@pytest.mark.parametrize(
    ("text", "sources"),
    [
        ("authorization", ("authorization",)),
        ("authorization,meta", ("meta", "authorization")),  # the fixed order, not the given
        (" header , mcp-session-id ", ("header", "mcp-session-id")),
        ("meta,meta", ("meta",)),
        ("authorization,mcp-session-id,header,meta", NAMING_SOURCES),
    ],
)
def test_session_from_is_read_in_the_fixed_order(text: str, sources: tuple[str, ...]) -> None:
    assert believed_sources(text) == sources


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "name at least one source"),
        (" , ", "name at least one source"),
        ("meta,", "an empty source"),
        ("auth", "unknown source 'auth'"),
        ("META", "unknown source 'META'"),
        ("connection", "--anonymous connection"),
        ("y" * 100, "unknown source '" + "y" * 40 + "'"),
    ],
)
def test_session_from_mistakes_are_one_line(text: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        believed_sources(text)
    message = str(caught.value)
    assert says in message and "\n" not in message and "y" * 41 not in message
