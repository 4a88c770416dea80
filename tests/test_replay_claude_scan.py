"""replay's C reader of Claude Code lines (``readers/_claude_scan.h``) against the Python path.

``analysis/replay_claude.py`` trusts what ``scan_claude_lines`` answers for a line
(its session, message id, model, usage figures, and each tool_use block's name, id
and digest) and reads every line it declines the adapter's way. So, for every
transcript here, replaying it through the C reader must hand the analyzer exactly
the records, in the same order, with the same verdicts, as the Python path
(``LOOP_BRAKE_PURE_PYTHON``: ``formats.claude_code.parse`` -> ``pipeline.judge``)
does, a call's arguments aside (the C path never builds them): the same errors,
located the same way, for invalid UTF-8, malformed JSON, lines over the limit and
deep nesting. Transcripts come from seeded generators (the common shape and its near
misses: escapes and unicode everywhere, nested and oddly spelled tool inputs,
duplicate members, whitespace, CRLF, blank lines, lines longer than a read chunk or
the line limit, byte mutations); each answer's digest is checked against
``canonical.call_digest``, and common lines must be answered, so a reader that
declines everything fails. The whole command is compared too, outputs byte for byte.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import cli_env, run_cli
from test_hash_node import document

from loop_brake_cli.analysis import replay_claude
from loop_brake_cli.analysis.analyzer import Analyzer
from loop_brake_cli.analysis.replay import replay_file
from loop_brake_cli.analysis.summary import report_to_json
from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import call_digest, parse_json
from loop_brake_cli.core.records import BadRecord, ToolCall, Usage

try:
    from loop_brake_cli.readers._event_scan import scan_claude_lines
except ImportError:  # pragma: no cover - where no C compiler was there at install
    scan_claude_lines = None

NOT_BUILT = (
    "the C reader loop_brake_cli.readers._event_scan is not built "
    "(pip install -e . builds it; or python setup.py build_ext --inplace)"
)
pytestmark = pytest.mark.skipif(scan_claude_lines is None, reason=NOT_BUILT)

CANARY = "canary-claude-scan-5d2e"
SESSION = "0f3c2a1e-7b7d-4c1a-9e55-2d7f3c8b9a10"


# ---- the oracle: what the analyzer is handed --------------------------------------------


class Tap(Analyzer):
    """The real analyzer, keeping every record it is handed, with its verdict."""

    def __init__(self) -> None:
        super().__init__(3, "default", 10)
        self.handed: list[tuple[Any, Any]] = []

    def add(self, record: Any, verdict: Any) -> None:
        self.handed.append((record, verdict))
        super().add(record, verdict)


def fields(record: Any) -> tuple[Any, ...]:
    """A record as the analyzer reads it: a call without its arguments (the C path has
    none), a Usage with its figures as merged by the end of the file."""
    if record.__class__ is ToolCall:
        return ("call", record.tool, record.session, record.call_id, record.line, record.path,
                record.args_unparsed)  # fmt: skip
    if record.__class__ is Usage:
        return ("usage", *(getattr(record, name) for name in Usage.__slots__))
    assert record.__class__ is BadRecord, record
    return ("bad", record.message, record.line, record.path)


def handed(path: Path, pure: bool, monkeypatch: pytest.MonkeyPatch, limit: int) -> list:
    """What replaying ``path`` hands the analyzer, and the report's JSON, on one path."""
    if pure:
        monkeypatch.setenv("LOOP_BRAKE_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("LOOP_BRAKE_PURE_PYTHON", raising=False)
    tap, brake = Tap(), LoopBrake(3, source="default")
    info = replay_file(str(path), brake, tap, "claude-code", limit)
    assert info.error is None or "internal error" not in info.error, info.error
    report = report_to_json(tap.finish())
    return [(fields(record), verdict) for record, verdict in tap.handed] + [report]


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, limit: int = 1 << 20) -> list:
    c_path = handed(path, False, monkeypatch, limit)
    python_path = handed(path, True, monkeypatch, limit)
    assert c_path == python_path
    return c_path


