"""The session key, call id and tool in the fast path's verdicts, against the exact path.

The fast path writes a common-shape call's session key and call id with
``json.encoder.encode_basestring`` (the string encoder of ``output.json_line``)
and an unusual call's through orjson; each stream here is judged by
``fastpath.filter_events`` and by the exact chain, and the bytes must be equal:
compact lines as agents write them, with ids holding every character class,
escapes in the input, duplicate top-level keys, ids nested inside the arguments,
ids that are not strings, and a tool name holding ``%`` (the per-tool verdict
templates are ``%`` formats).
"""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fastpath import _exact, _fast

from loop_brake_cli.readers import fastpath

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE, reason="orjson is not installed")

ALL = {"pass", "deny", "error"}
# every ASCII character, the line and paragraph separators, BOM, non-characters, astral
CLASSES = "".join(chr(c) for c in range(0x80)) + "\u2028\u2029\ufeff\uffff\U0001f600\xe9\u00a0"
IDS = st.one_of(
    st.text(alphabet=st.sampled_from(CLASSES), max_size=6),
    st.sampled_from(["s1", "", '"', "\\", "a\\u0041", '","callId":"x', "%d%b", "\x00"]),
)


def _compact(event: dict, ascii_only: bool) -> bytes:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=ascii_only).encode()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(st.tuples(IDS, IDS, st.booleans(), st.integers(1, 3)), min_size=1, max_size=20),
    st.sampled_from([1, 2, 3]),
)
def test_ids_of_every_character_class_are_written_as_the_exact_path_does(
    event_reader, calls, max_repeats
):
    lines = []
    for session, call_id, ascii_only, times in calls:
        event = {"tool": "t", "args": {"q": 1}, "sessionId": session, "callId": call_id}
        lines.extend([_compact(event, ascii_only)] * times)
    data = b"\n".join(lines) + b"\n"
    assert _fast(data, max_repeats, ALL) == _exact(data, max_repeats, ALL)


EDGES = [
    # escapes in the input that decode to plain text, and to quotes and backslashes
    b'{"tool":"t","args":{},"sessionId":"\\u0073\\u0031","callId":"c\\u0031"}',
    b'{"tool":"t","args":{},"sessionId":"a\\"b","callId":"c\\\\"}',
    b'{"tool":"t","args":{},"sessionId":"\\/","callId":"\\ud83d\\ude00"}',
    # ids nested inside the arguments, before and after the top-level ones
    b'{"tool":"t","args":{"sessionId":"x","callId":"y"},"sessionId":"s1","callId":"c1"}',
    b'{"tool":"t","sessionId":"s1","callId":"c2","args":{"sessionId":"x","callId":"y"}}',
    b'{"tool":"t","args":[{"callId":"y"}],"callId":"c3","sessionId":"s1"}',
    # duplicate top-level keys: the last one counts
    b'{"tool":"t","args":{},"sessionId":"s9","sessionId":"s1","callId":"x","callId":"c4"}',
    b'{"tool":"t","args":{},"sessionId":"s1","callId":"c5","sessionId":"s2"}',
    b'{"tool":"t","args":{},"callId":"c6","sessionId":"s1","callId":"c7"}',
    # a member between the session key and the call id, or after both
    b'{"tool":"t","args":{},"sessionId":"s1","n":1,"callId":"c8"}',
    b'{"tool":"t","args":{},"sessionId":"s1","callId":"c9","n":"\\"}"}',
    # ids that are not strings, or missing, or spelled another way
    b'{"tool":"t","args":{},"sessionId":"s1","callId":42}',
    b'{"tool":"t","args":{},"sessionId":"s1","callId":null}',
    b'{"tool":"t","args":{},"sessionId":"s1"}',
    b'{"tool":"t","args":{},"sessionId":7,"callId":"c10"}',
    b'{"tool":"t","args":{},"agentId":"a\\"1","callId":"c11"}',
    b'{"tool":"t","args":{},"sessionId":"s1","id":"c\\n12"}',
    b'{"tool":"t","args":{},"sessionId":"s1","callId":"c13"} ',
    b'{"tool":"t","args":{}, "sessionId" : "s1" , "callId" : "c14" }',
    # fields the exact path refuses or reads otherwise: an agent id that is not a string
    # beside a session id (an error), args null ({}), an integral float id (7)
    b'{"tool":"t","args":{},"sessionId":"s1","callId":"c15","agentId":5}',
    b'{"tool":"t","args":{},"sessionId":"s1","callId":"c16","agent_id":[1]}',
    b'{"tool":"t","args":null,"sessionId":"s1","callId":"c17"}',
    b'{"tool":"t","args":{},"sessionId":"s1","callId":7.0}',
    # a tool whose name is part of the verdict templates: '%' must stay literal
    b'{"tool":"50%done %d%b%%","args":{},"sessionId":"s%s","callId":"c%d"}',
    b'{"tool":"50%done %d%b%%","args":{},"sessionId":"s%s","callId":"c%%"}',
]


@pytest.mark.parametrize("max_repeats", [1, 2, 3])
def test_edge_shapes_are_written_as_the_exact_path_does(max_repeats, event_reader):
    data = b"".join(line + b"\n" for line in EDGES + EDGES[::-1])
    assert _fast(data, max_repeats, ALL) == _exact(data, max_repeats, ALL)


def test_the_cli_writes_the_same_bytes_with_and_without_the_fast_path(tmp_path, event_reader):
    path = tmp_path / "ids.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in EDGES * 3))
    fast = run_cli("filter", "-m", "2", str(path))
    exact = run_cli("filter", "-m", "2", str(path), env=cli_env(LOOP_BRAKE_EXACT="1"))
    assert fast.returncode == exact.returncode
    assert fast.stdout == exact.stdout
    assert fast.stderr == exact.stderr
    assert fast.stdout.count(b'"verdict":"deny"') > 0
