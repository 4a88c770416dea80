"""The fast path's verdict templates with a file label that holds ``%``.

The fast path writes a verdict line as one ``%`` format of pre-encoded pieces, and
the ``"file"`` label (filter with several files) is one of those pieces: a ``%`` in
a file name must come out literally, as the exact path writes it, not be read as a
format directive (it once raised TypeError for ``50%done.jsonl``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_env, run_cli

from loop_brake_cli.readers import fastpath

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE, reason="orjson is not installed")

EVENTS = (
    b"".join(b'{"tool":"t","args":{"q":1},"sessionId":"s","callId":"c%d"}\n' % i for i in range(4))
    + b'{"tool":"t","args":{},"sessionId":"s"}\n'
)


@pytest.mark.parametrize("name", ["50%done.jsonl", "%d%b%s%%.jsonl", "100%.jsonl"])
def test_percent_in_a_file_name_is_written_literally(tmp_path: Path, name: str) -> None:
    first, second = tmp_path / name, tmp_path / "plain.jsonl"
    first.write_bytes(EVENTS)
    second.write_bytes(EVENTS)
    fast = run_cli("filter", "-m", "2", str(first), str(second))
    exact = run_cli("filter", "-m", "2", str(first), str(second), env=cli_env(LOOP_BRAKE_EXACT="1"))
    assert fast.returncode == exact.returncode == 0, fast.stderr
    assert fast.stderr == b""
    assert fast.stdout == exact.stdout
    assert fast.stdout.count(b'"file":"' + str(first).encode() + b'"') == 5
    assert b'"verdict":"deny"' in fast.stdout
