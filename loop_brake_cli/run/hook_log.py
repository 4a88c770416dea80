"""What the injected hook decided, read from its ``--log`` as the run goes.

The hook appends one verdict line per call it denied, stopped or warned, and one
error line each time it failed open (``hook/runner.py``). The run reads the new
lines whenever the agent's stream moves: the hook answers before the tool runs,
so by the time the stream shows a call's result the hook's line for that call
is in the file. A line that is not JSON (a write cut short) is skipped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

__all__ = ["HookLog"]


@dataclass
class HookLog:
    """The hook's log file and what was read from it so far."""

    path: str
    denied: int = 0
    stopped: int = 0
    warned: int = 0
    failures: int = 0
    reasons: list[str] = field(default_factory=list)  # distinct fail-open reasons, first first
    _offset: int = 0
    _pending: bytes = b""

    def poll(self) -> list[str]:
        """Read what the hook appended since the last call; the new fail-open reasons."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        self._offset += len(data)
        data = self._pending + data
        lines = data.split(b"\n")
        self._pending = lines.pop()
        new: list[str] = []
        for raw in lines:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict):
                continue
            verdict = line.get("verdict")
            if verdict == "deny":
                self.denied += 1
            elif verdict == "stop":
                self.stopped += 1
            elif verdict == "warn" or (verdict == "pass" and line.get("warnAt") is not None):
                self.warned += 1
            elif verdict == "error":
                self.failures += 1
                reason = str(line.get("error", ""))
                if reason not in self.reasons:
                    self.reasons.append(reason)
                    new.append(reason)
        return new

    @property
    def exists(self) -> bool:
        return os.path.exists(self.path)