# ---- lines -----------------------------------------------------------------------------


def spell(value: Any, rng: random.Random, escape: float = 0.0) -> str:
    """JSON text of ``value`` with whitespace between tokens now and then, and each string
    character written as a \\u escape with probability ``escape``."""
    space = lambda: rng.choice(["", "", "", " ", "\n", "\t", "\r", "  "])  # noqa: E731
    if isinstance(value, dict):
        items = [f"{space()}{spell(k, rng, escape)}{space()}:{space()}{spell(v, rng, escape)}"
                 for k, v in value.items()]  # fmt: skip
        return "{" + ",".join(items) + space() + "}"
    if isinstance(value, list):
        return "[" + ",".join(space() + spell(v, rng, escape) for v in value) + space() + "]"
    if isinstance(value, str):
        out = []
        for char in value:
            if rng.random() < escape and ord(char) < 0x10000:
                out.append(f"\\u{ord(char):04{rng.choice('xX')}}")
            else:
                out.append(json.dumps(char, ensure_ascii=rng.random() < 0.3)[1:-1])
        return '"' + "".join(out) + '"'
    if isinstance(value, Raw):
        return value.text
    return json.dumps(value)


class Raw:
    """JSON text written as it is (a tool input spelled by test_hash_node.document)."""

    def __init__(self, text: str) -> None:
        self.text = text


TEXTS = ["Let me check that. ", "é ü 漢字 🙂", "a\"quote\\slash\n", "tool_use", '"usage"',
         "\x7f\u2028", "\\u0041"]  # fmt: skip
NAMES = ["Bash", "read_file", "mcp__fs__read", "Écrire", "漢", "", 'a"b', "tool\u0000x"]


def assistant(rng: random.Random, n: int, odd: float) -> dict:
    """An assistant line of the common shape; with probability ``odd`` at each place, a
    near miss of it."""
    maybe = lambda: rng.random() < odd  # noqa: E731
    message: dict[str, Any] = {"role": "assistant"}
    if not maybe():
        message["id"] = f"msg_{n % 7 if maybe() else n}"
    elif maybe():
        message["id"] = rng.choice([None, 5, ["x"], "m\u00e9"])
    message["model"] = rng.choice(["claude-sonnet", "claude-opus", None, 3]) if maybe() else "m"
    if not maybe():
        usage: dict[str, Any] = {}
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                     "cache_creation_input_tokens"):  # fmt: skip
            if not maybe():
                usage[name] = rng.randint(0, 90000)
            elif maybe():
                usage[name] = rng.choice([None, -3, 1.5, 10**16, "7", True, 0, 10**15 - 1])
        if maybe():
            usage["server_tool_use"] = {"web_search_requests": 0}
        message["usage"] = usage if not maybe() else rng.choice([None, [], "u"])
    content: list[Any] = []
    for index in range(rng.choice([1, 1, 2, 3])):
        if rng.random() < 0.4:
            content.append({"type": "text", "text": rng.choice(TEXTS) * rng.randint(1, 5)})
        block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{n}_{index}",
                                 "name": rng.choice(NAMES[:3]), "input": {"k": n % 3}}  # fmt: skip
        if maybe():
            block["id"] = rng.choice([None, 7, f"toolu_{n % 5}", "t\u00e9"])
        if maybe():
            del block["id"]
        if maybe():
            block["name"] = rng.choice(NAMES + [None, 4])
        if maybe():
            tool, raw = document(rng)
            block["input"] = Raw(raw)
        elif maybe():
            block["input"] = rng.choice([None, "", '{"a":1}', [1], 3, {"a": [{"b": [1.5, -0.0]}]}])
        if maybe():
            block["type"] = rng.choice(["tool_result", "Tool_use", None])
        if maybe():
            del block["input"]
        content.append(block)
    if maybe():
        content.append(rng.choice([None, "text", 3, []]))
    message["content"] = content if not maybe() else rng.choice([None, "just text", {}])
    line: dict[str, Any] = {"parentUuid": None, "isSidechain": False, "type": "assistant",
                            "sessionId": SESSION, "uuid": f"a-{n}", "message": message}  # fmt: skip
    if maybe():
        line["isSidechain"] = rng.choice([True, None, "yes"])
        if maybe():
            line["agentId"] = rng.choice(["agent-1", 5])
    if maybe():
        line["sessionId"] = rng.choice(["s\u00e9", "other", 5, None])
    if maybe():
        del line["sessionId"]
        if maybe():
            line["session_id"] = "stream"
    if maybe():
        line["type"] = rng.choice(["user", "progress", None, "Assistant"])
    keys = list(line)
    if maybe():
        rng.shuffle(keys)  # real Claude Code writes "type" after "message"
    return {key: line[key] for key in keys}


