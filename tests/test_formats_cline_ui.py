"""The cline-ui adapter: a ui_messages.json with no task history beside it, its usage
and the tools its panel recorded; canary.

The fixture is written in the shape of a real Cline UI log (tests/fixtures/SOURCES.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from adapter_helpers import CANARY, FIXTURES, SAMPLES, assert_canary_hidden, calls, read
from conftest import run_cli
from test_formats_cline import figures, hand_sum, ours

from loop_brake_cli.core.records import BadRecord, Usage, UserTurn
from loop_brake_cli.formats import get, parse_records
from loop_brake_cli.readers.reader import open_source

TASK = FIXTURES / "cline-ui" / "synthetic--1767644899093"
UI_LOG = TASK / "ui_messages.json"
SAMPLE = SAMPLES / "cline-ui.json"
CLINE_TASK = FIXTURES / "cline" / "synthetic--1765000000000"
ROO_TASK = FIXTURES / "roo-code" / "synthetic--019cadc0-7c00-7000-8000-000000000001"
LINT = {"command": "npm run lint"}


def test_own_sample_runs_the_build_three_times() -> None:
    fmt, records = read(SAMPLE)
    assert fmt == "cline-ui"
    build = {"command": "npm run build"}
    assert [(c.tool, c.args, c.call_id) for c in calls(records)][1:] == [
        ("command", build, None),
        ("command", build, None),
        ("command", build, None),
    ]
    assert calls(records)[0].tool == "readFile"
    result = run_cli("replay", "--expect-deny", str(SAMPLE))
    assert result.returncode == 0, result.stderr


def test_a_lone_ui_log_its_calls_under_the_ui_s_names() -> None:
    fmt, records = read(UI_LOG)
    assert fmt == "cline-ui"
    assert [(c.tool, c.path) for c in calls(records)] == [
        ("command", "$[4]"),  # asked, its REQ_APP mark dropped
        ("readFile", "$[7]"),
        ("editedExistingFile", "$[9]"),  # Cline's replace_in_file, as the panel shows it
        ("command", "$[11]"),
        ("command", "$[13]"),
        ("explain_rule", "$[15]"),  # use_mcp_server: its toolName
        ("followup", "$[17]"),
    ]  # the command still being written at $[20] (partial) is no call
    assert calls(records)[0].args == calls(records)[3].args == LINT
    assert {c.session for c in calls(records)} == {TASK.name}
    assert {c.call_id for c in calls(records)} == {None}


def test_its_usage_is_each_request_s() -> None:
    _, records = read(UI_LOG)
    model = "x-ai/grok-code-fast-1"
    assert figures(records)[:2] == [
        # the documented misreading: a provider that reports tokensIn without the cache,
        # with a cache smaller than it, is read as including it (11495 - 512)
        (10983, 16, 512, 0, model),
        (349, 60, 12352, 0, model),
    ]
    assert ours(records) == hand_sum(UI_LOG)
    assert [u.path for u in records if isinstance(u, Usage)][:2] == ["$[2]", "$[6]"]


def test_roo_s_total_input_is_read_less_its_cache() -> None:
    """Roo (apiProtocol) writes tokensIn with the cache in it: the input is the rest."""
    _, records = read(ROO_TASK / "ui_messages.json", "cline-ui")
    assert figures(records)[0] == (10, 85, 0, 14280, None)
    assert ours(records) == hand_sum(ROO_TASK / "ui_messages.json")
    assert [c.tool for c in calls(records)] == [
        "command", "readFile", "get_issue", "appliedDiff", "command", "command"
    ]  # fmt: skip


def test_the_ui_records_the_tools_run_not_the_model_s_calls() -> None:
    """The same Cline task read both ways: the names differ (the panel's), the count can
    too (Cline runs one tool a message), the usage is the same."""
    _, history = read(CLINE_TASK / "api_conversation_history.json")
    _, ui = read(CLINE_TASK / "ui_messages.json", "cline-ui")
    assert [c.tool for c in calls(history)] == [
        "search_files",
        "replace_in_file",
        "attempt_completion",
    ]
    assert [c.tool for c in calls(ui)] == ["searchFiles", "editedExistingFile", "completion_result"]
    assert figures(history) == figures(ui)


def test_user_turns_are_the_task_and_the_user_s_feedback() -> None:
    source = open_source(str(UI_LOG))
    try:
        records = list(parse_records(get("cline-ui"), source, user_turns=True))
    finally:
        source.close()
    assert [r.path for r in records if isinstance(r, UserTurn)] == ["$[0]", "$[18]"]


def test_a_broken_record_is_located(tmp_path: Path) -> None:
    log = json.loads(UI_LOG.read_text())
    log[2]["text"] = f"{{not json {CANARY}"
    log[7]["text"] = f"[{CANARY}]"
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(log))
    _, records = read(path)
    bad = [(r.message, r.path) for r in records if isinstance(r, BadRecord)]
    assert bad == [
        ("api_req_started text is not a JSON object", "$[2].text"),
        ("tool text is not a JSON object", "$[7]"),
    ]
    assert len(figures(records)) == 8  # the broken request still a turn, its cost unknown
    result = run_cli("replay", str(path))
    assert CANARY.encode() not in result.stdout + result.stderr


def test_a_lone_ui_log_in_a_directory_is_read(tmp_path: Path) -> None:
    shutil.copytree(TASK, tmp_path / "tasks" / TASK.name)
    result = run_cli("replay", "--json", str(tmp_path / "tasks"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [(Path(f["file"]).name, f["format"], f["calls"]) for f in doc["files"]] == [
        ("ui_messages.json", "cline-ui", 7)
    ]
    assert doc["usage"]["turns"] == 8


def test_no_argument_in_any_output(tmp_path: Path) -> None:
    log = json.loads(SAMPLE.read_text())
    for message in log:
        if message.get("ask") == "command":
            message["text"] = f"curl -H 'Authorization: {CANARY}' x"
    path = tmp_path / "secret.json"
    path.write_text(json.dumps(log))
    assert_canary_hidden("cline-ui", path)
