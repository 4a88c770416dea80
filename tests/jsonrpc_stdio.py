"""A bare JSON-RPC client over a server process's stdio, for what an SDK client never
does: the handshake, then ``tools/call`` requests that all reuse one id (legal once
each is answered), each sent after the answer to the one before."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

HANDSHAKE_VERSION = "2025-06-18"


def calls_with_one_id(
    command: list[str], calls: list[tuple[str, dict[str, Any]]], stderr: Path
) -> list[dict[str, Any]]:
    """The answers to ``calls`` (tool name, arguments), every request with id 1."""
    with stderr.open("w", encoding="utf-8") as errors:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True
        )
        assert process.stdin is not None and process.stdout is not None
        try:

            def ask(message: dict[str, Any]) -> dict[str, Any] | None:
                process.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
                process.stdin.flush()  # type: ignore[union-attr]
                if "id" not in message:
                    return None
                while True:  # skip the server's notifications
                    answer = json.loads(process.stdout.readline())  # type: ignore[union-attr]
                    if answer.get("id") == message["id"]:
                        return answer

            ask(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": HANDSHAKE_VERSION,
                        "capabilities": {},
                        "clientInfo": {"name": "reuser", "version": "1"},
                    },
                }
            )
            ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
            answers = []
            for name, args in calls:
                params = {"name": name, "arguments": args}
                answer = ask({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
                answers.append(answer or {})
            return answers
        finally:
            process.stdin.close()
            process.wait()