def user(rng: random.Random, n: int) -> dict:
    result = rng.choice(["line of output\n" * rng.randint(1, 9), '{"type":"tool_use"}', "ok"])
    block = {"type": "tool_result", "tool_use_id": f"toolu_{n}_0", "content": result}
    return {"type": "user", "sessionId": SESSION, "uuid": f"u-{n}",
            "message": {"role": "user", "content": [block]}}  # fmt: skip


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One byte changed, inserted or removed (never a newline: one line stays one)."""
    if not data:
        return data
    at = rng.randrange(len(data))
    byte = bytes([rng.choice([0x22, 0x5C, 0x7B, 0x7D, 0x2C, 0x3A, 0x80, 0xC3, 0xED, 0xFF, 0x00,
                              0x20, 0x30, 0x65, 0x5B, 0x5D])])  # fmt: skip
    kind = rng.randrange(3)
    if kind == 0:
        return data[:at] + byte + data[at + 1 :]
    if kind == 1:
        return data[:at] + byte + data[at:]
    return data[:at] + data[at + 1 :]


def transcript(rng: random.Random, count: int, odd: float, broken: float) -> bytes:
    out = []
    for n in range(count):
        for obj in (assistant(rng, n, odd), user(rng, n)):
            line = spell(obj, rng, escape=0.02 if rng.random() < odd else 0.0).encode(
                "utf-8", "surrogatepass"
            )
            if rng.random() < broken:
                line = mutate(line, rng)
            if rng.random() < broken / 4:
                line = line[: rng.randrange(len(line) + 1)]  # truncated
            ending = rng.choice([b"\n"] * 6 + [b"\r\n", b"\n\n", b"\n  \t\n"])
            out.append(line.replace(b"\n", b" ") + ending)
        if rng.random() < broken / 4:
            out.append(b"[" * 5000 + b"\n")  # nested too deep for either reader
    if rng.random() < 0.3:
        out.append(out.pop().rstrip(b"\r\n"))  # no newline at the end
    return b"".join(out)


# ---- the tests -------------------------------------------------------------------------


ARGS = {"command": "ls", "n": [1, 2.5, {"z": True, "a": None}]}
ARGS_TEXT = b'{"command":"ls","n":[1,2.5,{"z":true,"a":null}]}'


def common_line(n: int, **message: Any) -> bytes:
    body = {"id": f"msg_{n}", "role": "assistant", "model": "claude-sonnet",
            "usage": {"input_tokens": 8, "output_tokens": 90, "cache_read_input_tokens": 3,
                      "cache_creation_input_tokens": 1},
            "content": [{"type": "text", "text": "Let me check."},
                        {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                         "input": ARGS}]}  # fmt: skip
    body.update(message)
    line = {"type": "assistant", "sessionId": SESSION, "uuid": f"a{n}", "message": body}
    return json.dumps(line, separators=(",", ":")).encode()


def test_a_common_line_is_answered_with_the_adapters_digest() -> None:
    line = common_line(1)
    found, after = scan_claude_lines(line, 7)
    assert after == 8
    number, session, turn, model, figures, calls = found[0]
    assert (number, session, turn, model, figures) == (7, SESSION, "msg_1", "claude-sonnet",
                                                       (8, 90, 3, 1))  # fmt: skip
    assert calls == (("$.message.content[1]", "Bash", "toolu_1", call_digest("Bash", ARGS)),)


def test_lines_are_split_and_numbered_as_the_reader_numbers_them() -> None:
    user_line = json.dumps(user(random.Random(1), 1)).encode()
    data = b"\n".join([common_line(1) + b"\r", b"", b" \t", user_line, b"{broken", common_line(2)])
    found, after = scan_claude_lines(data, 10)
    assert after == 16
    assert [item[0] for item in found] == [10, 14, 15]
    assert found[1] == (14, b"{broken")  # the adapter reads it (and reports it)
    assert found[0][5][0][2] == "toolu_1"  # its CR dropped before reading


@pytest.mark.parametrize(
    "line",
    [
        common_line(1, model="cl\\u0061ude"),  # an escape where the C reads a string
        common_line(1).replace(b'"type":"assistant"', b'"type":"assistant","type":"assistant"'),
        common_line(1).replace(b'"input_tokens":8', b'"input_tokens":8.0'),
        common_line(1).replace(b'"input_tokens":8', b'"input_tokens":1234567890123456'),
        common_line(1).replace(b'"input_tokens":8', b'"input_tokens":-0'),
        common_line(1).replace(b'"sessionId"', b'"isSidechain":true,"sessionId"'),
        common_line(1).replace(b'"command":"ls"', b'"command":"\\ud800"'),  # a lone surrogate
        common_line(1).replace(b'"n":[1,', b'"n":[1e2,'),  # outside the canonical subset
        common_line(1).replace(b"Let me", b"Let \xff me"),  # not UTF-8
        common_line(1)[:-1],  # truncated
        common_line(1).replace(b'"Bash"', b'"Ba\\u0073h"'),
        b'{"type":"tool_use","message":' * 70 + b"{}" + b"}" * 70,  # too deep
    ],
)
def test_what_the_c_reader_cannot_prove_goes_to_the_adapter(line: bytes) -> None:
    found, _ = scan_claude_lines(line, 1)
    assert found == [(1, line)]


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"user","message":{"content":"tool_use"}}',  # needles, valid, no record
        b'{"type":"summary","summary":"x","leafUuid":"y"}',
        b'{"type":"user","x":"\\ud800"}',  # a lone surrogate the exact parser reads
        b'{"no needles": "\xff"}',  # not even parsed by the adapter: no needle, an outline
    ],
)
def test_lines_that_give_no_record_are_skipped(line: bytes) -> None:
    assert scan_claude_lines(line, 1) == ([], 2)


def test_odd_but_valid_lines_are_read_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = common_line(1, content=[{"type": "text", "text": "\\ud83d\\ude00 \\u00e9 \\/"}])
    lines = [
        common_line(1).replace(b"Let me check.", b"\\ud800 lone"),  # read by parse_json
        common_line(2).replace(b'"input_tokens":8', b'"input_tokens":null'),
        common_line(3).replace(b'{"type":"text"', b' { "type" : "text" '),
        common_line(4).replace(b'"command":"ls"', b'"command":"\\u00e9\\n\\"x\\"\\/"'),
        common_line(5).replace(b'"toolu_5"', b'"toolu_4"'),  # a split response, written again
        common_line(6, id="msg_5"),  # the same turn: its figures merged into the first
        text,
    ]
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    found, _ = scan_claude_lines(b"\n".join(lines), 1)
    assert all(len(item) == 6 for item in found), found  # each read in C
    for item in found:
        for place, tool, _, digest in item[5]:
            raw = lines[item[0] - 1]
            block = json.loads(raw)["message"]["content"][int(place[-2])]
            assert digest == call_digest(tool, parse_json(json.dumps(block["input"]).encode()))
    handed_records = assert_same(path, monkeypatch)
    assert len([r for r, _ in handed_records[:-1] if r[0] == "call"]) == 5  # toolu_4 once


@pytest.mark.parametrize("seed", range(45))
def test_random_transcripts_hand_the_analyzer_the_same_records(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    odd, broken = [0.0, 0.05, 0.3][seed % 3], [0.0, 0.1, 0.5][seed // 3 % 3]
    path = tmp_path / "t.jsonl"
    data = transcript(rng, rng.randint(1, 30), odd, broken)
    path.write_bytes(data)
    assert_same(path, monkeypatch)
    assert_same(path, monkeypatch, limit=rng.choice([200, 400, 1000]))  # lines over the limit
    if odd == 0.0 and broken == 0.0:
        found, _ = scan_claude_lines(data.replace(b"\r\n", b"\n").rstrip(b"\n"), 1)
        assert found and all(len(item) == 6 for item in found)  # every line read in C


def nested(rng: random.Random, depth: int = 0) -> Any:
    """A tool input value inside and around the C reader's canonical subset."""
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([0, 7, -12, 10**15 - 1, 2**53, 1.5, -0.25, 0.000001, 1e-7, 12.0])
    if kind == 1:
        return "".join(rng.choice(["a", "é", "\n", '"', "\\", "/", "\u2028", "🙂", "\x01"])
                       for _ in range(rng.randint(0, 6)))  # fmt: skip
    if kind in (2, 3):
        return rng.choice([True, False, None])
    if kind == 4:
        return "x" * rng.randint(0, 3)
    if kind == 5:
        return [nested(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["b", "a", "B", "a_b", "é", "", "z9", "~"]
    return {rng.choice(keys): nested(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_digests_of_every_input_spelling_equal_call_digest() -> None:
    rng = random.Random(41)
    answered = 0
    for n in range(3000):
        if n % 2:
            raw = document(rng)[1]  # test_hash_node's adversarial spellings
        else:
            raw = spell({"k": nested(rng), "b": nested(rng, 2)}, rng, escape=0.1)
        line = common_line(n).replace(ARGS_TEXT, raw.encode("utf-8", "surrogatepass"))
        found, _ = scan_claude_lines(line, 1)
        if len(found) != 1 or len(found[0]) == 2:
            continue
        answered += 1
        ((_, _, _, digest),) = found[0][5]
        args = parse_json(raw.encode("utf-8", "surrogatepass"))
        assert isinstance(args, dict)
        assert digest == call_digest("Bash", args), raw
    assert answered > 150  # of 3,000: the rest is outside the subset, or not an object


def test_lines_longer_than_a_chunk_and_split_across_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    lines = []
    for n in range(40):
        long = "x\u00e9" * rng.choice([10, 40_000, 70_000])
        lines.append(common_line(n, content=[{"type": "text", "text": long},
                                             {"type": "tool_use", "id": f"t{n}", "name": "Bash",
                                              "input": {"s": long[: n * 100]}}]))  # fmt: skip
        lines.append(json.dumps(user(rng, n)).encode())
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines))  # a BOM, CRLF, no final newline
    assert_same(path, monkeypatch)
    assert_same(path, monkeypatch, limit=100_000)  # some over the limit, across chunks


def test_mutated_lines_report_the_same_located_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    base = [common_line(n) for n in range(20)]
    lines = [mutate(line, rng) for line in base for _ in range(15)]
    path = tmp_path / "mutated.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    records = assert_same(path, monkeypatch)
    assert any(r[0] == "bad" for r, _ in records[:-1])


def test_the_command_prints_the_same_and_no_argument(tmp_path: Path) -> None:
    rng = random.Random(11)
    data = transcript(rng, 60, 0.05, 0.1)
    secret = json.dumps({"command": CANARY}).encode()
    data += common_line(99).replace(ARGS_TEXT, secret)
    data += b"\n" + common_line(100).replace(b'"ls"', f'"{CANARY}'.encode())  # broken
    path = tmp_path / "session.jsonl"
    path.write_bytes(data + b"\n")
    for mode in ([], ["--json"], ["--html", "-"], ["--json", "--sweep", "2..6"]):
        args = ("replay", "--format", "claude-code", *mode, str(path))
        c_path = run_cli(*args, env=cli_env())
        python_path = run_cli(*args, env=cli_env(LOOP_BRAKE_PURE_PYTHON="1"))
        assert (c_path.stdout, c_path.stderr, c_path.returncode) == (
            python_path.stdout,
            python_path.stderr,
            python_path.returncode,
        ), mode
        assert CANARY.encode() not in c_path.stdout + c_path.stderr


def test_runs_that_read_more_take_the_python_path() -> None:
    from loop_brake_cli.formats import claude_code, codex

    brake = LoopBrake(3, source="default")
    assert replay_claude.takes(claude_code, brake, False, None)
    assert not replay_claude.takes(codex, brake, False, None)
    assert not replay_claude.takes(claude_code, brake, True, None)  # results
    assert not replay_claude.takes(claude_code, brake, False, "looks like codex")


def test_progress_is_told_as_the_file_is_read(tmp_path: Path) -> None:
    lines = [common_line(n) for n in range(5000)]
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    told: list[int] = []
    replay_file(str(path), LoopBrake(3, source="default"), Tap(), "claude-code", 1 << 20,
                on_progress=told.append)  # fmt: skip
    assert len(told) > 2 and told == sorted(told) and told[-1] == path.stat().st_size


def test_lines_without_a_needle_are_skipped_only_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adapter skips a line holding neither ``"usage"`` nor ``"tool_use"`` (quotes
    included) unparsed when it has the outline of an object, even one that would give a
    call if parsed (an escaped block type); a line of a vertical tab or form feed is not
    blank (only JSON whitespace is) and is reported."""
    escaped = common_line(1).replace(b'"type":"tool_use"', b'"type":"tool\\u005fuse"')
    escaped = escaped.replace(b'"usage"', b'"us\\u0061ge"').replace(b'"uuid"', b'"usages"')
    lines = [escaped, b"\x0b", b" \x0c ", b"\t", common_line(2), b'{"usages": [}']
    path = tmp_path / "needles.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    records = assert_same(path, monkeypatch)
    assert [(r[0], r[2]) for r, _ in records[:-1] if r[0] != "usage"] == [
        ("bad", 2),
        ("bad", 3),
        ("call", SESSION),
    ]


def test_a_line_at_the_limit_is_not_too_long_for_its_cr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = common_line(1)
    over = common_line(2).replace(b'"uuid":"a2"', b'"uuid":"a2x"')
    path = tmp_path / "limit.jsonl"
    path.write_bytes(line + b"\r\n" + over + b"\r\n" + common_line(3) + b"\r")
    records = assert_same(path, monkeypatch, limit=len(line))
    assert [r[0] for r, _ in records[:-1]] == ["usage", "call", "bad", "usage", "call"]
    assert records[2][0][1:3] == (f"line longer than {len(line)} bytes", 2)


def test_a_split_response_raises_its_turns_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code writes one response over several lines, each with the usage known
    then: the turn is reported once, with the larger figures of its later lines."""
    first = common_line(1)
    later = common_line(2, id="msg_1").replace(b'"output_tokens":90', b'"output_tokens":500')
    later = later.replace(b'"input_tokens":8', b'"input_tokens":5')
    path = tmp_path / "split.jsonl"
    path.write_bytes(first + b"\n" + later + b"\n")
    records = assert_same(path, monkeypatch)
    usages = [r for r, _ in records[:-1] if r[0] == "usage"]
    assert len(usages) == 1
    assert usages[0][4:8] == (8, 500, 3, 1)  # input, output, cache read, cache write
