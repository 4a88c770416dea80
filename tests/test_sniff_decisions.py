"""Every adapter's sniff decides as it did when tests/sniff_decisions.json was recorded.

The sniffs are tuned for speed (patterns that start with a literal, cheap ``in``
checks before a regex); a faster sniff must not decide differently. The table holds,
for every head of a file in tests/fixtures and samples (and, when present,
shared/samples-real), each adapter's decision in ``FORMATS`` order, keyed by the
head's digest (a file changed or added since is not compared). Synthesized heads add
the edge cases: each marker the sniffs look for alone and in pairs, written by JSON,
quoted inside a string (escaped quotes), after an escaped backslash, spaced out, and
cut at every byte (a marker split at the head's end).

Re-record only when a decision is meant to change, and say why in the commit:

    python tests/test_sniff_decisions.py --record
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from loop_brake_cli import formats  # noqa: E402
from loop_brake_cli.readers.reader import CHUNK_SIZE  # noqa: E402

TABLE = Path(__file__).resolve().parent / "sniff_decisions.json"

# Markers the sniffs look for (and near-misses), as JSON writes them.
MARKERS = [
    '"sessionId": "s"',
    '"projectHash": "h"',
    '"toolCalls": []',
    '"$rewindTo": "m"',
    '"$set": {}',
    '"type": "gemini"',
    '"fncall_messages": []',
    '"tool_call_metadata": {}',
    '"kind": "ActionEvent"',
    '"instance_id": "i"',
    '"history": [',
    '"instruction": "x"',
    '"test_result": {}',
    '"source": "agent"',
    '"action": "run"',
    '"observation": "run"',
    '"is_confirmed": "x"',
    '"trajectory": [',
    '"environment": "e"',
    '"tool_calls": []',
    '"role": "assistant"',
    '"role": "robot"',
    '"type": "tool_use"',
    '"type": "thinking"',
    '"type": "message"',
    '"stop_reason": "end_turn"',
    '"type": "function_call"',
    '"type": "response.completed"',
    '"object": "response"',
    '"parentUuid": null',
    '"jsonrpc": "2.0"',
    '"type": "session_meta"',
    '"resourceSpans": [',
    '"tool": "Read"',
    '"session_id": "s"',
    '"parent_tool_use_id": null',
    '"type": "thread.started"',
    '"tool_id": "t"',
    '"message_type": "action"',
]


def spaced(marker: str) -> str:
    """The marker with JSON whitespace around its colon (and none at all)."""
    return marker.replace(": ", " :\n\t ")


def wrapped(body: str) -> Iterator[str]:
    """The ways a head can hold ``body``: as keys, in a list, quoted inside a string,
    after a string ending in an escaped backslash, compact and spaced."""
    yield "{" + body + "}"
    yield "[{" + body + "}]"
    yield '{"text": ' + json.dumps(body) + "}"
    yield '{"p": "a\\\\",' + body + "}"
    yield "{" + spaced(body) + "}"
    yield "{" + body.replace(": ", ":") + "}\n"


def synthesized() -> Iterator[bytes]:
    for marker in MARKERS:
        for head in wrapped(marker):
            data = head.encode()
            for cut in range(1, len(data) + 1):
                yield data[:cut]
    for first, second in itertools.combinations(MARKERS, 2):
        for head in wrapped(f"{first}, {second}"):
            yield head.encode()
    for first, second, third in (
        ('"history": [{', '"action": "run"', '"is_confirmed": "x"}]'),
        ('"instance_id": "i"', '"history": [', '"source": "agent"'),
        ('"tool_calls": []', '"role": "user"', '"type": "tool_use"'),
    ):
        for head in wrapped(f"{first}, {second}, {third}"):
            yield head.encode()
    yield b'[{"source": "agent", "x": 1, "action": "run", "observation": "a"}]'
    yield b'[{"observation": "run", "source": "user"}]'
    yield b'{"messages": [{"content": "<function=bash><parameter=command>ls"}]}'


def decisions(head: bytes) -> int:
    """Each adapter's sniff of ``head`` as one bit, in ``FORMATS`` order (an error: 1 in
    the bit of 13 places further up, never expected)."""
    bits = 0
    for index, adapter in enumerate(formats.ADAPTERS):
        try:
            yes = bool(adapter.sniff(head))
        except Exception:
            bits |= 1 << (index + len(formats.FORMATS))
            continue
        bits |= yes << index
    return bits


def file_head(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except OSError:
            pass
    return data[:CHUNK_SIZE]


def digest(head: bytes) -> str:
    return hashlib.sha256(head).hexdigest()[:16]


def file_heads(folder: Path, label: str) -> Iterator[tuple[str, bytes]]:
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if "__pycache__" not in path.parts:
            yield f"{label}/{path.relative_to(folder)}", file_head(path)


def shared_samples_dir() -> Path:
    from conftest import shared_dir

    return shared_dir() / "samples-real"


def repo_heads() -> Iterator[tuple[str, bytes]]:
    yield from file_heads(ROOT / "tests" / "fixtures", "tests/fixtures")
    yield from file_heads(ROOT / "samples", "samples")


def record() -> None:
    files: dict[str, list[object]] = {}
    heads = list(repo_heads())
    if shared_samples_dir().is_dir():
        heads += list(file_heads(shared_samples_dir(), "shared"))
    for label, head in heads:
        files[digest(head)] = [label, decisions(head)]
    table = {"formats": list(formats.FORMATS), "files": files}
    table["synthesized"] = [decisions(head) for head in synthesized()]
    TABLE.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    print(f"{TABLE}: {len(files)} file heads, {len(table['synthesized'])} synthesized")


@pytest.fixture(scope="module")
def table() -> dict[str, object]:
    loaded: dict[str, object] = json.loads(TABLE.read_text())
    assert loaded["formats"] == list(formats.FORMATS), "FORMATS changed: re-record the table"
    return loaded


def named(bits: int) -> list[str]:
    return [name for index, name in enumerate(formats.FORMATS) if bits >> index & 1]


def compare(heads: Iterator[tuple[str, bytes]], table: dict[str, object]) -> int:
    recorded: dict[str, list[object]] = table["files"]  # type: ignore[assignment]
    compared = 0
    for label, head in heads:
        entry = recorded.get(digest(head))
        if entry is None:
            continue  # a file added or changed since the table was recorded
        assert named(decisions(head)) == named(entry[1]), label  # type: ignore[arg-type]
        expected = named(entry[1])  # type: ignore[arg-type]
        if expected:
            assert formats.detect(head, label).INFO.name == expected[0], label
        else:
            with pytest.raises(formats.UnknownFormatError):
                formats.detect(head, label)
        compared += 1
    return compared


def test_repo_heads_decide_as_recorded(table: dict[str, object]) -> None:
    assert compare(repo_heads(), table) >= 100


def test_shared_heads_decide_as_recorded(table: dict[str, object], shared_samples: Path) -> None:
    assert compare(file_heads(shared_samples, "shared"), table) >= 20


def test_synthesized_heads_decide_as_recorded(table: dict[str, object]) -> None:
    expected: list[int] = table["synthesized"]  # type: ignore[assignment]
    heads = list(synthesized())
    assert len(heads) == len(expected), "the synthesized heads changed: re-record the table"
    for head, bits in zip(heads, expected, strict=True):
        assert named(decisions(head)) == named(bits), head


def test_the_table_tells_formats_apart(table: dict[str, object]) -> None:
    """The recorded decisions are not all alike: the table can catch a sniff gone wrong."""
    synthesized_bits = set(table["synthesized"])  # type: ignore[call-overload]
    seen = {name for bits in synthesized_bits for name in named(bits)}
    assert seen >= {"gemini-cli", "openhands", "swe-agent", "anthropic", "openai-chat"}
    assert 0 in synthesized_bits  # some heads are no format at all


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("openai-chat", b'"role": "user"'),
        ("anthropic", b'"type": "tool_use"'),
        ("openai-responses", b'"type": "function_call"'),
        ("swe-agent", b'"trajectory": [{"action": "ls"'),
        ("gemini-cli", b'"sessionId": "s", "projectHash": "h"'),
        ("openhands", b'"tool_call_metadata": {}'),
    ],
)
def test_a_key_counts_only_when_json_wrote_it(name: str, key: bytes) -> None:
    """A key JSON wrote is a marker; the same text quoted inside a string (its quotes
    escaped) is not, and neither is the key cut off by the end of the head."""
    adapter = formats.get(name)
    assert adapter.sniff(b"{" + key + b"}")
    quoted = json.dumps({"text": key.decode()}).encode()
    assert b'\\"' in quoted and not adapter.sniff(quoted)
    assert not adapter.sniff(b"{" + key[: key.index(b'"', 1)])  # the key's closing quote cut


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    record()
