"""What ``mcp-proxy`` logs for client lines a server never answers (the echo server), as a
small model the equivalence tests compare the real proxy with.

It is ``replay --verdicts --format mcp`` of the same lines (the same decoder and the
same brake) with the one thing only the proxy sees: its own answers. A call the proxy
denies is answered there and then, so its id is free again (``LoopBrake.end_call``,
issue 36.3) and a later call reusing it is counted, where a replay of the client's
lines, which never sees an answer, marks it a duplicate (the Node plugin's rule). So
the two logs are equal byte for byte up to the first such call (``diverges``).
"""

from __future__ import annotations

from typing import Any

from loop_brake_cli.core.brake import LoopBrake
from loop_brake_cli.core.canonical import JSONInputError, parse_json
from loop_brake_cli.core.policy import load_policy
from loop_brake_cli.core.records import BadRecord, error_record, verdict_record
from loop_brake_cli.readers.output import json_line
from loop_brake_cli.readers.pipeline import judge
from loop_brake_cli.readers.reader import JSON_WHITESPACE
from loop_brake_cli.readers.wire.mcp import Connections, messages


def proxy_log(
    requests: list[str] | list[bytes], max_repeats: int | None = None, policy: str | None = None
) -> tuple[bytes, int | None]:
    """The proxy's ``--log`` for these client lines (without their line ends), and the
    index (0-based, among the log's lines) of the first line where a replay of them
    differs (None: equal)."""
    loaded = load_policy(policy) if policy else None
    limit = max_repeats if max_repeats is not None else 3
    proxy = LoopBrake(limit, policy=loaded)
    replay = LoopBrake(limit, policy=loaded)
    wire, replay_wire = Connections(), Connections()
    lines: list[dict[str, Any]] = []
    diverges: int | None = None
    for number, text in enumerate(requests, 1):
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        if not data.strip(JSON_WHITESPACE):
            continue  # a blank line: counted, no message
        try:
            value = parse_json(data)
        except JSONInputError as exc:
            lines.append(error_record(BadRecord(str(exc), number)))
            continue
        for message, path in messages(value):
            record = wire.client_message(message, "mcp", number, path)
            other = replay_wire.client_message(message, "mcp", number, path)
            if record is None:
                continue
            ((record, verdict),) = judge((record,), proxy)
            ((_, theirs),) = judge((other,), replay)  # type: ignore[arg-type]
            if verdict is None:
                lines.append(error_record(record))  # type: ignore[arg-type]
                continue
            if diverges is None and verdict != theirs:
                diverges = len(lines)
            lines.append(verdict_record(record, verdict))  # type: ignore[arg-type]
            if verdict.denied and record.call_id is not None:  # type: ignore[union-attr]
                wire.forget(message["id"], "mcp")
                proxy.end_call(record.session, record.call_id)  # type: ignore[union-attr]
    return b"".join(json_line(line) for line in lines), diverges


def equal_until(ours: bytes, theirs: bytes, diverges: int | None) -> bool:
    """Whether two logs are equal line for line before line ``diverges`` (all of them
    when None)."""
    a, b = ours.splitlines(), theirs.splitlines()
    if diverges is None:
        return a == b
    return a[:diverges] == b[:diverges]
