"""The gateway's decision for one POSTed body, without HTTP: what is answered, what is logged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loop_brake_cli.mcp_gateway.decide import Forward, GatewayBrake, Wait

CANARY = "CANARY-31d9-argument"


def brake(**options: Any) -> tuple[GatewayBrake, list[dict[str, Any]], list[str]]:
    log: list[dict[str, Any]] = []
    notes: list[str] = []
    return GatewayBrake(3, log.append, notes.append, **options), log, notes


def body(call_id: str, session: str = "s", **params: Any) -> bytes:
    p = {"name": "echo", "arguments": {"text": CANARY}, "_meta": {"loop-brake/session": session}}
    p.update(params)
    return ('{"jsonrpc":"2.0","id":' + call_id + ',"method":"tools/call","params":').encode() + (
        json.dumps(p).encode() + b"}"
    )


def forwarded(decision: Any) -> Forward:
    assert isinstance(decision, Forward), decision
    return decision


def answered(gateway: GatewayBrake, decision: Any, asked: str | None | bool = False) -> None:
    """The upstream's answer to a forwarded call passed (``asked``: its requestState,
    or True without one, when it asked for input)."""
    if asked is not False:
        gateway.asked(forwarded(decision), None if asked is True else asked)
    gateway.answered(forwarded(decision))


def test_the_third_call_is_answered_with_the_id_as_written() -> None:
    gateway, log, notes = brake()
    forwarded(gateway.decide(body("1"), {}, None))
    forwarded(gateway.decide(body("2"), {}, None))
    status, answer = gateway.decide(body("12345678901234567891"), {}, None)
    assert status == 200
    assert answer.startswith(b'{"jsonrpc":"2.0","id":12345678901234567891,"result":')
    assert json.loads(answer)["result"]["isError"] is True
    assert [line["verdict"] for line in log] == ["pass", "pass", "deny"]
    assert all(line["sessionSource"] == "meta" for line in log)
    assert {line["sessionId"] for line in log} == {"name:s"}
    assert CANARY not in json.dumps(log) + "".join(notes) + answer.decode()


def test_batches_and_other_messages() -> None:
    gateway, log, _notes = brake()
    status, answer = gateway.decide(b"[" + body("9") + b"]", {}, None)
    assert status == 400 and b"batch" in answer
    assert not forwarded(
        gateway.decide(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', {}, None)
    ).watched
    assert not forwarded(gateway.decide(b"[]", {}, None)).watched
    status, answer = gateway.decide(b"{not json", {}, None)
    assert status == 400 and json.loads(answer)["error"]["code"] == -32700
    assert log[-1]["verdict"] == "error"


NOT_STRICT = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":NaN}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":Infinity}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":-Infinity}}}',
    b'{"jsonrpc":"2.0","id":NaN,"method":"tools/call","params":{"name":"echo"}}',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}'.encode("utf-16"),
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}} {"x":1}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"t":"\xff"}}}',
]


@pytest.mark.parametrize("data", NOT_STRICT)
def test_what_is_not_strict_json_is_refused_never_forwarded(data: bytes) -> None:
    """Issue 36.2: the SDK's HTTP server reads these (json.loads: NaN, Infinity, a BOM,
    UTF-16) and runs the call; at c40a10b the gateway forwarded them unjudged."""
    gateway, log, _ = brake()
    for _ in range(6):
        status, answer = gateway.decide(data, {"loop-brake-session": "s"}, None)
        assert status == 400
        error = json.loads(answer)["error"]
        assert error["code"] == -32700 and "not strict JSON" in error["message"]
        assert CANARY not in answer.decode()
    assert [line["verdict"] for line in log] == ["error"] * 6


@pytest.mark.parametrize(
    "params",
    [
        '"params":["echo",{}]',
        '"params":{"name":7}',
        '"params":{"arguments":{}}',
        '"params":null',
    ],
)
def test_a_call_the_decoder_cannot_read_is_refused(params: str) -> None:
    gateway, log, _ = brake()
    data = ('{"jsonrpc":"2.0","id":3,"method":"tools/call",' + params + "}").encode()
    status, answer = gateway.decide(data, {"loop-brake-session": "s"}, None)
    assert status == 400 and json.loads(answer)["error"]["code"] == -32600
    assert json.loads(answer)["id"] == 3 and log[-1]["verdict"] == "error"


def test_an_id_reused_after_its_answer_is_a_new_call() -> None:
    """Issue 36.3: at c40a10b a client reusing id 1 after each answer ran 6 of 6."""
    gateway, log, _ = brake()
    passed = 0
    for _ in range(6):
        decision = gateway.decide(body("1"), {}, "127.0.0.1:5000")
        if isinstance(decision, Forward):
            passed += 1
            answered(gateway, decision)
    assert passed == 2
    assert [line["count"] for line in log] == [1, 2, 3, 4, 5, 6]


def test_a_request_sent_again_while_open_is_409_and_never_forwarded() -> None:
    gateway, log, _ = brake()
    first = forwarded(gateway.decide(body("1"), {}, "127.0.0.1:5000"))
    again = gateway.decide(body("1"), {}, "127.0.0.1:5000")
    assert isinstance(again, Wait) and not again.ended.is_set()
    status, answer = gateway.decide(body("1"), {}, "127.0.0.1:5000", wait=False)
    assert status == 409 and json.loads(answer)["id"] == 1
    assert log[-1]["duplicate"] is True and log[-1]["count"] == 1
    gateway.answered(first)
    assert again.ended.is_set()
    assert isinstance(gateway.decide(body("1"), {}, "127.0.0.1:5000"), Forward)
    assert log[-1]["count"] == 2


def test_shadow_forwards_a_request_sent_again_while_open() -> None:
    """``--shadow`` never refuses: the same id sent again while open is forwarded (and
    logged as the duplicate it is), where without it the answer is 409."""
    gateway, log, _ = brake(shadow=True)
    forwarded(gateway.decide(body("1"), {}, "127.0.0.1:5000"))
    forwarded(gateway.decide(body("1"), {}, "127.0.0.1:5000", wait=False))
    assert log[-1]["duplicate"] is True and log[-1]["count"] == 1


def test_ids_1_and_string_1_are_two_requests() -> None:
    gateway, log, _ = brake()
    forwarded(gateway.decide(body("1"), {}, "127.0.0.1:5000"))
    forwarded(gateway.decide(body('"1"'), {}, "127.0.0.1:5000"))
    assert [line["count"] for line in log] == [1, 2]
    assert [line["callId"] for line in log] == ["127.0.0.1:5000/1", '127.0.0.1:5000/"1"']


def test_a_retry_continues_only_a_call_the_upstream_asked_input_for() -> None:
    """Issue 36.1: at c40a10b any request carrying inputResponses or requestState
    was forwarded uncounted; six of them ran six times."""
    gateway, log, _ = brake()
    for number in range(6):  # never asked for: each is a call
        decision = gateway.decide(body(str(number), inputResponses={}, requestState="r"), {}, "p:1")
        if isinstance(decision, Forward):
            answered(gateway, decision)
    assert [line["count"] for line in log] == [1, 2, 3, 4, 5, 6]
    gateway, log, _ = brake()
    first = forwarded(gateway.decide(body("1", session="t"), {}, "p:1"))
    answered(gateway, first, "s1")  # asked for input, with a state
    retry = forwarded(
        gateway.decide(
            body("2", session="t", inputResponses={"a": {}}, requestState="s1"), {}, "p:1"
        )
    )
    assert len(log) == 1  # continued: not counted
    answered(gateway, retry, True)  # asked again, without a state this time
    again = gateway.decide(body("3", session="t", inputResponses={"a": {}}), {}, "p:1")
    answered(gateway, again)
    assert len(log) == 1
    for number in (4, 5):  # the same retry sent again, and a stale state: counted
        state = {"requestState": "s1"} if number == 5 else {}
        decision = gateway.decide(
            body(str(number), session="t", inputResponses={}, **state), {}, "p:1"
        )
        if isinstance(decision, Forward):
            answered(gateway, decision)
    assert [line["count"] for line in log] == [1, 2, 3]
    other = gateway.decide(body("6", session="u", inputResponses={}, requestState="s1"), {}, "p:1")
    assert isinstance(other, Forward) and log[-1]["sessionId"] == "name:u"  # not t's call


def test_shadow_forwards_what_it_would_deny_and_never_warns() -> None:
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("warn_at = 2\n", "inline.toml")
    gateway, log, notes = brake(shadow=True, policy=policy)
    for number in range(6):
        decision = forwarded(gateway.decide(body(str(number)), {}, None))
        assert decision.warning is None  # issue 42: shadow adds no warning
    assert log[-1]["verdict"] == "deny"
    assert notes and notes[0].startswith("shadow: would deny")
    assert len(notes) == 1  # issue 36.7: the repeats are counted, said when the run ends
    gateway.close()
    assert notes[1].startswith("3 more would-be denials (shadow) of the same call in name:s")


def test_denial_notes_escape_the_session_name_and_sum_up_repeats() -> None:
    """Issue 36.7: a name with a line break forged a log line; 100 denials were 100 lines."""
    gateway, _log, notes = brake()
    forged = "x\nloop-brake mcp-gateway: \x1b[2Jall clear"
    for number in range(103):
        decision = gateway.decide(body(str(number), session=forged), {}, None)
        if isinstance(decision, Forward):
            answered(gateway, decision)
    gateway.close()
    assert all("\n" not in note and "\x1b" not in note for note in notes)
    assert "name:x\\x0aloop-brake" in notes[0]
    assert len(notes) == 4  # the first, at 10, at 100, and the last one summed up
    assert "10 times in a row" in notes[1] and "100 times in a row" in notes[2]
    assert notes[3].startswith("1 more denials of the same call")
    gateway, _log, notes = brake()
    for number in range(3):  # an id whose bytes hold a line break (JSON whitespace)
        gateway.decide(body('{"k":\n' + str(number) + "}", session="y"), {}, None)
    assert len(notes) == 1 and "\n" not in notes[0] and '{"k":\\x0a2}' in notes[0]


def test_window_denies_a_call_seen_three_times_among_others() -> None:
    """Issue 29's [window] in the gateway: A, B, A, C, A in one session, the fifth denied
    with rule window; nothing of the arguments in the log, the notes or the answer."""
    from loop_brake_cli.core.policy import parse_policy

    policy, _ = parse_policy("[window]\ncalls = 5\nmax_repeats = 3\n", "inline.toml")
    gateway, log, notes = brake(policy=policy)
    texts = [CANARY, "b", CANARY, "c"]
    for number, text in enumerate(texts):
        forwarded(gateway.decide(body(str(number), arguments={"text": text}), {}, None))
    status, answer = gateway.decide(body("9"), {}, None)
    assert status == 200 and json.loads(answer)["result"]["isError"] is True
    assert [(line["verdict"], line["rule"]) for line in log] == [("pass", "streak")] * 4 + [
        ("deny", "window")
    ]
    assert (log[-1]["window"], log[-1]["seen"], log[-1]["limit"]) == (5, 3, 3)
    assert CANARY not in json.dumps(log) + "".join(notes) + answer.decode()


INPUT_REQUIRED = (
    b'{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required",'
    b'"inputRequests":{"q":{"method":"elicitation/create","params":{}}},"requestState":"s\\n1"}}'
)


@pytest.mark.parametrize("kind", ["application/json", "text/event-stream"])
def test_the_gateway_reads_an_answer_that_asks_for_input_cut_anywhere(kind: str) -> None:
    """The upstream's answer passes unchanged, chunk for chunk, while the gateway notes
    that it asked for input and the requestState it gave; another id's does not count."""
    import anyio

    from loop_brake_cli.mcp_gateway.app import _Reply, _watching

    other = INPUT_REQUIRED.replace(b'"id":7', b'"id":"7"')
    if kind == "application/json":
        streams = {INPUT_REQUIRED: True, other: False}
    else:
        note = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{}}'
        sse = b"event: message\r\ndata: " + note + b"\r\n\r\ndata: " + other + b"\n\n"
        streams = {sse: False, sse + b"event: message\ndata: " + INPUT_REQUIRED + b"\r\n\r\n": True}

    async def collect(size: int, body: bytes) -> tuple[bytes, _Reply]:
        async def chunks():
            for at in range(0, len(body), size):
                yield body[at : at + size]

        reply = _Reply(7, None)
        got = [part async for part in _watching(chunks(), kind + "; charset=utf-8", reply)]
        assert all(len(part) <= size for part in got)  # never held
        return b"".join(got), reply

    for body, asks in streams.items():
        for size in (1, 7, 64, len(body)):
            got, reply = anyio.run(collect, size, body)
            assert got == body
            assert reply.asked is asks and reply.state == ("s\n1" if asks else None)
