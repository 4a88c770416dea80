"""The canary through the C event reader: a secret in arguments never comes out.

``test_filter_canary``'s lines have no call id, so the C reader declines them all;
these have one. Some are inside its subset (it answers: checked here, so the test
stays about the C path), some make it give up right at or after the secret (the
orjson and exact paths then decide and report). ``filter`` must print neither the
secret nor anything of the arguments, with the reader on and off.
"""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, run_cli
from test_filter_canary import SECRET, assert_no_secret

from loop_brake_cli.readers import fastpath

pytestmark = pytest.mark.skipif(
    fastpath.scanner() is None,
    reason="the C reader loop_brake_cli.readers._event_scan is not built",
)

S = json.dumps(SECRET, ensure_ascii=False).encode("utf-8")
# with \ud83d\udd11 escapes (rewritten) and then a lone surrogate: declined there
E = json.dumps(SECRET + "\ud800").encode("ascii")


def _call(args: bytes, call_id: str, extra: bytes = b"") -> bytes:
    return b'{"tool":"login","args":%b,"sessionId":"s1",%b"callId":"%b"}' % (
        args,
        extra,
        call_id.encode(),
    )


ANSWERED = [  # in the C reader's subset: a loop the third call of which is denied
    _call(b'{"token":' + S + b',"n":[1,2.5]}', "c1"),
    _call(b'{"n":[1,2.5],"token":' + S + b"}", "c2"),
    _call(b'{"token":' + S + b',"n":[1,2.5]}', "c3"),
    _call(b'{"token":' + S + b"}", "c4", b'"note":' + S + b","),  # an unknown member
]
DECLINED = [  # it gives up at or after the secret; the other paths decide
    _call(b'{"token":' + E + b"}", "c5"),
    _call(b'{"token":' + S + b',"f":1.0}', "c6"),
    _call(b'{"token":' + S + b',"bad":"\xff"}', "c7"),
    _call(b'{"token":' + S + b",}", "c8"),
    _call(b'{"token":' + S, "c9"),
    _call(b'{"token":' + S + b',"d":' + b"[" * 70 + b"]" * 70 + b"}", "c10"),
]


def test_the_reader_answers_the_lines_meant_for_it():
    from loop_brake_cli.readers._event_scan import scan_event

    assert all(scan_event(line) is not None for line in ANSWERED)
    assert all(scan_event(line) is None for line in DECLINED)


@pytest.mark.parametrize("reader", ["c-reader", "pure-python"])
@pytest.mark.parametrize("flags", [(), ("-m", "2"), ("--only", "deny"), ("--summary",)])
def test_filter_never_prints_the_secret_through_either_reader(reader, flags):
    env = {k: v for k, v in cli_env().items() if k != "LOOP_BRAKE_PURE_PYTHON"}
    if reader == "pure-python":
        env["LOOP_BRAKE_PURE_PYTHON"] = "1"
    data = b"\n".join(ANSWERED + DECLINED) + b"\n"
    result = run_cli("filter", *flags, input=data, env=env)
    assert_no_secret(result.stdout, result.stderr)
    assert b"Traceback" not in result.stderr
    if not flags:
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert rows[2]["verdict"] == "deny" and rows[2]["callId"] == "c3"
