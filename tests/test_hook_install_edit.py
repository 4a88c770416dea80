"""`hook install` edits the settings text: the entry is inserted, every other byte is kept.

Real settings files in a temporary project, the real CLI in a subprocess. Each
file here broke the old parse-and-rewrite install (``1e400`` written back as
``Infinity``, tracebacks on a lone surrogate escape, deep nesting and a
5000-digit integer, duplicate keys silently merged).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import NODE
from test_hook_install import PROGRAM, QUOTED, install

from loop_brake_cli.hook.install import hook_entry

CLAUDE = ".claude/settings.json"


def write_settings(tmp_path: Path, text: str, relpath: str = CLAUDE) -> Path:
    path = tmp_path / "project" / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def inserted(before: str, after: str) -> str:
    """The one piece of text ``after`` has more than ``before``; fails if anything
    else differs."""
    prefix = 0
    while prefix < len(before) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < len(before) - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    assert prefix + suffix == len(before), "the install changed more than one place"
    return after[prefix : len(after) - suffix]


def strict(text: str) -> object:
    def reject(name: str) -> object:
        raise AssertionError(f"{name} written into the settings file")

    def number(literal: str) -> object:
        return int(literal) if len(literal) < 100 else literal

    return json.loads(text, parse_constant=reject, parse_int=number)


def groups(text: str, event: str = "PreToolUse") -> list:
    return strict(text)["hooks"][event]  # type: ignore[index]


EXOTIC = (
    '{\n  "limit": 1e400,\n  "tiny": -0.0e-5000,\n  "big": '
    + "9" * 5000
    + ',\n  "lone": "\\udc00 and \\ud83d\\ude00 \\/ \\u00e9 é",\n'
    + '  "dup": 1,\n  "dup": 2,\n  "z": {"b": 1, "a": [true, false, null]},\n'
    + '  "hooks": {\n    "Stop": [ ],\n    "PreToolUse": [\n      {"matcher": "Bash", '
    + '"hooks": [{"type": "command", "command": "guard.sh"}]}\n    ]\n  }\n}\n'
)


def test_numbers_escapes_duplicates_and_order_survive_byte_for_byte(tmp_path: Path) -> None:
    path = write_settings(tmp_path, EXOTIC)
    result = install(tmp_path, "claude-code", "--project")
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr
    after = path.read_bytes().decode("utf-8")
    piece = inserted(EXOTIC, after)
    assert "Infinity" not in after
    assert piece.startswith(",\n      {")  # appended after the existing matcher group
    entries = groups(after)
    assert entries[0]["matcher"] == "Bash"
    assert entries[1] == hook_entry("claude-code", PROGRAM)
    backups = [p for p in path.parent.iterdir() if ".bak-" in p.name]
    assert len(backups) == 1 and backups[0].read_bytes() == EXOTIC.encode("utf-8")
    again = install(tmp_path, "claude-code", "--project")
    assert again.returncode == 0 and b"already installed" in again.stderr
    assert path.read_bytes().decode("utf-8") == after


@pytest.mark.skipif(NODE is None, reason="node is not on PATH")
def test_the_agent_side_json_parse_still_reads_the_edited_file(tmp_path: Path) -> None:
    """Claude Code and Gemini CLI read settings with JSON.parse: the old rewrite
    (``Infinity``) made it throw; the edited file parses, with the entry in it."""
    path = write_settings(tmp_path, EXOTIC)
    assert install(tmp_path, "claude-code", "--project").returncode == 0
    script = (
        "const s = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));"
        "console.log(JSON.stringify([s.limit, s.dup, s.hooks.PreToolUse.length,"
        " s.hooks.PreToolUse[1].hooks[0].command]))"
    )
    shown = subprocess.run(
        [str(NODE), "-e", script, str(path)], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == [None, 2, 2, f"{QUOTED} hook --agent claude-code"]


LAYOUTS = {
    "no hooks key, 4 spaces": '{\n    "model": "x",\n    "env": {"A": "1"}\n}\n',
    "hooks without the event, tabs, CRLF": '{\r\n\t"hooks": {\r\n\t\t"Stop": []\r\n\t}\r\n}',
    "empty event list": '{\n  "hooks": {\n    "PreToolUse": []\n  }\n}\n',
    "empty hooks object": '{"a": 1, "hooks": {}}',
    "one line, no spaces": '{"a":1,"b":[1,2]}',
    "empty object": "{}",
    "trailing blank lines": '{"a": 1}\n\n\n',
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_the_entry_is_inserted_in_the_files_own_layout(tmp_path: Path, name: str) -> None:
    before = LAYOUTS[name]
    path = write_settings(tmp_path, before)
    result = install(tmp_path, "claude-code", "--project")
    assert result.returncode == 0, result.stderr
    after = path.read_bytes().decode("utf-8")
    assert groups(after)[-1] == hook_entry("claude-code", PROGRAM)
    document = strict(after)
    for key, value in strict(before).items():  # type: ignore[union-attr]
        if key != "hooks":
            assert document[key] == value  # type: ignore[index]
    if name == "empty event list" or name == "empty hooks object" or name == "empty object":
        return  # the blank inside an empty container is replaced
    piece = inserted(before, after)
    if "\r\n" in before:
        assert "\n" not in piece.replace("\r\n", "")
        assert "\r\n\t\t\t" in piece  # one tab deeper than "Stop"
    if name == "no hooks key, 4 spaces":
        assert piece.startswith(',\n    "hooks": {\n        "PreToolUse"')
    if name == "one line, no spaces":
        assert "\n" not in piece and ": " not in piece


def test_codex_and_gemini_get_their_own_event_and_entry(tmp_path: Path) -> None:
    for agent, relpath, event in (
        ("codex", ".codex/hooks.json", "PreToolUse"),
        ("gemini", ".gemini/settings.json", "BeforeTool"),
    ):
        before = '{"description": "x", "n": 1e400}'
        path = write_settings(tmp_path, before, relpath)
        assert install(tmp_path, agent, "--project").returncode == 0
        after = path.read_text()
        inserted(before, after)
        assert groups(after, event) == [hook_entry(agent, PROGRAM)]


REFUSED = {
    "nested 100k deep": "[" * 100_000 + "]" * 100_000,
    "deep inside an object": '{"a": ' + "[" * 600 + "]" * 600 + "}",
    "two hooks keys": '{"hooks": {}, "hooks": {"Stop": []}}',
    "two event keys": '{"hooks": {"PreToolUse": [], "PreToolUse": []}}',
    "NaN": '{"a": NaN}',
    "a trailing comma": '{"a": 1,}',
    "a byte order mark": '\ufeff{"a": 1}',
    "a raw control character": '{"a": "x\ty"}',
    "two documents": "{} {}",
    "not UTF-8": None,
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_cannot_be_edited_exactly_is_refused_untouched(tmp_path: Path, name: str) -> None:
    text = REFUSED[name]
    path = tmp_path / "project" / CLAUDE
    path.parent.mkdir(parents=True)
    data = b'{"a": "\xff"}' if text is None else text.encode("utf-8")
    path.write_bytes(data)
    result = install(tmp_path, "claude-code", "--project")
    assert result.returncode == 3, result.stderr
    assert b"Traceback" not in result.stderr
    (line,) = result.stderr.decode().splitlines()
    assert "left untouched" in line
    assert path.read_bytes() == data
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]
    if name.startswith("two ") and "keys" in name:
        assert "keys" in line
    if "deep" in name:
        assert "nested deeper" in line


def test_a_duplicate_key_elsewhere_is_kept_and_the_last_command_counts(tmp_path: Path) -> None:
    """Duplicated keys inside a matcher group are the agent's business: kept as
    written; the one JSON.parse keeps (the last) decides "already installed"."""
    before = (
        '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command",'
        ' "command": "loop-brake hook --agent claude-code", "command": "other.sh"}]}]}}'
    )
    path = write_settings(tmp_path, before)
    assert install(tmp_path, "claude-code", "--project").returncode == 0
    after = path.read_text()
    inserted(before, after)
    assert len(groups(after)) == 2


def test_dry_run_prints_the_edited_text(tmp_path: Path) -> None:
    path = write_settings(tmp_path, EXOTIC)
    result = install(tmp_path, "claude-code", "--project", "--dry-run")
    assert result.returncode == 0
    inserted(EXOTIC, result.stdout.decode("utf-8"))
    assert path.read_text() == EXOTIC
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]
