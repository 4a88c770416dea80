"""The `events` format on its own fixture: aliases, a BOM, CRLF, null ids and a duplicate."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli

FIXTURE = ROOT / "tests" / "fixtures" / "events" / "synthetic--aliases-bom-crlf.jsonl"


def test_aliases_bom_crlf_and_duplicates() -> None:
    result = run_cli("filter", str(FIXTURE))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["line"], r["sessionId"], r["count"], r.get("duplicate", False)) for r in rows] == [
        (1, "s1", 1, False),  # BOM skipped; toolName/arguments/session_id/call_id aliases
        (2, "a1", 1, False),  # agent_id is the session when there is no session id
        (4, "s1", 1, True),  # the blank line 3 is skipped; the same call id is a duplicate
        (5, "", 1, False),  # an empty session id is a session of its own; null args = {}
    ]
    assert rows[1]["callId"] == 7  # an integer id is echoed as given
    assert "callId" not in rows[3]  # a null id counts as absent
    assert rows[0]["hashPrefix"] == rows[1]["hashPrefix"] != rows[3]["hashPrefix"]
